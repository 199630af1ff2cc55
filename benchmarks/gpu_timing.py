"""GPU timing for the benchmark scripts: CUDA events around back-to-back calls (torch).

Two modes. ``warm_queue=False`` (end to end): the start event is recorded on an idle GPU, so the
host's time to issue the first call (and any call whose host work outlasts the previous
kernel) counts. ``warm_queue=True`` (device time): the GPU is first kept busy by a spin kernel
(``torch.cuda._sleep``) long enough for the host to enqueue the start event and every call
behind it, so the events measure the calls' device time back to back, as in a model whose
host runs ahead of the GPU. The difference between the two is the host's share; the
benchmarks print both where it matters (docs/performance.md, "Measuring")."""
from __future__ import annotations

import statistics
import time

SLEEP_CYCLES_PER_S = 1.98e9
"""torch.cuda._sleep's unit is GPU clock cycles; the H200's SM clock under load (max 1980 MHz).
A lower real clock only makes the spin longer, which is harmless."""


def seconds_per_call(fn, iters: int, repeats: int = 1, warm_queue: bool = False) -> float:
    """Median over ``repeats`` runs of the seconds per call of ``fn``, each run timing ``iters``
    back-to-back calls with CUDA events, after one warm-up call; see the module docstring for
    ``warm_queue``."""
    import torch
    t0 = time.perf_counter()
    fn()
    host = time.perf_counter() - t0
    torch.cuda.synchronize()
    if warm_queue:          # the host time of one call, now that everything is compiled
        t0 = time.perf_counter()
        fn()
        host = time.perf_counter() - t0
        torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        if warm_queue:
            torch.cuda._sleep(int(SLEEP_CYCLES_PER_S * (2 * iters * host + 200e-6)))
        start.record()
        for _ in range(iters):
            fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1e3 / iters)
    return statistics.median(times)
