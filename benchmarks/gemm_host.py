"""Host cost of one ``ws.ops.matmul`` call, in microseconds, measured on the CPU without a GPU.

    PYTHONPATH=. python benchmarks/gemm_host.py [--calls 2000]

Runs on the pretend GPU of tests/fake_gpu.py (CPU torch tensors pose as cuda:0 tensors, TMA
descriptors are "encoded" by a digest, the driver's launch is a recorder), so what is timed is
warpstage's host path only: argument checks, operand views, policy choice, descriptor reuse, the
kernel's cache look-up and the packing of the launch. Rows: ``ws.ops.matmul(a, b, out=c)``
(what benchmarks/gemm.py's ``ws.ops`` column calls), without ``out=`` (a new output each call),
with an nn.Linear weight (``b = w.T``), a decode shape (M = 16: split-K, two launches), ``ws.ops.scaled_matmul`` (FP8, its scales an
epilogue), and the kernel launched directly with descriptors built
once (``ws kernel``: the floor of the host path). On the GPU a call costs its host time or its
kernel time, whichever is longer, when calls run back to back; 4096^3 bf16 runs ~185 us on the
H200. Needs torch (CPU build is enough). A benchmark: nothing is asserted.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]


class _Props:                      # what the host path asks of the pretend device
    sm_count = 132
    cc_major = 9


def per_call_us(run, calls: int, repeats: int = 5) -> float:
    """The median over ``repeats`` of the mean time of ``calls`` calls of ``run``."""
    run()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(calls):
            run()
        times.append((time.perf_counter() - t) / calls * 1e6)
    return statistics.median(times)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--size", type=int, default=4096)
    args = ap.parse_args(argv)
    import pytest
    import torch
    import warpstage as ws
    from fake_gpu import install
    from warpstage.ops import descriptors, matmul_host
    from warpstage.runtime import target as target_module
    mp = pytest.MonkeyPatch()
    mp.setattr(descriptors, "_DESCRIPTORS", {})
    mp.setattr(target_module, "_properties", {0: _Props()})
    install(mp, torch)
    s = args.size
    a = torch.empty(s, s, dtype=torch.bfloat16)
    b = torch.empty(s, s, dtype=torch.bfloat16)
    w = torch.empty(s, s, dtype=torch.bfloat16)
    c = torch.empty(s, s, dtype=torch.bfloat16)
    rows = [("ws.ops.matmul(a, b, out=c)", lambda: ws.ops.matmul(a, b, out=c)),
            ("ws.ops.matmul(a, w.T, out=c)", lambda: ws.ops.matmul(a, w.T, out=c)),
            ("ws.ops.matmul(a, b)", lambda: ws.ops.matmul(a, b))]
    x16, c16 = torch.empty(16, s, dtype=torch.bfloat16), torch.empty(16, s, dtype=torch.bfloat16)
    rows.append(("M=16: ws.ops.matmul(x, w.T, out=c)", lambda: ws.ops.matmul(x16, w.T, out=c16)))
    a8, w8 = a.to(torch.float8_e4m3fn), w.to(torch.float8_e4m3fn)
    one = torch.tensor(1.0)
    rows.append(("fp8: ws.ops.scaled_matmul(a, w.T, s, s)",
                 lambda: ws.ops.scaled_matmul(a8, w8.T, one, one, out=c)))
    p = matmul_host.policy_for(ws.BFloat16, ws.BFloat16, "K", "MN", False, 256)
    descs = [ws.tma.TensorDescriptor(x, box, swizzle=128)
             for x, box in zip((a, b, c), p.descriptor_boxes())]
    launch = ws.ops.matmul_kernel[(132, 1, 1), p.threads]
    rows.append(("kernel launched directly", lambda: launch(p, *descs, s, s, s, 1, 1, ())))
    print(f"host cost per call, {s}^3 bf16, pretend GPU (tests/fake_gpu.py), "
          f"{args.calls} calls x 5, median:")
    for name, run in rows:
        print(f"  {name:36s} {per_call_us(run, args.calls):8.1f} us")
    mp.undo()
    return 0


if __name__ == "__main__":
    sys.exit(main())
