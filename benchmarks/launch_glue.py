"""The Python glue between ``kern[grid, block](...)`` and the C stub, on the CPU (no GPU needed).

    PYTHONPATH=. python benchmarks/launch_glue.py [--calls 100] [--reps 400]

The C path of benchmarks/launch_cpu.py (the pretend GPU of tests/fake_gpu.py, torch's real C
DLPack reader on CPU tensors, the driver entry libc's ``labs``: a C no-op), five rows timed
*interleaved* (one batch of each row in turn, ``--reps`` times): the 4-tensor call, the same with
the launch object hoisted, two configurations called in turn (µs per call), ``prepare()``'d ``p()``, the C stub alone (reads, match, pack, driver
entry), and the C stub of ``p()`` alone. Prints the median and minimum of the thread's CPU time per
call in µs, and ``glue`` = call - stub alone. It only uses what launch_cpu.py has, so it runs
against an older checkout too (``PYTHONPATH=<checkout> python .../launch_glue.py``): run both,
alternating processes, for a before/after.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.environ.get("PYTHONPATH", "").split(os.pathsep)[0] or os.path.dirname(HERE)
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests"), os.path.join(ROOT, "benchmarks")]

import launch_cpu  # noqa: E402  (the checkout's own harness)
from launch_kernels import four  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--reps", type=int, default=400)
    args = parser.parse_args(argv)
    import torch
    noop = launch_cpu._libc_noop()
    mp = launch_cpu.setup(torch, lambda *a: 0, noop)
    try:
        n = 1024
        t0, t1, t2, t3 = (torch.ones(n) for _ in range(4))
        for _ in range(3):
            four[8, 128](t0, t1, t2, t3, n)
            four[16, 128](t0, t1, t2, t3, n)
        launch = four[8, 128]
        p = launch.prepare(t0, t1, t2, t3, n)
        p()
        stub = launch.cstate.stub
        pstub = p._c[0]
        def alternating():              # two configurations: per call, half of this
            four[8, 128](t0, t1, t2, t3, n)
            four[16, 128](t0, t1, t2, t3, n)
        rows = [("kern[8, 128](t0, t1, t2, t3, n)", lambda: four[8, 128](t0, t1, t2, t3, n)),
                ("  launch object hoisted", lambda: launch(t0, t1, t2, t3, n)),
                ("kern[8, 128] / kern[16, 128] in turn", alternating),
                ("p()", p),
                ("the C stub alone", lambda: stub(t0, t1, t2, t3, n)),
                ("p()'s C stub alone", pstub)]
        if stub(t0, t1, t2, t3, n) is not None or pstub() is not None:
            raise RuntimeError("the C stub did not launch on the pretend GPU (miss code "
                               f"{launch.cstate.live.reason()}): the rows would time misses")
        per = [[] for _ in rows]
        clock = time.thread_time_ns
        for _ in range(args.reps):
            for i, (_, fn) in enumerate(rows):
                start = clock()
                for _ in range(args.calls):
                    fn()
                per[i].append((clock() - start) / args.calls / 1000 / (2 if fn is alternating
                                                                         else 1))
    finally:
        mp.undo()
    med = [statistics.median(x) for x in per]
    print(f"{ROOT}: torch {torch.__version__}; µs per call, median / min of {args.reps} "
          f"interleaved batches of {args.calls}")
    for (name, _), m, times in zip(rows, med, per):
        print(f"  {name:<36} {m:6.3f} / {min(times):6.3f}")
    print(f"  glue: call - stub {med[0] - med[4]:.3f}, hoisted - stub {med[1] - med[4]:.3f}, "
          f"p() - its stub {med[3] - med[5]:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
