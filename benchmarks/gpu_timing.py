"""GPU timing for the benchmark scripts: CUDA events around back-to-back calls (torch)."""
from __future__ import annotations

import statistics


def seconds_per_call(fn, iters: int, repeats: int = 1) -> float:
    """Median over ``repeats`` runs of the seconds per call of ``fn``, each run timing ``iters``
    back-to-back calls with CUDA events, after one warm-up call."""
    import torch
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1e3 / iters)
    return statistics.median(times)
