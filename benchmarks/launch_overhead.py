"""Host-side cost of one kernel launch, in microseconds per call (GPU only).

    PYTHONPATH=. python3 benchmarks/launch_overhead.py [--batches 7] [--launches 10000]

Each row runs ``--batches`` batches of ``--launches`` launches, synchronizing at the end of each
batch, the rows taking turns batch by batch (so a slow spell of the shared host lands on every
row alike); it reports the median and the lowest batch time divided by the number of launches.
The kernels are tiny, so this is the host's cost of a launch (a row can be no faster than the GPU
runs its kernel back to back: the "raw" rows show that floor). Rows (docs/launch.md says why):

- warpstage ``kern[8, 128](t0, t1, t2, t3, n)``: 4 torch tensors + 1 int, the call written in
  full in the loop, on the C call path (jit/c_call.py) and on the Python path alone
  (``WARPSTAGE_CCALL=0`` when the kernel's launch type is made), the launch object hoisted out of
  the loop, and the C stub called alone (the glue above it: docs/launch.md, "The launch glue");
  with annotated and bare parameters; with the driver call through ctypes
  (default) and through cuda-bindings (``Launcher.set_path``); the same parameters with an empty
  body (no GPU work, so the GPU's time per kernel cannot bound the row); with 2 or more GPUs, the
  empty body on 4 tensors of cuda:1 while cuda:0 is current (issue 17's placement);
- the same through ``p = kern[8, 128].prepare(t0, t1, t2, t3, n)``: ``p()`` (C path and Python
  path) and ``p(*args)``, and ``p()``'s C stub alone;
- 3 tensors + 1 int (``examples/vector_add.py``), 8 tensors + 2 ints, 2 TMA descriptors + 2 ints
  (descriptors built once, as ``ws.ops.flash_attention`` keeps them); the 4-tensor call with
  two configurations in turn (``kern[8, 128]``, ``kern[16, 128]``: a launch object each);
- raw ``cuLaunchKernel``: cuda-bindings with a prebuilt ``void**`` and with tuple params; libcuda
  through ctypes with prebuilt C arguments (runtime/raw_launch.py's call, nothing else);
  ``BoundLaunch.launch`` (what ``p()`` costs below the stream read and guard check);
- ``torch.add(a, b, out=c)``; Triton ``kern[(8,)](t0, t1, t2, t3, n)`` (when importable);
  CuTe DSL compiled with TVM-FFI, an empty kernel of 4 tensors + 1 int (when importable: the
  FA4 install of scripts/fa4_install.sh brings it; else the row says why); apache-tvm-ffi's call
  of a C no-op with the same arguments (option (c)'s floor; when tvm_ffi is importable).

The "full path" column counts the calls of a warpstage row that left the generated call path
(memo misses) during warm-up and the measured batches: 0 means every call was a memo hit. Without a usable
GPU it prints one line and exits 0. scripts/gpu_launch.sh runs it and keeps its output.
"""
from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import warpstage as ws  # noqa: E402
from warpstage.runtime import driver, raw_launch, target  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from launch_kernels import eight, four, four_empty  # noqa: E402  (benchmarks/ is not a package)

PTX_BODY = """
.visible .entry empty(
    .param .u64 empty_x,
    .param .u32 empty_n
)
{
    ret;
}
"""


@ws.kernel
def four_bare(t0, t1, t2, t3, n):
    i = ws.arch.block_idx()[0] * ws.arch.block_dim()[0] + ws.arch.thread_idx()[0]
    if i < n:
        t3[i] = t0[i] + t1[i] + t2[i]


@ws.kernel
def descriptors(src, dst, r0: ws.Int32, c0: ws.Int32):
    pass                     # the launch cost of two TMA descriptors + 2 ints; the body is moot


def _ptx() -> str:
    props = target.device_properties(0)
    if props.compute_capability == (9, 0):
        return ".version 8.0\n.target sm_90a\n.address_size 64\n" + PTX_BODY
    return ".version 7.0\n.target sm_80\n.address_size 64\n" + PTX_BODY


def measure(rows, batches: int, launches: int, busy=None) -> list:
    """Per row ``(name, run, sync)``: (median, min) over ``batches`` rounds of the time of
    ``run(launches)`` + ``sync()``, divided by ``launches``, in µs. The rows take turns within
    each round.

    With ``busy`` (a callable that queues a spin kernel on the GPU, ``--busy``) each batch is
    queued behind that spin and only ``run(launches)`` is timed, the synchronization after it
    not: the launches only enter the queue, so the row is the host's cost of a launch alone,
    not bounded by how fast the GPU runs tiny kernels back to back."""
    for _, run, sync in rows:
        run(min(launches, 1000))   # warm up: first-launch setup, caches
        sync()
    times = [[] for _ in rows]
    for _ in range(batches):
        for (_, run, sync), row_times in zip(rows, times):
            if busy is not None:
                sync()
                busy()
            start = time.perf_counter()
            run(launches)
            if busy is None:
                sync()
            row_times.append((time.perf_counter() - start) / launches * 1e6)
            if busy is not None:
                sync()
    return [(statistics.median(t), min(t)) for t in times]


def _loop(call, *args):
    def run(n):
        for _ in range(n):
            call(*args)
    return run


def _in_full(kern, config, args):
    def run(n):
        for _ in range(n):
            kern[config](*args)
    return run


def _alternating(kern, args):
    def run(n):
        for _ in range(n // 2):
            kern[8, 128](*args)
            kern[16, 128](*args)
    return run


_MISSES: dict = {}


def _count_misses(kern):
    """Count the calls of ``kern`` that leave its generated call path (memo misses)."""
    fast = kern._fast
    real = fast.miss
    _MISSES[kern] = 0

    def miss(*a):
        _MISSES[kern] += 1
        return real(*a)
    fast.namespace["_miss"] = miss


def warpstage_rows(torch, function, scratch):
    rows, misses = [], {}
    n = 1024
    ts = [torch.ones(n, device="cuda") for _ in range(8)]
    four[8, 128](*ts[:4], n)
    NOTES.append(_wait_for_stub(torch, four, (8, 128), (*ts[:4], n)))
    torch.cuda.synchronize()
    if not torch.equal(ts[3], ts[0] + ts[1] + ts[2]):
        raise RuntimeError("the 4-tensor kernel gave a wrong result")
    args4 = (*ts[:4], n)
    four_py = _python_path(ws.kernel(four.fn), args4)
    prepared_py = _python_path(four_py, args4, lambda k: k[8, 128].prepare(*args4))
    four_bindings = _python_path(ws.kernel(four.fn), args4)
    four_bindings[8, 128](*args4)
    ck = next(iter(four_bindings._cache.values()))
    ck._cuda[2].set_path("bindings")
    prepared = four[8, 128].prepare(*args4)
    vector_add = _vector_add()
    a, b, out = (torch.ones(1000, device="cuda") for _ in range(3))
    D = ws.tma.TensorDescriptor
    src, dst = torch.zeros(64, 64, device="cuda"), torch.zeros(64, 64, device="cuda")
    descs = (D(src, (8, 32)), D(dst, (8, 32)), 0, 0)
    table = [
        ("ws kern[8, 128](t0, t1, t2, t3, n)  (C call path)", four, (8, 128), args4),
        ("  the same, Python call path (WARPSTAGE_CCALL=0), ctypes driver call", four_py,
         (8, 128), args4),
        ("  the same, bare parameters (def k(t0, t1, t2, t3, n))", four_bare, (8, 128), args4),
        ("  the same parameters, empty body", four_empty, (8, 128), args4),
        ("  the same, cuda-bindings driver call", four_bindings, (8, 128), args4),
        ("ws vector_add[4, 256](a, b, out, n): 3 tensors + 1 int", vector_add, (4, 256),
         (a, b, out, 1000)),
        ("ws kern[8, 128](8 tensors, n, m)", eight, (8, 128), (*ts, n, 1)),
        ("ws kern[1, 128](2 TMA descriptors, r0, c0)", descriptors, (1, 128), descs),
    ]
    if torch.cuda.device_count() >= 2:                  # issue 17: a launch on another device
        us = [torch.ones(n, device="cuda:1") for _ in range(4)]
        table.append(("ws kern[8, 128](4 tensors on cuda:1, n), cuda:0 current",
                      ws.kernel(four_empty.fn), (8, 128), (*us, n)))    # its own miss count
    for name, kern, config, args in table:
        kern[config](*args)
        _count_misses(kern)
        sync = (lambda: torch.cuda.synchronize(1)) if "cuda:1" in name else torch.cuda.synchronize
        rows.append((name, _in_full(kern, config, args), sync))
        misses[name] = kern
    four[16, 128](*args4)
    rows.append(("ws kern[8, 128](...) and kern[16, 128](...) in turn: 2 configurations",
                 _alternating(four, args4), torch.cuda.synchronize))
    stub = getattr(four[8, 128], "cstate", None)
    if stub is not None and getattr(stub, "stub", None) is not None:
        rows.insert(1, ("  the same, launch object hoisted (L = kern[8, 128]; L(...))",
                        _loop(four[8, 128], *args4), torch.cuda.synchronize))
        rows.insert(3, ("  the C stub alone (reads, match, pack, cuLaunchKernel)",
                        _loop(stub.stub, *args4), torch.cuda.synchronize))
    at = 5 if stub is not None and getattr(stub, "stub", None) is not None else 3
    rows[at:at] = [
        ("ws prepared p(): p = kern[8, 128].prepare(t0, t1, t2, t3, n)  (C)", _loop(prepared),
         torch.cuda.synchronize),
        ("  the same, Python path", _loop(prepared_py), torch.cuda.synchronize),
        ("  the same, p(t0, t1, t2, t3, n): rebinding each call", _loop(prepared, *args4),
         torch.cuda.synchronize),
        ("  BoundLaunch.launch(stream) alone (below p(): no guard, no stream read)",
         _loop(prepared._bound.launch, 0), torch.cuda.synchronize)]
    if prepared._c is not None:
        rows.insert(at + 4, ("  p()'s C stub alone (torch's stream, cuLaunchKernel)",
                             _loop(prepared._c[0]), torch.cuda.synchronize))
    return rows, misses


def _python_path(kern, args, make=None):
    """``kern`` with its launch type made while WARPSTAGE_CCALL=0: the generated Python call
    path alone (the C path is chosen when the launch type is made); with ``make``,
    ``make(kern)`` run while it is 0 (a prepared launch chooses when it is bound)."""
    before = os.environ.get("WARPSTAGE_CCALL")
    os.environ["WARPSTAGE_CCALL"] = "0"
    try:
        kern[8, 128]
        made = make(kern) if make is not None else None
    finally:
        if before is None:
            del os.environ["WARPSTAGE_CCALL"]
        else:
            os.environ["WARPSTAGE_CCALL"] = before
    if make is not None:
        return made
    kern[8, 128](*args)
    return kern


def _wait_for_stub(torch, kern, config, args) -> str:
    """Call until the C path runs (the stub compiles in the background on the first call):
    a note for the table."""
    from warpstage.jit import c_env
    start = time.perf_counter()
    while c_env.stub_ready() is False and time.perf_counter() - start < 30:
        time.sleep(0.01)
    for _ in range(3):
        kern[config](*args)
    state = getattr(kern[config], "cstate", None)
    entries = len(state.live.entries) if state is not None and hasattr(state, "live") else 0
    return (f"C path: stub {'ready' if c_env.stub_ready() else c_env.unavailable_reason()}, "
            f"{entries} entr{'y' if entries == 1 else 'ies'} for kern[8, 128]; "
            f"{time.perf_counter() - start:.2f} s waited")


def _vector_add():
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "_vector_add_example", os.path.join(ROOT, "examples", "vector_add.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.vector_add


_KEEP_ALIVE: list = []


def raw_rows(function, scratch):
    cu = driver.cuda()
    handle, stream = function.handle, cu.CUstream(0)
    storage = [ctypes.c_void_p(scratch), ctypes.c_uint32(0)]
    array = (ctypes.c_void_p * 2)(*[ctypes.addressof(s) for s in storage])
    address = ctypes.addressof(array)
    # the rows hold only the address: keep the argument storage and the void*[] alive for the
    # whole run (freed, the driver read garbage pointers: the segfault of session 5's runs)
    _KEEP_ALIVE.append((storage, array))
    tuple_params = ((scratch, 0), (ctypes.c_void_p, ctypes.c_uint32))
    rows = [("raw cuLaunchKernel, cuda-bindings, prebuilt void**",
             _loop(cu.cuLaunchKernel, handle, 1, 1, 1, 32, 1, 1, 0, stream, address, 0),
             driver.synchronize),
            ("raw cuLaunchKernel, cuda-bindings, tuple params",
             _loop(cu.cuLaunchKernel, handle, 1, 1, 1, 32, 1, 1, 0, stream, tuple_params, 0),
             driver.synchronize)]
    fn = raw_launch.launch_function()
    if fn is not None:
        c_handle = ctypes.c_void_p(int(handle))
        rows.append(("raw cuLaunchKernel, libcuda through ctypes, prebuilt C arguments",
                     _loop(fn, c_handle, 1, 1, 1, 32, 1, 1, 0, None, ctypes.c_void_p(address),
                           None), driver.synchronize))
    return rows, [] if fn is not None else [("raw ctypes cuLaunchKernel",
                                             f"n/a ({raw_launch.unavailable_reason()})")]


def torch_add_row(torch):
    a, b, c = (torch.ones(4, device="cuda") for _ in range(3))
    def run(n):
        add = torch.add
        for _ in range(n):
            add(a, b, out=c)
    return ("torch.add(a, b, out=c), 4 elements", run, torch.cuda.synchronize)


def triton_row(torch):
    import triton
    import triton.language as tl

    @triton.jit
    def kern(t0, t1, t2, t3, n, BLOCK: tl.constexpr):
        i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = i < n
        tl.store(t3 + i, tl.load(t0 + i, mask=m) + tl.load(t1 + i, mask=m) + tl.load(t2 + i, mask=m),
                 mask=m)
    ts = [torch.ones(1024, device="cuda") for _ in range(4)]

    def run(count):
        for _ in range(count):
            kern[(8,)](ts[0], ts[1], ts[2], ts[3], 1024, BLOCK=128)
    run(1)                                   # compile now: a failure is reported, not raised
    return ("Triton kern[(8,)](t0, t1, t2, t3, n)", run, torch.cuda.synchronize)


NOTES: list = []


def cute_row(torch):
    """CuTe DSL 4.x compiled with ``--enable-tvm-ffi`` (its launch path: torch tensors read by
    TVM-FFI's Cython call through torch's C DLPack API): a kernel with 4 tensors + 1 int and an
    empty body, called ``compiled(t0, t1, t2, t3, n)``. Written without a GPU to try it on: any
    failure is reported as the row's text."""
    name = "CuTe DSL with TVM-FFI: compiled(t0, t1, t2, t3, n), empty kernel"
    try:
        import cutlass.cute as cute
        from cute_empty import launch            # benchmarks/cute_empty.py: why a module
    except Exception as e:  # noqa: BLE001
        return None, (name, f"n/a (cutlass.cute not importable: {type(e).__name__})")
    try:
        ts = [torch.ones(1024, device="cuda") for _ in range(4)]
        fakes = [cute.runtime.from_dlpack(t, enable_tvm_ffi=True).mark_layout_dynamic()
                 for t in ts]
        compiled = cute.compile(launch, *fakes, 1024, options="--enable-tvm-ffi")
        compiled(*ts, 1024)
        torch.cuda.synchronize()
    except Exception as e:  # noqa: BLE001
        return None, (name, f"n/a ({type(e).__name__}: {str(e).splitlines()[0][:120]})")
    return (name, _loop(compiled, *ts, 1024), torch.cuda.synchronize), None


def tvm_ffi_row(torch):
    """apache-tvm-ffi's Function call of a C function that does nothing (``int f(void*, const
    TVMFFIAny*, int32_t, TVMFFIAny*)`` returning 0, compiled with llvmlite here), with 4 torch
    tensors + 1 int: the cost of option (c)'s argument conversion alone (docs/launch.md)."""
    name = "tvm-ffi Function call of a C no-op (4 tensors + int): option (c)'s floor"
    try:
        import tvm_ffi
        import llvmlite.binding as llvm
    except Exception as e:  # noqa: BLE001
        return None, (name, f"n/a (tvm_ffi not importable: {type(e).__name__})")
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    module = llvm.parse_assembly("define i32 @noop(ptr %h, ptr %a, i32 %n, ptr %r) {\n"
                                 "  ret i32 0\n}\n")
    machine = llvm.Target.from_default_triple().create_target_machine(codemodel="jitdefault")
    engine = llvm.create_mcjit_compiler(module, machine)
    engine.finalize_object()
    fn = tvm_ffi.Function.__from_extern_c__(engine.get_function_address("noop"),
                                            keep_alive_object=engine)
    ts = [torch.ones(1024, device="cuda") for _ in range(4)]
    fn(*ts, 1024)
    return (name, _loop(fn, *ts, 1024), lambda: None), None


def _torch():
    try:
        import torch
        torch.zeros(1, device="cuda")
        return torch
    except Exception:  # noqa: BLE001 - torch is optional
        return None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=7)
    parser.add_argument("--launches", type=int, default=10000)
    parser.add_argument("--busy", action="store_true",
                        help="queue each batch behind a spin kernel and time the host's enqueue "
                             "alone (use --launches <= 500: the launch queue must not fill)")
    args = parser.parse_args(argv)
    if not target.cuda_available():
        print(f"launch_overhead: no usable CUDA GPU ({target.cuda_unavailable_reason()}); nothing "
              f"to measure")
        return 0
    props = target.device_properties(0)
    module = driver.load_module(_ptx(), is_ptx=True)
    function = driver.get_function(module, "empty")
    scratch = driver.mem_alloc(256)
    torch = _torch()
    rows, failed, misses = [], [], {}
    if torch is not None:
        try:
            rows, misses = warpstage_rows(torch, function, scratch)
        except Exception as e:  # noqa: BLE001 - report, don't crash the benchmark
            failed.append(("warpstage rows", f"n/a ({type(e).__name__}: {e})"))
    else:
        failed.append(("warpstage rows (torch tensors)", "n/a (torch not importable)"))
    more, absent = raw_rows(function, scratch)
    rows += more
    failed += absent
    if torch is not None:
        rows.append(torch_add_row(torch))
        try:
            rows.append(triton_row(torch))
        except Exception as e:  # noqa: BLE001
            failed.append(("Triton", f"n/a ({type(e).__name__}: {e})"))
    if torch is not None:
        for make in (cute_row, tvm_ffi_row):
            row, absent = make(torch)
            rows += [row] if row is not None else []
            failed += [absent] if absent is not None else []
    for kern in misses.values():
        _MISSES[kern] = 0
    if args.busy and torch is None:
        print("launch_overhead --busy needs torch (torch.cuda._sleep spins the GPU)")
        return 1
    # ~40 µs of GPU time per queued launch (the H200's SM clock is <= 1.98 GHz): longer than
    # any row's enqueue, so the queue never drains while a batch is timed
    spin = (lambda: torch.cuda._sleep(int(args.launches * 40e-6 * 2.0e9))) if args.busy else None
    results = measure(rows, args.batches, args.launches, spin)
    driver.mem_free(scratch)
    report(props, args, rows, results, failed, misses)
    return 0


def report(props, args, rows, results, failed, misses) -> None:
    try:
        from cuda.bindings import __version__ as bindings_version
    except Exception:  # noqa: BLE001
        bindings_version = "?"
    lines = [f"{props.name} (sm_{props.cc_major}{props.cc_minor}), driver "
             f"{props.driver_version_str}, cuda-bindings {bindings_version}, Python "
             f"{sys.version.split()[0]}",
             f"{args.batches} rounds x {args.launches} launches, the rows taking turns in each "
             f"round; µs per launch"
             + ("; --busy: queued behind a spin kernel, the enqueue alone timed" if args.busy
                else "")]
    width = max(len(name) for name, *_ in rows + failed)
    lines.append(f"{'what':<{width}}  {'median':>8}  {'min':>8}  full path")
    lines.append("-" * (width + 31))
    for (name, *_), (median, low) in zip(rows, results):
        kern = misses.get(name)
        count = "" if kern is None else f"{_MISSES.get(kern, 0):>9}"
        lines.append(f"{name:<{width}}  {median:8.2f}  {low:8.2f}  {count}")
    for name, text in failed:
        lines.append(f"{name:<{width}}  {text}")
    lines += NOTES
    print("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
