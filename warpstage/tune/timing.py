"""Timers: how the autotuner measures one candidate.

A timer is any object with ``measure(run, config, warmup, rep) -> milliseconds``: ``run()``
launches the candidate once on the timing copies of the arguments, ``config`` is the candidate
(a fake timer for tests may read it), ``warmup`` / ``rep`` are counts of calls. A timer used
with worker processes must pickle (a module-level class).

- ``CudaEventTimer`` (default on the GPU): the median of ``rep`` per-call times between CUDA
  events (``warpstage.runtime.events``), after ``warmup`` calls.
- ``WallTimer`` (default in the simulator): the median wall time of ``rep`` calls, in
  milliseconds, after ``warmup``; on the GPU each call is followed by a device synchronize.
"""
from __future__ import annotations

import statistics
import time

__all__ = ["CudaEventTimer", "WallTimer", "default_timer", "copy_args", "warm_up"]


class CudaEventTimer:
    """Median CUDA-event time of ``rep`` calls after ``warmup`` (milliseconds)."""

    def measure(self, run, config, warmup: int, rep: int) -> float:
        from ..runtime.events import time_launches
        return statistics.median(time_launches(run, warmup, max(1, rep)))

    def __repr__(self) -> str:
        return "CudaEventTimer()"


class WallTimer:
    """Median wall time of ``rep`` calls after ``warmup`` (milliseconds); ``sync``: synchronize
    the GPU after each call (for the cuda target)."""

    def __init__(self, sync: bool = False):
        self.sync = sync

    def measure(self, run, config, warmup: int, rep: int) -> float:
        wait = _synchronize if self.sync else (lambda: None)
        for _ in range(warmup):
            run()
            wait()
        times = []
        for _ in range(max(1, rep)):
            t0 = time.perf_counter()
            run()
            wait()
            times.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(times)

    def __repr__(self) -> str:
        return f"WallTimer(sync={self.sync})"


def warm_up(run) -> None:
    """One untimed ``run()`` before a process times its first candidate. The first launch of a
    process pays once for what every later one reuses (the simulator's first launch takes
    ~0.1-0.5 s more than the next; on the GPU the context and module loads), and with
    ``warmup=0`` (the simulator's default) that cost would be charged to whichever candidate is
    timed first. An error is ignored here: the timed calls raise it again, as that candidate's
    failure."""
    try:
        run()
    except Exception:  # noqa: BLE001 - reported by the candidate's own timing
        pass


def _synchronize() -> None:
    from ..runtime import driver
    driver.synchronize()


def default_timer(target: str):
    """CudaEventTimer on 'cuda', else WallTimer."""
    return CudaEventTimer() if target == "cuda" else WallTimer()


def copy_args(x):
    """``x`` with every tensor (torch, numpy) replaced by a copy of the same shape, strides and
    dtype (tuples, lists and dicts are walked): the arguments the candidates run on, so that a
    kernel writing its inputs or outputs in place never changes the caller's."""
    t = type(x)
    if t in (tuple, list):
        return t(copy_args(v) for v in x)
    if t is dict:
        return {k: copy_args(v) for k, v in x.items()}
    if t.__module__.startswith("torch") and hasattr(x, "clone"):
        return x.clone()
    if t.__module__ == "numpy" and hasattr(x, "copy") and hasattr(x, "strides"):
        import numpy as np
        out = np.empty_like(x, order="K")
        out[...] = x
        return out
    return x
