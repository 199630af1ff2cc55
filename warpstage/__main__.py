"""The ``warpstage`` command (also ``python -m warpstage``).

  warpstage demo          compile and run the examples (GPU if present, else the simulator)
  warpstage info          versions, target, ptxas found
  warpstage cache info    the disk cache's folder, number of entries and size
  warpstage cache clear   remove every entry of the disk cache
  warpstage tune show     the autotuner's stored winners (ws.autotune; docs/autotune.md)
  warpstage tune clear    remove them: the next tuned call tunes again
  warpstage compile MODULE[:FUNCTION] [--jobs N]
                          pre-build the specializations FUNCTION() lists (default
                          warpstage_specializations) into the disk cache, in N processes;
                          MODULE is a dotted module name or a path to a .py file
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time

__all__ = ["main"]


def _load_example(name: str):
    """Import examples/<name>.py from the source tree (the demo ships with the repository)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = os.path.join(root, "examples", f"{name}.py")
    if not os.path.exists(path):
        raise SystemExit(f"warpstage demo: examples/{name}.py not found next to the package "
                         f"({path}); run the demo from a source checkout")
    spec = importlib.util.spec_from_file_location(f"warpstage_example_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _how_compiled(before: dict, after: dict, seconds: float) -> str:
    """'compiled in N ms', or which cache it came from (a hit takes ~0 ms: say so)."""
    if after["trace"] > before["trace"]:
        return f"compiled in {1e3 * seconds:.0f} ms"
    if after["disk_hit"] > before["disk_hit"]:
        return f"disk cache hit ({1e3 * seconds:.1f} ms; `warpstage cache clear` to rebuild)"
    return "in-memory cache hit"


def _demo_one(ws, name, kern, args, run) -> bool:
    print(f"\n=== {name} ===")
    ws.explain(kern, *args)
    from warpstage.jit.compiled import STAGE_COUNTS
    before = dict(STAGE_COUNTS)
    t0 = time.perf_counter()
    ck = ws.compile(kern, *args)
    t1 = time.perf_counter()
    print(f"PTX: {len(ck.ptx)} bytes; cubin: "
          + (f"{len(ck.cubin)} bytes, {ck.registers} registers" if ck.cubin else
             "not built (no ptxas found; the driver would JIT the PTX)")
          + f"; {_how_compiled(before, STAGE_COUNTS, t1 - t0)}")
    target = ws.get_target()
    if target == "cuda":
        t0 = time.perf_counter()
        err = run()
        print(f"ran on the GPU in {1e3 * (time.perf_counter() - t0):.1f} ms (first call, "
              f"includes torch's CUDA start-up and the module load)")
    else:
        print("no GPU here: compiled to cubin only; running the same IR in the CPU simulator")
        err = run()
    ok = err < 1e-3
    print(f"max error vs reference: {err:.3g} -> {'OK' if ok else 'MISMATCH'}")
    return ok


def _attention_note(ws, fa) -> str:
    """Why the attention demo's simulator run used another dtype than the BFloat16 kernel it
    explained ('' when it did not): bf16 inputs need torch (or numpy with ml_dtypes); without
    them the example falls back to numpy float16."""
    if ws.get_target() == "cuda":
        return ""
    q = fa.random_qkv(1, 1, 1, 64)[0]
    ran = str(getattr(q, "dtype", "bfloat16")).replace("torch.", "")
    if ran == "bfloat16":
        return ""
    return (f"note: the table above is the BFloat16 specialization; the simulator run used {ran} "
            "inputs because numpy has no bfloat16 here (install torch or ml_dtypes for bf16), "
            f"so it ran the same kernel specialized for {ran}")


def demo() -> int:
    import warpstage as ws
    print(f"warpstage {ws.__version__}; target: {ws.get_target()}")
    vadd = _load_example("vector_add")
    softmax = _load_example("softmax")
    T = ws.Tensor
    ok = _demo_one(ws, "vector_add", vadd.vector_add,
                   (T[ws.Float32, 1], T[ws.Float32, 1], T[ws.Float32, 1], ws.Int32),
                   lambda: vadd.main(1000))
    ok &= _demo_one(ws, "softmax", softmax.softmax,
                    (T[ws.Float32, 2], T[ws.Float32, 2], ws.Int32, ws.Int32),
                    lambda: softmax.main(37, 50))
    print("\n=== flash_attention (warp-specialized: producer warpgroup + consumer warps) ===")
    fa = _load_example("flash_attention")
    attention_ok = fa.demo()
    note = _attention_note(ws, fa)
    if note:
        print(note)
    print("attention: " + ("OK" if attention_ok else "MISMATCH"))
    ok &= attention_ok
    print("\ndemo " + ("passed" if ok else "FAILED"))
    return 0 if ok else 1


def info() -> int:
    import warpstage as ws
    from warpstage.backend import find_ptxas, llvm_version
    print(f"warpstage {ws.__version__}")
    print(llvm_version())                               # only backend/ imports llvmlite
    print(f"ptxas: {find_ptxas(ws.CompileOptions()) or 'not found'}")
    print(f"target: {ws.get_target()}")
    return 0


def cache_cmd(action: str) -> int:
    from warpstage.jit.cache import files as cache
    if cache.path() is None:
        print("the disk cache is off (WARPSTAGE_CACHE_DIR is set but empty)")
        return 0
    if action == "clear":
        try:
            n = cache.clear()
        except OSError as e:
            print(f"warpstage cache clear: {e}.\nFix: check the folder's permissions, or remove "
                  "the files yourself.", file=sys.stderr)
            return 1
        print(f"removed {n} entr{'y' if n == 1 else 'ies'} from {cache.path()}")
        return 0
    i = cache.info()
    print(f"path: {i['path']}")
    print(f"entries: {i['entries']}")
    print(f"size: {i['bytes']} bytes ({i['bytes'] / 2**20:.1f} MiB)")
    print(f"temporary files: {i['temp_files']} (left by writers; removed once older than "
          f"{cache.TEMP_MAX_AGE / 3600:g} h)")
    return 0


def tune_cmd(action: str) -> int:
    from warpstage.jit.cache import files as cache
    from warpstage.tune import records
    if cache.path() is None:
        print("the disk cache is off (WARPSTAGE_CACHE_DIR is set but empty): no tuning records")
        return 0
    if action == "clear":
        n = records.clear()
        print(f"removed {n} tuning record{'' if n == 1 else 's'} from {cache.path()}")
        return 0
    found = records.all_records()
    print(f"{len(found)} tuning record{'' if len(found) == 1 else 's'} in {cache.path()}")
    for r in found:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(r.get("stored", 0)))
        print(f"  {r.get('name')} on {r.get('device')} ({when}), key {r.get('key')}")
        print(f"    best {r.get('best')}: {r.get('best_ms', 0):.4f} ms; {r.get('timed')} of "
              f"{r.get('candidates')} timed in {r.get('wall_s', 0):.1f} s (compile "
              f"{r.get('compile_s', 0):.1f} s, timing {r.get('timing_s', 0):.1f} s), "
              f"{len(r.get('dropped', []))} dropped")
    return 0


def _requests(spec: str):
    """The requests (warpstage/jit/precompile.py) that MODULE[:FUNCTION] returns, and the
    position (file, line) of FUNCTION, which errors about them name."""
    module_name, _, function = spec.partition(":")
    function = function or "warpstage_specializations"
    if module_name.endswith(".py"):
        path = os.path.abspath(module_name)
        if not os.path.exists(path):
            raise SystemExit(f"warpstage compile: {module_name} does not exist")
        folder, module_name = os.path.split(path[:-3])
        sys.path.insert(0, folder)          # the workers import it by this name too
    else:
        sys.path.insert(0, os.getcwd())
    import importlib
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise SystemExit(f"warpstage compile: cannot import {module_name!r} ({e}). Fix: pass a "
                         "module importable from here, or a path to a .py file") from None
    except Exception as e:
        raise SystemExit(_user_mistake(e, f"importing {module_name}")) from None
    fn = getattr(module, function, None)
    if not callable(fn):
        raise SystemExit(f"warpstage compile: {module_name} has no function {function}() "
                         f"returning the specializations to build, e.g.\n"
                         f"    def {function}():\n"
                         f"        return [(my_kernel, (ws.Tensor[ws.Float32, 1], ws.Int32), "
                         f"{{'block': 256}})]")
    code = getattr(fn, "__code__", None)
    where = None if code is None else (code.co_filename, code.co_firstlineno)
    try:
        requests = fn()
    except Exception as e:
        raise SystemExit(_user_mistake(e, f"running {module_name}.{function}()")) from None
    if not isinstance(requests, (list, tuple)):
        at = f'\n  File "{where[0]}", line {where[1]}' if where else ""
        raise SystemExit(f"warpstage compile: {module_name}.{function}() returned "
                         f"{repr(requests)[:60]} (of type {type(requests).__name__}); expected "
                         f"a list of (kernel, args) or (kernel, args, kwargs).{at}\nFix: return "
                         f"the requests, e.g. return [(my_kernel, (ws.Tensor[ws.Float32, 1], "
                         f"ws.Int32), {{'block': 256}})]")
    return requests, where


def _user_mistake(e: Exception, doing: str) -> str:
    """The one-message report of an error that the user's code or request caused: a
    WarpstageError's own message (what, where, expected, Fix), or an exception raised in the
    user's code with its innermost line of that code. Re-raises ``e`` with its whole traceback
    when it is neither (an error inside warpstage: a bug to report)."""
    import traceback
    from warpstage.errors import WarpstageError
    from warpstage.jit.tracebacks import _package_frame, _user_error
    tb, innermost = e.__traceback__, None
    while tb is not None:
        innermost, tb = tb, tb.tb_next
    if not isinstance(e, WarpstageError) and (innermost is None or
                                              _package_frame(innermost.tb_frame)):
        raise e
    _user_error(e)
    if isinstance(e, WarpstageError):
        return f"warpstage compile: {e}"
    frames = [f for f in traceback.extract_tb(e.__traceback__) if not f.filename.startswith("<")]
    where = (f'\n  File "{frames[-1].filename}", line {frames[-1].lineno}\n    '
             f"{frames[-1].line}" if frames else "")
    return f"warpstage compile: {type(e).__name__} while {doing}: {e}{where}"


def compile_cmd(spec: str, jobs: int) -> int:
    from warpstage.jit.precompile import compile_many, normalize_requests
    from warpstage.jit.cache import files as cache
    from warpstage.jit.tracebacks import attributed_to
    requests, where = _requests(spec)
    t0 = time.perf_counter()

    def report(name, seconds, error):
        print(f"  {name}: {'built' if error is None else 'failed (' + error + ')'} in "
              f"{seconds:.2f} s", flush=True)
    with attributed_to(where):          # errors with no user frame name the spec function
        try:
            requests = normalize_requests(requests)
            print(f"building {len(requests)} specialization(s) with {jobs} process(es) into "
                  f"{cache.path()}", flush=True)
            built = compile_many(requests, jobs, report)
        except Exception as e:
            raise SystemExit(_user_mistake(e, f"building the specializations of {spec}")) \
                from None
    for ck in built:
        cubin = f"{len(ck.cubin)} bytes cubin" if ck.cubin else "PTX only (no ptxas)"
        print(f"  {ck.name}: {cubin}, {ck.registers} registers")
    print(f"done in {time.perf_counter() - t0:.2f} s")
    return 0


def _jobs(text: str) -> int:
    """``--jobs``: an int >= 1 (argparse reports anything else as a usage error)."""
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a number of worker processes >= 1, got "
                                         f"{text!r} (e.g. --jobs {os.cpu_count() or 1})")
    return n


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="warpstage", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    from . import __version__
    p.add_argument("--version", action="version", version=f"warpstage {__version__}")
    sub = p.add_subparsers(dest="cmd")
    sub.add_parser("demo", help="compile and run the examples")
    sub.add_parser("info", help="versions, target and toolchain")
    c = sub.add_parser("cache", help="the disk cache of compiled kernels (WARPSTAGE_CACHE_DIR)")
    c.add_argument("action", choices=["info", "clear"], help="info: folder, entries, size; "
                   "clear: remove every entry")
    t = sub.add_parser("tune", help="the autotuner's winners (ws.autotune) in the disk cache")
    t.add_argument("action", choices=["show", "clear"], help="show: every stored winner; "
                   "clear: remove them (the next call tunes again)")
    pc = sub.add_parser("compile", help="pre-build specializations into the disk cache")
    pc.add_argument("spec", metavar="MODULE[:FUNCTION]",
                    help="a module or .py file and the function listing the specializations "
                    "(default warpstage_specializations): [(kernel, args[, kwargs]), ...]")
    pc.add_argument("--jobs", "-j", type=_jobs, default=os.cpu_count() or 1,
                    help="worker processes (default: the CPU count)")
    args = p.parse_args(argv)
    if args.cmd == "demo":
        return demo()
    if args.cmd == "info":
        return info()
    if args.cmd == "cache":
        return cache_cmd(args.action)
    if args.cmd == "tune":
        return tune_cmd(args.action)
    if args.cmd == "compile":
        return compile_cmd(args.spec, args.jobs)
    p.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
