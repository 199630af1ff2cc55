"""Host cost of one ``ws.ops.matmul`` / ``ws.ops.scaled_matmul`` call, in microseconds, measured
on the CPU without a GPU.

    PYTHONPATH=. python benchmarks/gemm_host.py [--calls 500] [--size 4096]

Runs on the pretend GPU of tests/fake_gpu.py (CPU torch tensors pose as cuda:0 tensors, TMA
descriptors are "encoded" by a digest, the driver's launch is a recorder that decodes the
parameter buffer), so what is timed is warpstage's host path: argument checks, operand views,
policy choice, descriptors, the kernel's cache look-up and the packing and the launch call. Each
row twice, interleaved batch by batch: with the op plans (warpstage/ops/op_plans.py: a repeated
call with the same facts launches its recording) and without them (``op_plans.ENABLED =
False``: the op's code on every call, as before the plans). Rows: ``ws.ops.matmul(a, b,
out=c)`` (what benchmarks/gemm.py's ``ws.ops`` column calls), with an nn.Linear weight (``b =
w.T``), without ``out=`` (a new output each call), 16 outputs in turn (as many address sets
as a plan keeps packed), a decode shape (M = 16: split-K, two
launches and a workspace), M = 128 with 3 input/weight/output sets in turn (benchmarks/gemm.py's
rotation: each set's launch kept packed) and with 80 outputs in turn (more than the kept sets
and descriptors: a map made per call by replacing the address of the recorded one), ``ws.ops.scaled_matmul`` (FP8, its scales an epilogue), and the
kernel launched directly with descriptors built once (the Python path of the kernel: it takes
TMA descriptors, which the C path does not read), the C stub of the first row's plan alone
(the floor: the pretend driver's decoding of the buffer, a Python callback, is most of it),
and the allocation of a new output alone (on
the pretend GPU a CPU allocation: 32 MiB is an mmap, not the caching allocator of a GPU). The
figure is the calling thread's CPU time
(``time.thread_time``), the minimum over batches, so other processes on the machine count
little; the pretend driver's own decoding is included in every row. On the GPU a call costs
its host time or its kernel time, whichever is longer, when calls run back to back. Needs torch
(the CPU build is enough). A benchmark: nothing is asserted.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]


def pretend_gpu():
    """Install tests/fake_gpu.py's pretend GPU (H200s: 132 SMs, sm_90); returns the
    MonkeyPatch that undoes it."""
    import pytest
    import torch
    from fake_gpu import install
    mp = pytest.MonkeyPatch()
    install(mp, torch)
    return mp


def per_call_us(run, calls: int) -> float:
    """The calling thread's CPU time of one call of ``run``: the minimum over batches of
    ``calls`` calls, in microseconds."""
    t = time.thread_time()
    for _ in range(calls):
        run()
    return (time.thread_time() - t) / calls * 1e6


def compare(rows, calls: int, batches: int = 7) -> list:
    """Per row (name, fn, planned?), its per-call µs with the op plans on and off, rows and
    both settings interleaved batch by batch; returns [(name, on, off)] (off None where the
    row does not depend on the plans)."""
    from warpstage.ops import op_plans
    best = {}
    for _ in range(batches):
        for name, fn, planned in rows:
            for on in ((True, False) if planned else (True,)):
                op_plans.ENABLED = on
                fn()                                    # records the plan when on
                us = per_call_us(fn, calls)
                best[name, on] = min(best.get((name, on), us), us)
    op_plans.ENABLED = True
    return [(name, best[name, True], best.get((name, False))) for name, _, _ in rows]


def print_table(title: str, results) -> None:
    print(title)
    print(f"  {'call':44s} {'plans':>9s} {'no plans':>9s}")
    for name, on, off in results:
        print(f"  {name:44s} {on:7.1f} us " + (f"{off:7.1f} us" if off is not None else ""))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=500)
    ap.add_argument("--size", type=int, default=4096)
    args = ap.parse_args(argv)
    import torch
    import warpstage as ws
    from warpstage.ops import matmul_host
    mp = pretend_gpu()
    s = args.size
    a, b, w, c = (torch.empty(s, s, dtype=torch.bfloat16) for _ in range(4))
    outs = [torch.empty(s, s, dtype=torch.bfloat16) for _ in range(16)]
    turn = iter(range(1 << 62))
    x16, c16 = torch.empty(16, s, dtype=torch.bfloat16), torch.empty(16, s, dtype=torch.bfloat16)
    xs = [torch.empty(128, s, dtype=torch.bfloat16) for _ in range(3)]     # gemm.py's rotation
    ws_ = [torch.empty(s, s, dtype=torch.bfloat16) for _ in range(3)]
    cs = [torch.empty(128, s, dtype=torch.bfloat16) for _ in range(3)]
    big = torch.empty(80 * 128 * s, dtype=torch.bfloat16)               # 80 outputs
    outs80 = [big[i * 128 * s:(i + 1) * 128 * s].view(128, s) for i in range(80)]
    a8, w8 = a.to(torch.float8_e4m3fn), w.to(torch.float8_e4m3fn)
    one = torch.tensor(1.0)
    p = matmul_host.policy_for(ws.BFloat16, ws.BFloat16, "K", "MN", False, 256)
    descs = [ws.tma.TensorDescriptor(x, box, swizzle=128)
             for x, box in zip((a, b, c), p.descriptor_boxes())]
    launch = ws.ops.matmul_kernel[(132, 1, 1), p.threads]
    from warpstage.ops import op_plans
    for _ in range(2):                              # its plan: the C stub of its one launch
        ws.ops.matmul(a, b, out=c)
    (stub, _), = [launch[1] for plan in op_plans._PLANS.values()
                  if plan is not op_plans.NOT_PLANNED for launches in plan.bound.values()
                  for launch in launches]
    rows = [("ws.ops.matmul(a, b, out=c)", lambda: ws.ops.matmul(a, b, out=c), True),
            ("ws.ops.matmul(a, w.T, out=c)", lambda: ws.ops.matmul(a, w.T, out=c), True),
            ("ws.ops.matmul(a, b)", lambda: ws.ops.matmul(a, b), True),
            ("ws.ops.matmul(a, b, out=outs[i % 16])",
             lambda: ws.ops.matmul(a, b, out=outs[next(turn) % 16]), True),
            ("M=16: ws.ops.matmul(x, w.T, out=c)", lambda: ws.ops.matmul(x16, w.T, out=c16), True),
            ("M=128: 3 (x, w, c) sets in turn (gemm.py)",
             lambda: (lambda i: ws.ops.matmul(xs[i], ws_[i].T, out=cs[i]))(next(turn) % 3),
             True),
            ("M=128: 80 outputs in turn (new maps)",
             lambda: ws.ops.matmul(xs[0], ws_[0].T, out=outs80[next(turn) % 80]), True),
            ("fp8: ws.ops.scaled_matmul(a, w.T, s, s, out=c)",
             lambda: ws.ops.scaled_matmul(a8, w8.T, one, one, out=c), True),
            ("kernel launched directly (Python path)",
             lambda: launch(p, *descs, s, s, s, 1, 1, (), 0, ()), False),
            ("that plan's C stub alone (the pretend driver)", stub, False),
            ("torch.empty of the output alone (CPU memory)",
             lambda: torch.empty(s, s, dtype=torch.bfloat16), False)]
    print_table(f"host cost per call, {s}^3 bf16, pretend GPU (tests/fake_gpu.py), thread CPU "
                f"time, min of 7 batches of {args.calls}:", compare(rows, args.calls))
    mp.undo()
    return 0


if __name__ == "__main__":
    sys.exit(main())
