"""Host-side cost of one kernel launch, in microseconds per call.

    python benchmarks/launch_overhead.py [--batches 7] [--launches 10000]

Each row runs ``--batches`` batches of ``--launches`` launches of a kernel that does nothing,
synchronizing at the end of each batch, and reports the median batch time divided by the number
of launches (the GPU finishes an empty kernel faster than the host can launch it, so this is the
host cost). Rows:

- warpstage Launcher: ``runtime.launcher.Launcher`` on a hand-written PTX kernel (no compiler);
- Launcher + tensor adapter: the same, plus ``as_tensor_arg`` and ``current_stream`` on a torch
  tensor, i.e. the runtime part of a ``@ws.kernel`` call;
- @ws.kernel: a trivial kernel through the whole public API (:func:`bench_warpstage_kernel`);
- raw cuLaunchKernel (tuple params): cuda-bindings with ``((values...), (ctypes types...))``;
- raw cuLaunchKernel (void** address): cuda-bindings with a prebuilt pointer array (the floor);
- torch.add: a 4-element tensor add, for scale.

Without a usable GPU it prints one line and exits 0.
"""
from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import sys
import time

try:
    import warpstage  # noqa: F401
except ImportError:   # run from a checkout: python benchmarks/launch_overhead.py
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from warpstage.runtime import driver, target  # noqa: E402
from warpstage.runtime.launcher import Launcher, current_stream  # noqa: E402
from warpstage.runtime.tensors import as_tensor_arg  # noqa: E402

PTX_BODY = """
.visible .entry empty(
    .param .u64 empty_x,
    .param .u32 empty_n
)
{
    ret;
}
"""


def _ptx() -> str:
    props = target.device_properties(0)
    if props.compute_capability == (9, 0):
        return ".version 8.0\n.target sm_90a\n.address_size 64\n" + PTX_BODY
    return ".version 7.0\n.target sm_80\n.address_size 64\n" + PTX_BODY


def measure(run, sync, batches: int, launches: int) -> float:
    """Median over ``batches`` of (time of ``run(launches)`` + ``sync()``) / launches, in µs."""
    run(min(launches, 1000))   # warm up: first-launch setup, caches
    sync()
    times = []
    for _ in range(batches):
        start = time.perf_counter()
        run(launches)
        sync()
        times.append((time.perf_counter() - start) / launches * 1e6)
    return statistics.median(times)


def bench_launcher(function, scratch: int):
    launcher = Launcher(function, [ctypes.c_void_p, ctypes.c_uint32])
    values = [scratch, 0]

    def run(n):
        launch = launcher.launch
        for _ in range(n):
            launch((1, 1, 1), (32, 1, 1), 0, 0, values)
    return run


def bench_launcher_with_torch_tensor(function, torch):
    launcher = Launcher(function, [ctypes.c_void_p, ctypes.c_uint32])
    x = torch.zeros(4, device="cuda")

    def run(n):
        launch = launcher.launch
        for _ in range(n):
            arg = as_tensor_arg(x, "x")
            launch((1, 1, 1), (32, 1, 1), 0, current_stream((arg,)), [arg.data_ptr, 0])
    return run


def bench_raw_tuple(function, scratch: int):
    cu = driver.cuda()
    handle, stream = function.handle, cu.CUstream(0)
    params = ((scratch, 0), (ctypes.c_void_p, ctypes.c_uint32))

    def run(n):
        launch = cu.cuLaunchKernel
        for _ in range(n):
            launch(handle, 1, 1, 1, 32, 1, 1, 0, stream, params, 0)
    return run


def bench_raw_address(function, scratch: int):
    cu = driver.cuda()
    handle, stream = function.handle, cu.CUstream(0)
    storage = [ctypes.c_void_p(scratch), ctypes.c_uint32(0)]
    array = (ctypes.c_void_p * 2)(*[ctypes.addressof(s) for s in storage])
    address = ctypes.addressof(array)

    def run(n):
        launch = cu.cuLaunchKernel
        for _ in range(n):
            launch(handle, 1, 1, 1, 32, 1, 1, 0, stream, address, 0)
    return run


def bench_torch_add(torch):
    a = torch.zeros(4, device="cuda")
    b = torch.ones(4, device="cuda")

    def run(n):
        add = torch.add
        for _ in range(n):
            add(a, b)
    return run


def bench_warpstage_kernel(batches: int, launches: int) -> str:
    """A trivial ``@ws.kernel`` through the public API, once warpstage has one; else 'n/a'.

    This is the number that matters to users: Python call -> cache hit -> argument conversion ->
    launch. It replaces the hand-written-PTX rows as soon as ``ws.kernel`` works.
    """
    try:
        import warpstage as ws
    except Exception as e:  # noqa: BLE001 - report, don't crash the benchmark
        return f"n/a (import warpstage failed: {e})"
    if not hasattr(ws, "kernel"):
        return "n/a (ws.kernel does not exist yet)"
    try:
        @ws.kernel
        def trivial(n):          # a bare int argument is dynamic (Int32) by rule 3
            pass

        def run(count):
            launch = trivial[(1, 1, 1), (32, 1, 1)]
            for _ in range(count):
                launch(7)
        return f"{measure(run, driver.synchronize, batches, launches):8.2f}"
    except Exception as e:  # noqa: BLE001
        return f"n/a ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=7)
    parser.add_argument("--launches", type=int, default=10000)
    args = parser.parse_args(argv)
    if not target.cuda_available():
        print(f"launch_overhead: no usable CUDA GPU ({target.cuda_unavailable_reason()}); nothing "
              f"to measure")
        return 0
    props = target.device_properties(0)
    module = driver.load_module(_ptx(), is_ptx=True)
    function = driver.get_function(module, "empty")
    scratch = driver.mem_alloc(256)
    torch = None
    try:
        import torch
        torch.zeros(1, device="cuda")
    except Exception:  # noqa: BLE001 - torch is optional
        torch = None

    def timed(run, sync=driver.synchronize) -> str:
        return f"{measure(run, sync, args.batches, args.launches):8.2f}"

    rows = [("warpstage Launcher (PTX kernel, 2 params)", timed(bench_launcher(function, scratch)))]
    if torch is not None:
        rows.append(("Launcher + as_tensor_arg + current_stream",
                     timed(bench_launcher_with_torch_tensor(function, torch),
                           torch.cuda.synchronize)))
    rows.append(("@ws.kernel trivial kernel", bench_warpstage_kernel(args.batches, args.launches)))
    rows.append(("raw cuLaunchKernel (tuple params)", timed(bench_raw_tuple(function, scratch))))
    rows.append(("raw cuLaunchKernel (void** address)",
                 timed(bench_raw_address(function, scratch))))
    if torch is not None:
        rows.append(("torch.add (4 elements)",
                     timed(bench_torch_add(torch), torch.cuda.synchronize)))
    else:
        rows.append(("torch.add (4 elements)", "n/a (torch not importable)"))
    driver.mem_free(scratch)

    try:
        from cuda.bindings import __version__ as bindings_version
    except Exception:  # noqa: BLE001
        bindings_version = "?"
    print(f"{props.name} (sm_{props.cc_major}{props.cc_minor}), driver {props.driver_version_str}, "
          f"cuda-bindings {bindings_version}, Python {sys.version.split()[0]}")
    print(f"median of {args.batches} batches x {args.launches} launches, µs per launch")
    width = max(len(name) for name, _ in rows)
    print(f"{'what':<{width}}  {'µs/call':>8}")
    print("-" * (width + 10))
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
