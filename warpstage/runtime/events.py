"""Timing GPU work with CUDA events (the autotuner's timer, warpstage/tune/timing.py).

``time_launches(run, warmup, rep)`` calls ``run()`` (which launches kernels) ``warmup`` times,
then ``rep`` times between a pair of events each, and returns the ``rep`` elapsed times in
milliseconds. The events are recorded on the legacy default stream (0), which orders against
every blocking stream, torch's default stream included, so the pair brackets the launches
whatever stream they went to. CUDA driver API: ``cuEventCreate``, ``cuEventRecord``,
``cuEventSynchronize``, ``cuEventElapsedTime`` (resolution about 0.5 us, CUDA Driver API
reference, "Event Management").
"""
from __future__ import annotations

from typing import Callable, List

from . import driver

__all__ = ["time_launches"]


def time_launches(run: Callable[[], object], warmup: int, rep: int, stream: int = 0) -> List[float]:
    """The ``rep`` per-call times of ``run()`` in milliseconds, after ``warmup`` untimed calls.
    Raises ``DeviceError`` for a failed driver call (a trapped kernel surfaces here, at the
    synchronization)."""
    d = driver.cuda()
    driver.context()
    for _ in range(warmup):
        run()
    pairs = []
    for _ in range(rep):
        err, start = d.cuEventCreate(0)
        driver.check(err, "creating a CUDA event")
        err, stop = d.cuEventCreate(0)
        driver.check(err, "creating a CUDA event")
        pairs.append((start, stop))
    try:
        for start, stop in pairs:
            driver.check(d.cuEventRecord(start, stream)[0], "recording a CUDA event")
            run()
            driver.check(d.cuEventRecord(stop, stream)[0], "recording a CUDA event")
        times = []
        for start, stop in pairs:
            driver.check(d.cuEventSynchronize(stop)[0], "waiting for the timed launches")
            err, ms = d.cuEventElapsedTime(start, stop)
            driver.check(err, "reading a CUDA event's elapsed time")
            times.append(float(ms))
        return times
    finally:
        for pair in pairs:
            for ev in pair:
                d.cuEventDestroy(ev)
