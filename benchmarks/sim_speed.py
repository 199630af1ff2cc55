"""How fast the CPU simulator runs the example kernels (seconds per launch, IR ops per second).

    PYTHONPATH=. python benchmarks/sim_speed.py

Each line: the first launch (trace + simulator compile + run) and the median of the following
launches (run only), the IR ops executed per launch (counted once per warp, not per lane) and
the simulator's rate. A benchmark, not a test: nothing is asserted.
"""
from __future__ import annotations

import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def timed(launch, runs: int = 3):
    t0 = time.perf_counter()
    result = launch()
    first = time.perf_counter() - t0
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        result = launch()
        times.append(time.perf_counter() - t0)
    return first, statistics.median(times), getattr(result, "ops_executed", 0)


def flash_attention(seq: int = 128, head_dim: int = 64, causal: bool = False):
    import torch
    from warpstage.ops import FlashAttention, flash_attention_kernel
    import warpstage as ws
    fa = FlashAttention(head_dim=head_dim, dtype=ws.BFloat16, causal=causal)
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 1, seq, head_dim, generator=g).to(torch.bfloat16)
               for _ in range(3))
    o = torch.empty_like(q)
    return lambda: flash_attention_kernel[fa.grid(1, 1, seq), fa.threads](fa, q, k, v, o)


def softmax(rows: int = 256, cols: int = 128):
    import numpy as np
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    import softmax as ex
    x = np.random.default_rng(0).standard_normal((rows, cols)).astype(np.float32)
    out = np.empty_like(x)
    return lambda: ex.softmax[(rows + ex.BLOCK - 1) // ex.BLOCK, ex.BLOCK](x, out, rows, cols)


def main():
    sys.path.insert(0, ROOT)
    import warpstage as ws
    ws.set_target("sim")
    cases = [
        ("softmax 256x128 (f32)", softmax()),
        ("flash_attention S=128 D=64 (bf16, B=H=1)", flash_attention(128, 64)),
        ("flash_attention S=128 D=64 causal", flash_attention(128, 64, True)),
        ("flash_attention S=128 D=128", flash_attention(128, 128)),
    ]
    print(f"{'kernel':44s} {'first':>8s} {'run':>8s} {'IR ops':>10s} {'ops/s':>10s}")
    for name, launch in cases:
        first, run, ops = timed(launch)
        rate = f"{ops / run:10.3g}" if ops else f"{'-':>10s}"
        print(f"{name:44s} {first:7.2f}s {run:7.2f}s {ops:10d} {rate}")


if __name__ == "__main__":
    main()
