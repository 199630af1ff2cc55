"""Where a cache-hit launch spends its time on the GPU host: the 4-tensor + int call of
``benchmarks/launch_overhead.py`` with real CUDA tensors, each step of the call path timed on its
own, each row in short batches (below the driver's launch queue, so the GPU's own time per
kernel cannot bound a row) and in long ones (as launch_overhead.py runs them); then cProfile.

    PYTHONPATH=. python benchmarks/profile_launch.py [--long 5000] [--short 200]

Rows: whole calls (``kern[8, 128](t0, t1, t2, t3, n)``, hoisted, the same parameters with an empty
body, ``prepare()``'d ``p()``, vector_add's 3 tensors + int); then the steps of a hit (read one
tensor: each torch read alone and all seven; the call signature and memo lookup; the guards;
torch's current stream; ``Launcher.launch``; ``BoundLaunch.launch``; the bare driver call through
ctypes on the Launcher's function and buffer, on the empty kernel's, and through cuda-bindings).
A row whose long-batch figure exceeds its short-batch one is bounded by the GPU (or the queue),
not by the host. benchmarks/launch_cpu.py gives the same steps on the CPU with a no-op driver.
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
from warpstage.frontend.guards import guards_hold  # noqa: E402
from warpstage.runtime import launcher as launcher_module, raw_launch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from launch_kernels import four, four_empty, tensor_read_rows  # noqa: E402  (not a package)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def per_call(rows, calls: int, rounds: int = 7) -> list:
    """Median per call (µs) of each row's ``fn`` over ``rounds`` rounds of ``calls`` calls and a
    synchronize; the rows take turns within a round, so the shared host's slow spells spread."""
    for _, fn in rows:
        for _ in range(min(calls, 500)):
            fn()
    torch.cuda.synchronize()
    times = [[] for _ in rows]
    for _ in range(rounds):
        for (_, fn), row_times in zip(rows, times):
            torch.cuda.synchronize()
            t = time.perf_counter()
            for _ in range(calls):
                fn()
            torch.cuda.synchronize()
            row_times.append(1e6 * (time.perf_counter() - t) / calls)
    return [statistics.median(t) for t in times]


def _vector_add():
    spec = importlib.util.spec_from_file_location("va", os.path.join(ROOT, "examples",
                                                                     "vector_add.py"))
    va = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(va)
    return va.vector_add


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--long", type=int, default=5000)
    parser.add_argument("--short", type=int, default=200)
    args = parser.parse_args(argv)
    n = 1024
    ts = [torch.ones(n, device="cuda") for _ in range(4)]
    t0, t1, t2, t3 = ts
    launch, empty = four[8, 128], four_empty[8, 128]
    launch(t0, t1, t2, t3, n)
    empty(t0, t1, t2, t3, n)
    vector_add = _vector_add()
    vector_add[4, 256](t0, t1, t2, 1000)
    torch.cuda.synchronize()
    for k in (four, four_empty, vector_add):
        if len(k._fast.memo) != 1:
            print(f"the generated call path did not take {k.__qualname__}'s call "
                  f"(memo: {k._fast.memo})")
            return 1
    (launcher, guards, *_), = four._fast.memo.values()
    (empty_launcher, *_), = four_empty._fast.memo.values()
    p, pe = launch.prepare(t0, t1, t2, t3, n), empty.prepare(t0, t1, t2, t3, n)
    raw_stream = launcher_module.torch_stream_reader(torch)
    values = (t0.data_ptr(), n, t1.data_ptr(), n, t2.data_ptr(), n, t3.data_ptr(), n, n)
    sig, = four._fast.memo
    memo, block = four._fast.memo, launch.block
    cu = launcher._cu
    slot, eslot = launcher._tls.slot, empty_launcher._tls.slot
    stream_obj = launcher_module.bindings_stream(cu, raw_stream(0))
    c_stream = raw_launch.c_pointer(raw_stream(0))
    dims = launcher._dims
    print(f"launch paths used: {launcher.path_used}; torch current stream {raw_stream(0):#x}")
    rows = [
        ("four[8, 128](t0, t1, t2, t3, n)", lambda: four[8, 128](t0, t1, t2, t3, n)),
        ("  the same, four[8, 128] hoisted", lambda: launch(t0, t1, t2, t3, n)),
        ("  the same parameters, empty body", lambda: empty(t0, t1, t2, t3, n)),
        ("  p() (prepared)", p),
        ("  p() of the empty body", pe),
        ("vector_add[4, 256](a, b, out, n)", lambda: vector_add[4, 256](t0, t1, t2, 1000)),
        ("step: read 1 tensor, all 7 reads",
         lambda: (type(t0), t0.is_cuda, t0.get_device(), t0.stride(), t0.data_ptr(), t0.shape,
                  t0.dtype)),
        *tensor_read_rows(t0),
        ("step: call signature + memo lookup", lambda: memo.get((block, *sig[1:]))),
        ("step: guards_hold", lambda: guards_hold(guards)),
        ("step: torch current stream (raw)", lambda: raw_stream(0)),
        ("  (not used) torch.cuda.current_stream().cuda_stream",
         lambda: torch.cuda.current_stream().cuda_stream),
        ("step: Launcher.launch (pack + driver call)",
         lambda: launcher.launch(launch.grid, launch.block, 0, raw_stream(0), values)),
        ("step: BoundLaunch.launch", lambda: p._bound.launch(0)),
        ("step: bare ctypes cuLaunchKernel, four's function + buffer",
         lambda: launcher._raw(launcher._raw_function, *dims, 0, c_stream, slot[2], None)),
        ("step: bare ctypes cuLaunchKernel, the empty body's",
         lambda: empty_launcher._raw(empty_launcher._raw_function, *dims, 0, c_stream, eslot[2],
                                     None)),
        ("step: bare cuda-bindings cuLaunchKernel, four's",
         lambda: cu.cuLaunchKernel(launcher.handle, *dims, 0, stream_obj, slot[1], 0)),
    ]
    short, long = per_call(rows, args.short), per_call(rows, args.long)
    width = max(len(name) for name, _ in rows)
    print(f"{torch.cuda.get_device_name(0)}, Python {sys.version.split()[0]}, torch "
          f"{torch.__version__}; µs per call, median of 7 rounds")
    print(f"{'what':<{width}}  {args.short:>6} {args.long:>6}  (calls per batch)")
    for (name, _), s, lg in zip(rows, short, long):
        print(f"{name:<{width}}  {s:6.2f} {lg:6.2f}")
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(3000):
        launch(t0, t1, t2, t3, n)
    pr.disable()
    torch.cuda.synchronize()
    pstats.Stats(pr).sort_stats("tottime").print_stats(12)
    return 0


if __name__ == "__main__":
    sys.exit(main())
