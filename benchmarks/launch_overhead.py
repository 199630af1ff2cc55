"""Host-side cost of one kernel launch, in microseconds per call.

    python benchmarks/launch_overhead.py [--batches 7] [--launches 10000]

Each row runs ``--batches`` batches of ``--launches`` launches, synchronizing at the end of each
batch, the rows taking turns batch by batch; it reports the median and the lowest batch time
divided by the number of launches. The kernels are tiny, so this is mostly the host's cost of a
launch (a row can be no faster than the GPU runs its kernel back to back). Rows:

- warpstage Launcher: ``runtime.launcher.Launcher`` on a hand-written PTX kernel (no compiler);
- Launcher + tensor adapter: the same, plus ``as_tensor_arg`` and ``current_stream`` on a torch
  tensor, i.e. the runtime part of a ``@ws.kernel`` call;
- @ws.kernel: a trivial kernel (one int argument) through the public API;
- @ws.kernel vector_add: ``examples/vector_add.py`` on 3 torch CUDA tensors of 1000 float32 and
  an int, written ``vector_add[grid, block](a, b, out, n)`` in the loop, and with the
  ``vector_add[grid, block]`` object hoisted out of it (:func:`bench_vector_add`);
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


def measure(rows, batches: int, launches: int) -> list:
    """Per row ``(name, run, sync)``: (median, min) over ``batches`` rounds of the time of
    ``run(launches)`` + ``sync()``, divided by ``launches``, in µs. The rows take turns within
    each round, so a slow spell of the (shared) host lands on every row alike."""
    for _, run, sync in rows:
        run(min(launches, 1000))   # warm up: first-launch setup, caches
        sync()
    times = [[] for _ in rows]
    for _ in range(batches):
        for (_, run, sync), row_times in zip(rows, times):
            start = time.perf_counter()
            run(launches)
            sync()
            row_times.append((time.perf_counter() - start) / launches * 1e6)
    return [(statistics.median(t), min(t)) for t in times]


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


def bench_warpstage_kernel():
    """A trivial ``@ws.kernel`` through the public API (Python call -> cache hit -> argument
    conversion -> launch): the number that matters to users."""
    import warpstage as ws

    @ws.kernel
    def trivial(n):          # a bare int argument is dynamic (Int32) by rule 3
        pass

    def run(count):
        launch = trivial[(1, 1, 1), (32, 1, 1)]
        for _ in range(count):
            launch(7)
    return run


def bench_vector_add(torch):
    """``examples/vector_add.py`` through the public API: (the call written in full each time,
    the ``vector_add[grid, block]`` object hoisted out of the loop)."""
    import importlib.util
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    spec = importlib.util.spec_from_file_location(
        "_vector_add_example", os.path.join(root, "examples", "vector_add.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    vector_add = module.vector_add
    n = 1000
    a = torch.ones(n, device="cuda")
    b = torch.ones(n, device="cuda")
    out = torch.empty(n, device="cuda")
    grid, block = (n + 255) // 256, 256

    def run_full(count):
        for _ in range(count):
            vector_add[grid, block](a, b, out, n)

    def run_hoisted(count):
        launch = vector_add[grid, block]
        for _ in range(count):
            launch(a, b, out, n)
    run_full(1)
    torch.cuda.synchronize()
    if not torch.equal(out, a + b):
        raise RuntimeError("vector_add gave a wrong result")
    return run_full, run_hoisted


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

    sync = driver.synchronize
    rows, failed = [("warpstage Launcher (PTX kernel, 2 params)", bench_launcher(function, scratch),
                     sync)], []
    if torch is not None:
        rows.append(("Launcher + as_tensor_arg + current_stream",
                     bench_launcher_with_torch_tensor(function, torch), torch.cuda.synchronize))
    try:
        rows.append(("@ws.kernel trivial kernel", bench_warpstage_kernel(), sync))
    except Exception as e:  # noqa: BLE001 - report, don't crash the benchmark
        failed.append(("@ws.kernel trivial kernel", f"n/a ({type(e).__name__}: {e})"))
    if torch is not None:
        try:
            full, hoisted = bench_vector_add(torch)
            rows.append(("@ws.kernel vector_add[grid, block](a, b, out, n)", full,
                         torch.cuda.synchronize))
            rows.append(("  the same, vector_add[grid, block] hoisted", hoisted,
                         torch.cuda.synchronize))
        except Exception as e:  # noqa: BLE001
            failed.append(("@ws.kernel vector_add", f"n/a ({type(e).__name__}: {e})"))
    rows.append(("raw cuLaunchKernel (tuple params)", bench_raw_tuple(function, scratch), sync))
    rows.append(("raw cuLaunchKernel (void** address)", bench_raw_address(function, scratch), sync))
    if torch is not None:
        rows.append(("torch.add (4 elements)", bench_torch_add(torch), torch.cuda.synchronize))
    else:
        failed.append(("torch.add (4 elements)", "n/a (torch not importable)"))
    results = measure(rows, args.batches, args.launches)
    driver.mem_free(scratch)

    try:
        from cuda.bindings import __version__ as bindings_version
    except Exception:  # noqa: BLE001
        bindings_version = "?"
    print(f"{props.name} (sm_{props.cc_major}{props.cc_minor}), driver {props.driver_version_str}, "
          f"cuda-bindings {bindings_version}, Python {sys.version.split()[0]}")
    print(f"{args.batches} rounds x {args.launches} launches, the rows taking turns in each "
          f"round; µs per launch")
    width = max(len(name) for name, *_ in rows + failed)
    print(f"{'what':<{width}}  {'median':>8}  {'min':>8}")
    print("-" * (width + 20))
    for (name, *_), (median, low) in zip(rows, results):
        print(f"{name:<{width}}  {median:8.2f}  {low:8.2f}")
    for name, text in failed:
        print(f"{name:<{width}}  {text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
