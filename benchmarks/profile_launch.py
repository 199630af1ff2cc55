"""Where a cache-hit launch spends its time (GPU only): ``examples/vector_add.py`` on 3 torch CUDA
tensors + an int, each step of the call path timed on its own, then cProfile over many calls.

    PYTHONPATH=. python benchmarks/profile_launch.py [--calls 5000]

Steps of a cache hit (the generated call path of frontend/fast_call.py, the launch object's call):
read each tensor (type, is_cuda, get_device, stride, data_ptr, shape, dtype) -> build the call
signature and look it up in the kernel's memo -> check the guards -> torch's current stream ->
``Launcher.launch`` (pack + cuLaunchKernel). "full path" is the same call with the generated
path switched off (per-parameter binders, key lookup, TensorArg leaves), i.e. every call before it.
"""
import argparse
import cProfile
import importlib.util
import os
import pstats
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import warpstage as ws  # noqa: E402
from warpstage.api import _Launch  # noqa: E402
from warpstage.frontend.guards import guards_hold  # noqa: E402
from warpstage.runtime import launcher as launcher_module, raw_launch  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def per_call(rows, calls: int, rounds: int = 7) -> list:
    """Median per call (µs) of each row's ``fn`` over ``rounds`` rounds of ``calls`` calls and a
    synchronize; the rows take turns within a round, so the shared host's slow spells spread."""
    for _, fn in rows:
        for _ in range(min(calls, 1000)):
            fn()
    torch.cuda.synchronize()
    times = [[] for _ in rows]
    for _ in range(rounds):
        for (_, fn), row_times in zip(rows, times):
            t = time.perf_counter()
            for _ in range(calls):
                fn()
            torch.cuda.synchronize()
            row_times.append(1e6 * (time.perf_counter() - t) / calls)
    return [statistics.median(t) for t in times]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=5000)
    calls = parser.parse_args(argv).calls
    spec = importlib.util.spec_from_file_location("va", os.path.join(ROOT, "examples", "vector_add.py"))
    va = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(va)
    k = va.vector_add
    n = 1000
    a, b, out = (torch.ones(n, device="cuda") for _ in range(3))
    grid, block = (n + 255) // 256, 256
    launch = k[grid, block]
    launch(a, b, out, n)
    torch.cuda.synchronize()
    if len(k._fast.memo) != 1:
        print(f"the generated call path did not take the call (memo: {k._fast.memo})")
        return 1
    (launcher, guards, *_), = k._fast.memo.values()
    raw_stream = launcher_module.torch_stream_reader(torch)
    values = (a.data_ptr(), n, b.data_ptr(), n, out.data_ptr(), n, n)
    tensors = (a, b, out)

    def read_tensors():
        for t in tensors:
            t.is_cuda, t.get_device(), t.stride(), t.data_ptr(), t.shape, t.dtype

    memo = k._fast.memo
    blk = launch.block
    (da, ha, sa, pa), (db, hb, sb, pb), (do, ho, so, po) = (
        (t.dtype, t.shape, t.stride(), t.data_ptr()) for t in tensors)
    cu = launcher._cu
    slot = launcher._tls.slot
    params = slot[1]
    stream_obj = launcher_module.bindings_stream(cu, raw_stream(0))
    c_stream = raw_launch.c_pointer(raw_stream(0))
    dims = launcher._dims

    full = _Launch(k, grid, block)  # the base launch object: every call takes the full path
    rows = [
        ("vector_add[grid, block](a, b, out, n)", lambda: k[grid, block](a, b, out, n)),
        ("  the same, k[grid, block] hoisted", lambda: launch(a, b, out, n)),
        ("  full path (generated call path off)", lambda: full(a, b, out, n)),
        ("  read 3 tensors (6 torch reads each)", read_tensors),
        ("  build the call signature + memo lookup",
         lambda: memo.get((blk, da, ha, sa, pa & 15, db, hb, sb, pb & 15, do, ho, so, po & 15))),
        ("  guards_hold", lambda: guards_hold(guards)),
        ("  torch current stream (raw)", lambda: raw_stream(0)),
        ("  Launcher.launch (pack + cuLaunchKernel)",
         lambda: launcher.launch(launch.grid, launch.block, 0, raw_stream(0), values)),
        ("  bare cuLaunchKernel (cuda-bindings), Launcher's buffer",
         lambda: cu.cuLaunchKernel(launcher.handle, *dims, 0, stream_obj, params, 0)),
    ]
    if launcher._raw is not None:
        rows.append(("  bare cuLaunchKernel (libcuda via ctypes), Launcher's buffer",
                     lambda: launcher._raw(launcher._raw_function, *dims, 0, c_stream, slot[2],
                                           None)))
    results = per_call(rows, calls)
    width = max(len(name) for name, _ in rows)
    print(f"{torch.cuda.get_device_name(0)}, Python {sys.version.split()[0]}, torch {torch.__version__}; "
          f"µs per call, median of 7 rounds x {calls} calls")
    for (name, _), us in zip(rows, results):
        print(f"{name:<{width}}  {us:6.2f}")
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(3000):
        launch(a, b, out, n)
    pr.disable()
    torch.cuda.synchronize()
    pstats.Stats(pr).sort_stats("tottime").print_stats(12)
    return 0


if __name__ == "__main__":
    sys.exit(main())
