"""Compile-time figures: `import warpstage`, per-stage cold compile of each example kernel, and
the cost of a cache-hit call; then first calls in fresh processes, cold and from the disk cache
(:func:`fresh_process_rows`), and several processes sharing one empty disk cache
(:func:`shared_cache_rows`).

    PYTHONPATH=. python benchmarks/compile_time.py [main] [attention] [fresh [reference]] [shared]
                                                   [profile-hit]

Stages: trace (Python -> IR, passes included), llvm_load (loading LLVM and the lowering's
modules: the first compile of a process), lower (IR -> LLVM IR), ptx (LLVM O3 + NVPTX), ptxas
(PTX -> cubin), load (cuModuleLoadData, GPU only). "cold" is the first compile of the kernel
in a fresh process.
The cache-hit figure is the median per call over many calls with unchanged argument types: on a
GPU a full launch (classify + lookup + pack + cuLaunchKernel), without one the lookup alone.
"""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def import_time(runs: int = 5) -> float:
    code = "import time; t=time.perf_counter(); import warpstage; print(time.perf_counter()-t)"
    env = dict(os.environ, PYTHONPATH=ROOT)
    times = [float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                  env=env, check=True).stdout) for _ in range(runs)]
    return statistics.median(times)


def load(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "examples", f"{name}.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main():
    sys.path.insert(0, ROOT)
    print(f"import warpstage: {1e3 * import_time():.0f} ms (median of 5 fresh processes)")
    import numpy as np
    import warpstage as ws
    target = ws.get_target()
    gpu = target == "cuda"
    if gpu:
        import torch
    vadd, softmax = load("vector_add"), load("softmax")
    cases = [
        ("vector_add", vadd.vector_add, 1000,
         lambda: (np.ones(1000, np.float32),) * 3 + (1000,)),
        ("softmax", softmax.softmax, 64,
         lambda: (np.ones((64, 32), np.float32), np.ones((64, 32), np.float32), 64, 32)),
    ]
    print(f"target: {target}")
    print(f"{'kernel':12} {'trace':>8} {'lower':>8} {'ptx':>8} {'ptxas':>8} {'load':>8} {'total':>8}  cache-hit call")
    for name, kern, n, make in cases:
        args = make()
        if gpu:
            args = tuple(torch.from_numpy(a).cuda() if isinstance(a, np.ndarray) else a for a in args)
        t0 = time.perf_counter()
        ck, _ = kern.specialize(kern._bind(args, {}), (128, 1, 1), target)
        ck.cubin
        if gpu:
            ck.cuda_launcher()
        total = time.perf_counter() - t0
        tm = ck.timings
        cols = [tm.get(s) for s in ("trace", "lower", "ptx", "ptxas", "load")]
        if gpu:
            launch = kern[(n + 127) // 128, 128]
            for _ in range(100):
                launch(*args)
            torch.cuda.synchronize()
            reps = 2000
            samples = []
            for _ in range(5):
                t = time.perf_counter()
                for _ in range(reps):
                    launch(*args)
                samples.append((time.perf_counter() - t) / reps)
            torch.cuda.synchronize()
            hit = statistics.median(samples)
            hit_text = f"{1e6 * hit:.1f} us (full launch)"
        else:
            values = kern._bind(args, {})
            reps = 2000
            t = time.perf_counter()
            for _ in range(reps):
                kern.specialize(values, (128, 1, 1), target)
            hit = (time.perf_counter() - t) / reps
            hit_text = f"{1e6 * hit:.1f} us (lookup only; no GPU)"
        fmt = lambda v: f"{1e3 * v:7.1f}ms" if v is not None else "     n/a"
        print(f"{name:12} " + " ".join(fmt(c) for c in cols) + f" {fmt(total)}  {hit_text}")


def attention_compile_time():
    """Cold compile of the FlashAttention kernel (D=64, bf16) from types, stage by stage."""
    import warpstage as ws
    from warpstage.ops.attention import policy_for
    from warpstage.ops.attention_kernel import flash_attention_kernel
    fa = policy_for(64, "BFloat16", False, 0.125, "cp.async")
    T = ws.Tensor[ws.BFloat16, 4]
    t0 = time.perf_counter()
    ck = ws.compile(flash_attention_kernel, fa, T, T, T, T, block=fa.threads)
    total = time.perf_counter() - t0
    tm = ck.timings
    print("flash_attention (D=64, bf16) cold compile: " + ", ".join(
        f"{s} {1e3 * tm[s]:.0f} ms" for s in ("trace", "lower", "ptx", "ptxas") if s in tm)
        + f"; total {1e3 * total:.0f} ms; {ck.registers} registers")


FRESH = r"""
import json, os, sys, time
t0 = time.perf_counter()
import warpstage as ws
from warpstage.ops import attention
t1 = time.perf_counter()
if os.environ.get("WS_BENCH_REFERENCE"):     # the compile without CSE and packing reuse
    import importlib
    pp = importlib.import_module("warpstage.passes.pipeline")
    pp.PIPELINE = tuple(p for p in pp.PIPELINE if p.__name__ != "common_subexpressions")
    LC = importlib.import_module("warpstage.backend.context").LoweringContext
    LC.whole_of = lambda self, elements: None
    LC.word_of = lambda self, vector: None
    LC.reuse = lambda self, key, make: make()
what, head_dim = sys.argv[1], int(sys.argv[2])
what, *given = what.split("+")       # "wgmma+causal=True+shared_boundary=True": policy fields
fields = {}
for item in given:
    name, _, value = item.partition("=")
    fields[name] = {"True": True, "False": False}.get(value, value)
causal = fields.pop("causal", False)
barrier = sys.argv[3] if len(sys.argv) > 3 else None
gpu = ws.get_target() == "cuda"
sync = lambda: None
driver_s = 0.0
if gpu:
    import torch
    sync = torch.cuda.synchronize
    torch.zeros(1, device="cuda")               # CUDA context and torch's CUDA init: not ours
    sync()
    td = time.perf_counter()
    try:                                        # cuda.bindings' import, once per process
        from warpstage.runtime import driver
        driver.context()
        driver_s = time.perf_counter() - td
    except Exception:                           # the driver module changed: left in the call
        driver_s = float("nan")
if what.startswith("trivial"):
    @ws.kernel
    def trivial(n: ws.Int32):
        pass

    @ws.kernel
    def trivial_b(n: ws.Int32):             # another key: cold where the cache's facts exist
        pass
    kern = trivial = trivial if what == "trivial" else trivial_b
    run = (lambda: trivial[1, 32](7)) if gpu else (lambda: ws.compile(trivial, ws.Int32).cubin)
elif gpu and given:         # policy fields: the op's launch of that policy (both rows of an A/B)
    kern = attention.flash_attention_wgmma_kernel
    q, k, v = (torch.randn(1, 8, 1024, head_dim, device="cuda", dtype=torch.bfloat16)
               for _ in range(3))
    o = torch.empty_like(q)
    fa = attention.wgmma_policy_for(head_dim, "BFloat16", causal, head_dim ** -0.5, short=True,
                                    overrides=tuple(fields.items()))
    sync()
    run = lambda: attention.launch_wgmma(fa, q, k, v, o)
elif gpu:                   # "wgmma": the default path, what ws.ops.flash_attention runs
    kern = (attention.flash_attention_wgmma_kernel if what == "wgmma"
            else attention.flash_attention_kernel)
    q, k, v = (torch.randn(1, 8, 1024, head_dim, device="cuda", dtype=torch.bfloat16)
               for _ in range(3))
    sync()
    mma = "wgmma" if what == "wgmma" else "mma.sync"
    run = lambda: attention.flash_attention(q, k, v, mma=mma)
elif what == "wgmma":       # the policy that call picks (S = 1024: the short table)
    import numpy as np
    import ml_dtypes
    kern = attention.flash_attention_wgmma_kernel
    fa = attention.wgmma_policy_for(head_dim, "BFloat16", causal, head_dim ** -0.5, short=True,
                                    overrides=tuple(fields.items()))
    x = np.zeros((1, 8, 1024, head_dim), ml_dtypes.bfloat16)
    q_box, kv_box = fa.descriptor_boxes()
    TD = ws.tma.TensorDescriptor
    args = (fa, TD(x, q_box), TD(x, kv_box), TD(x, kv_box), ws.Tensor[ws.BFloat16, 4],
            ws.Int32, None, TD(x, fa.o_box, swizzle=fa.out.swizzle) if fa.tma_store else None,
            ws.Tensor[ws.Int32, 1] if fa.dynamic_tiles else None)
    run = lambda: ws.compile(kern, *args, block=(fa.threads, 1, 1)).cubin
else:
    kern = attention.flash_attention_kernel
    fa = attention.policy_for(head_dim, "BFloat16", False, head_dim ** -0.5, "cp.async")
    T = ws.Tensor[ws.BFloat16, 4]
    run = lambda: ws.compile(kern, fa, T, T, T, T, block=fa.threads).cubin
if barrier:                                     # shared-cache rows: every rank starts at once
    open(f"{barrier}.ready.{os.getpid()}", "w").close()
    while not os.path.exists(barrier):
        time.sleep(0.001)
t2, c2 = time.perf_counter(), time.process_time()
if os.environ.get("WS_BENCH_PROFILE"):         # profile_hit_rows: the first call under cProfile
    import cProfile
    prof = cProfile.Profile()
    prof.runcall(run); sync()
    prof.dump_stats(os.environ["WS_BENCH_PROFILE"])
else:
    run(); sync()
t3, c3 = time.perf_counter(), time.process_time()
run(); sync()
t4 = time.perf_counter()
later = []              # the launch itself: the C call path's stub compiles beside the 2nd call
for _ in range(5):
    t = time.perf_counter(); run(); sync(); later.append(time.perf_counter() - t)
stages = {}
for ck in kern._cache.values():
    for name, seconds in ck.timings.items():
        stages[name] = stages.get(name, 0.0) + seconds
sizes = {}
for ck in kern._cache.values():
    if ck.module is not None:
        sizes["ops"] = sum(1 for f in ck.module.functions for top in f.body.block.ops
                           for _ in top.walk())
        sizes["llvm_lines"] = ck.llvm_ir.count("\n")
print(json.dumps({"import": t1 - t0, "driver": driver_s, "first": t3 - t2, "first_cpu": c3 - c2,
                  "second": t4 - t3,
                  "launch": min(later), "stages": stages, "traced": kern.trace_count, "gpu": gpu,
                  "sizes": sizes}))
"""


def _fresh(script, env, what, dim, barrier=None):
    args = [sys.executable, script, what, str(dim)] + ([barrier] if barrier else [])
    return subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def _result(proc):
    out, err = proc.communicate()
    if proc.returncode:
        return None, (err.strip().splitlines() or ["?"])[-1]
    return json.loads(out.strip().splitlines()[-1]), None


def _row(label, r):
    stages = ", ".join(f"{k} {1e3 * v:.1f}" for k, v in r["stages"].items())
    sizes = r.get("sizes") or {}
    if sizes:
        stages += f"; {sizes['ops']} ops after the passes, {sizes['llvm_lines']} LLVM IR lines"
    launch = r.get("launch", r["second"])
    staged = sum(v for k, v in r["stages"].items())
    return (f"  {label:34} {1e3 * r['import']:6.0f} | {1e3 * r['driver']:6.1f} | "
            f"{1e3 * r['first']:8.1f} | {1e3 * r.get('first_cpu', 0.0):6.1f} | "
            f"{1e3 * r['second']:6.2f} | {1e3 * launch:6.2f} | "
            f"{1e3 * (r['first'] - launch):8.1f} | {1e3 * (r['first'] - launch - staged):7.1f} | "
            f"traced {r['traced']}: {stages}")


def fresh_process_rows(reference: bool = False) -> None:
    """First calls in fresh processes: FlashAttention D=64 and D=128 (mma.sync, bf16, (1, 8,
    1024, D); on the GPU ``ws.ops.flash_attention``, else ``ws.compile`` of its kernel) with an
    empty disk cache ('cold') and then with the cache it filled ('disk hit'); the same for the
    wgmma kernel (``mma='wgmma'``, what ``ws.ops.flash_attention`` runs by default on large
    problems: its policy for S = 1024; 'wgmma (default)' rows, in a cache of their own that
    starts with the facts the first row stored, so that the mma.sync rows' code is not in
    it); a trivial kernel
    cold, first in an empty cache folder (the machine's facts of the key — source digest, LLVM
    and ptxas versions — are computed: libLLVM loads and ``ptxas --version`` runs before the
    trace) and last, as another kernel, with the facts stored (what a new kernel costs).
    'first call' is the call's wall time (launch and kernel included, synchronized); 'launch'
    is the fastest of five later calls (memory-cache hits; not the second call, beside which
    the C call path's launch stub compiles: llvmlite's import then holds the GIL), 'beyond the
    launch' subtracts it, and 'not in a stage' also subtracts the stages' sum: the first call's
    time no stage timer saw. 'driver' (GPU only) is
    warpstage's one-time driver set-up (importing cuda.bindings, the primary context), timed
    before the first call and not part of it. Stages: trace (passes included), llvm_load, lower,
    ptx, ptxas, load (cuModuleLoadData); for a disk hit disk_key, disk_read, disk (check +
    unpack).
    'rewrite kept': a cold compile whose cache holds only the facts, among them the rewritten
    kernel code an earlier process stored (jit/cache/code_store.py), as after a source edit
    elsewhere in warpstage's users' program or a new specialization in a new process.
    ``reference``: after each FlashAttention cold row, the same compile without the CSE pass
    and the backend's packing reuse (docs/compile-time.md), in its own empty cache folder
    (both print the same PTX: tests/ops/test_attention_ptx_stable.py)."""
    print("first call in a fresh process (ms): import | driver | first call | its CPU (this "
          "process' threads) | second call | launch | beyond the launch | not in a stage | "
          "stages")
    with tempfile.TemporaryDirectory() as folder:
        env = dict(os.environ, PYTHONPATH=ROOT, WARPSTAGE_CACHE_DIR=os.path.join(folder, "cache"))
        script = os.path.join(folder, "first_call.py")     # a file: kernels need their source
        with open(script, "w") as f:
            f.write(FRESH)
        rows = [("trivial", 0, "trivial kernel, cold"),
                ("trivial", 0, "trivial kernel, disk hit"),
                ("attention", 64, "flash_attention D=64, cold"),
                ("attention", 64, "flash_attention D=64, disk hit"),
                ("attention", 128, "flash_attention D=128, cold"),
                ("attention", 128, "flash_attention D=128, disk hit"),
                ("attention", 128, "D=128 cold, rewrite kept"),
                ("wgmma", 64, "wgmma (default) D=64, cold"),
                ("wgmma", 64, "wgmma (default) D=64, disk hit"),
                ("wgmma", 128, "wgmma (default) D=128, cold"),
                ("wgmma", 128, "wgmma (default) D=128, disk hit"),
                ("trivial_b", 0, "trivial kernel, cold, facts stored")]
        if reference:
            for dim in (128, 64):
                at = rows.index(("attention", dim, f"flash_attention D={dim}, cold")) + 1
                rows.insert(at, ("attention", dim, f"D={dim} cold, reference"))
        ref_env = dict(env, WS_BENCH_REFERENCE="1",
                       WARPSTAGE_CACHE_DIR=os.path.join(folder, "reference-cache"))
        # the wgmma rows: their own cache, with the facts as they were after the first row
        wgmma_env = dict(env, WARPSTAGE_CACHE_DIR=os.path.join(folder, "wgmma-cache"))
        for what, dim, label in rows:
            ref = label.endswith("reference")
            if ref:             # an empty cache but for the machine's facts, as the cold row
                shutil.rmtree(ref_env["WARPSTAGE_CACHE_DIR"], ignore_errors=True)
                _copy_facts(env["WARPSTAGE_CACHE_DIR"], ref_env["WARPSTAGE_CACHE_DIR"])
            if label.endswith("rewrite kept"):     # the kernels' entries gone, the facts kept
                main_dir = env["WARPSTAGE_CACHE_DIR"]
                for name in os.listdir(main_dir):
                    if name.endswith(".wsc"):
                        os.remove(os.path.join(main_dir, name))
            run_env = ref_env if ref else wgmma_env if what == "wgmma" else env
            r, err = _result(_fresh(script, run_env, what, dim))
            print(f"  {label:34} failed: {err}" if err else _row(label, r))
            if not os.path.isdir(wgmma_env["WARPSTAGE_CACHE_DIR"]):
                _copy_facts(env["WARPSTAGE_CACHE_DIR"], wgmma_env["WARPSTAGE_CACHE_DIR"])


def _copy_facts(source: str, folder: str) -> None:
    """A new cache ``folder`` holding ``source``'s facts (``.wsf``) and no kernel entries."""
    os.makedirs(folder)
    for name in os.listdir(source) if os.path.isdir(source) else ():
        if name.endswith(".wsf"):
            shutil.copy(os.path.join(source, name), folder)


def shared_cache_rows(ranks: int = 4) -> None:
    """``ranks`` fresh processes sharing one empty disk cache start the same first call at the
    same moment (FlashAttention D=64, as in ``fresh_process_rows``), like the ranks of a job:
    one compiles, the others wait on the entry's lock and read it. 'traced' summed over the
    ranks is the number of compiles (1 when the lock works; ``ranks`` without it)."""
    print(f"shared disk cache, {ranks} processes at once, flash_attention D=64 (ms): import | "
          "driver | first call | its CPU | second call | launch | beyond the launch | not in a "
          "stage | stages")
    with tempfile.TemporaryDirectory() as folder:
        env = dict(os.environ, PYTHONPATH=ROOT, WARPSTAGE_CACHE_DIR=os.path.join(folder, "cache"))
        script = os.path.join(folder, "first_call.py")
        with open(script, "w") as f:
            f.write(FRESH)
        barrier = os.path.join(folder, "go")
        procs = [_fresh(script, env, "attention", 64, barrier) for _ in range(ranks)]
        deadline = time.monotonic() + 120
        while (len([n for n in os.listdir(folder) if n.startswith("go.ready.")]) < ranks
               and time.monotonic() < deadline and all(p.poll() is None for p in procs)):
            time.sleep(0.01)
        open(barrier, "w").close()
        results = [_result(p) for p in procs]
        for i, (r, err) in enumerate(results):
            print(f"  rank {i}: failed: {err}" if err else _row(f"rank {i}", r))
        done = [r for r, err in results if r]
        print(f"  compiles across the {ranks} ranks: {sum(r['traced'] for r in done)} "
              f"(slowest first call {1e3 * max(r['first'] for r in done):.0f} ms)" if done else
              "  no rank finished")


def profile_hit_rows(top: int = 30) -> None:
    """Where a first call from the disk cache spends its time (issue 14's <= 10 ms beyond the
    launch): for the wgmma and mma.sync FlashAttention at D = 64 and 128, one fresh process
    fills an empty cache (cold), then another makes the same first call under cProfile; prints
    the functions with the most cumulative and own time in that call (cProfile's overhead
    inflates small functions: read the ranking, not the ms)."""
    import pstats
    with tempfile.TemporaryDirectory() as folder:
        script = os.path.join(folder, "first_call.py")
        with open(script, "w") as f:
            f.write(FRESH)
        for what, dim in (("wgmma", 128), ("wgmma", 64), ("attention", 128)):
            env = dict(os.environ, WARPSTAGE_CACHE_DIR=os.path.join(folder, f"c{what}{dim}"))
            r, err = _result(_fresh(script, env, what, dim))
            if err:
                print(f"{what} D={dim}: cold run failed: {err}")
                continue
            stats_path = os.path.join(folder, f"{what}{dim}.prof")
            r, err = _result(_fresh(script, dict(env, WS_BENCH_PROFILE=stats_path), what, dim))
            if err:
                print(f"{what} D={dim}: profiled run failed: {err}")
                continue
            print(f"== {what} D={dim}, disk hit under cProfile: first call "
                  f"{1e3 * r['first']:.1f} ms, launch {1e3 * r['launch']:.2f} ms, stages "
                  + ", ".join(f"{k} {1e3 * v:.1f}" for k, v in r["stages"].items()))
            for key in ("cumulative", "tottime"):
                st = pstats.Stats(stats_path)
                st.sort_stats(key).print_stats(top)


if __name__ == "__main__":
    which = sys.argv[1:] or ["main", "attention", "fresh", "shared"]
    if "main" in which:
        main()
    if "attention" in which:
        attention_compile_time()
    if "fresh" in which:
        fresh_process_rows(reference="reference" in which)
    if "shared" in which:
        shared_cache_rows()
    if "profile-hit" in which:
        profile_hit_rows()
