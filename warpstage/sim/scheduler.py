"""Runs the warps of one CTA as coroutines until all have exited.

Each warp is a Python generator. It runs until it must wait, and then yields a ``Wait``
describing what it waits for; the scheduler calls ``wait.begin(warp)`` once (a barrier records
the arrival there) and resumes the warp when ``wait.ready(warp)`` is true. Warps run in index
order, each until it waits or exits, so a run is deterministic. When every live warp waits and
none is ready, nothing can ever change again: that is a deadlock, reported with each warp's wait
point (and which warps already exited). Before declaring a deadlock the scheduler asks each
waiting warp's ``Wait.force``: a warp polling an mbarrier (try_wait) may resume and see its poll
fail, a bounded number of times without any mbarrier changing, so a program that polls and then
does other work runs on, and a spin loop that can never succeed is still reported.
"""
from __future__ import annotations

from typing import Optional

from ..errors import BarrierError, DeadlockError
from ..ir.core import Operation
from .compiler import where

__all__ = ["Wait", "BarrierState", "BarrierWait", "barrier_arrive", "run_cta"]


class Wait:
    """Something a warp waits for. Subclasses implement ``begin``, ``ready`` and ``describe``;
    ``op`` is the waiting op (for its source location in deadlock reports)."""

    op: Optional[Operation] = None
    hint = ("Make every warp that a barrier counts reach the same barrier id, the same number "
            "of times.")
    """The fix a deadlock report suggests for this kind of wait."""

    def begin(self, warp) -> None:
        """Called once, when the warp starts waiting."""

    def ready(self, warp) -> bool:
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError

    def force(self, warp) -> bool:
        """Called when no warp can proceed: may the warp resume anyway? A poll (try_wait) that
        would return false says yes a bounded number of times, so polling is not a deadlock
        unless it never ends."""
        return False


class BarrierState:
    """A named CTA barrier (bar.sync id): warps arrived in the current phase and its expected
    count; ``generation`` counts completed phases."""

    def __init__(self):
        self.generation = 0
        self.arrived: list[int] = []
        self.expected = 0
        self.first_op: Optional[Operation] = None


class BarrierWait(Wait):
    """A warp's arrival at ``bar.sync id[, count]``; ready once that phase completes."""

    def __init__(self, op: Operation, bar_id: int, threads: Optional[int]):
        self.op = op
        self.bar_id = bar_id
        self.threads = threads
        self.generation = -1
        self.state: Optional[BarrierState] = None

    def begin(self, warp) -> None:
        self.state, self.generation = barrier_arrive(warp, self.op, self.bar_id, self.threads)

    def ready(self, warp) -> bool:
        return self.state.generation > self.generation

    def describe(self) -> str:
        st = self.state
        want = "all warps" if self.threads is None else f"{self.threads} threads"
        return (f"nvvm.barrier id={self.bar_id} ({want}; {len(st.arrived)} of {st.expected} "
                f"warps arrived: {st.arrived}) at {where(self.op)}")


def barrier_arrive(warp, op: Operation, bar_id: int, threads: Optional[int]) -> tuple:
    """Record ``warp``'s arrival at named barrier ``bar_id`` (bar.sync or bar.arrive, expecting
    ``threads`` threads; None: the whole CTA). Returns (state, generation at arrival): the
    arrival's phase is complete once ``state.generation`` exceeds that generation."""
    cta = warp.cta
    what = "bar.sync" if op.name == "nvvm.barrier" else "bar.arrive"
    expected = cta.nwarps if threads is None else threads // 32
    if expected > cta.nwarps:
        raise BarrierError(
            f"{what} {bar_id} at {where(op)} waits for {threads} threads "
            f"({expected} warps) but the CTA has only {cta.nwarps} warps "
            f"({cta.nthreads} threads); it can never complete", where=where(op))
    state = cta.barriers.get(bar_id)
    if state is None:
        state = cta.barriers[bar_id] = BarrierState()
    if not state.arrived:
        state.expected = expected
        state.first_op = op
    elif state.expected != expected:
        raise BarrierError(
            f"barrier {bar_id}: warp {warp.index} arrives at {where(op)} expecting "
            f"{expected * 32} threads, but warps {state.arrived} arrived at "
            f"{where(state.first_op)} expecting {state.expected * 32}; every arrival at one "
            "barrier phase must use the same thread count", where=where(op))
    elif warp.index in state.arrived:
        raise BarrierError(
            f"barrier {bar_id}: warp {warp.index} arrives at {where(op)} a second time in one "
            f"phase (warps arrived so far: {state.arrived}, {state.expected} expected); a warp "
            "that arrives with bar.arrive does not wait, so it ran ahead of the warps the "
            "barrier waits for. Give the producer back-pressure: a second barrier that it "
            "syncs on and the consumers arrive at.", where=where(op))
    generation = state.generation
    state.arrived.append(warp.index)
    if len(state.arrived) == state.expected:
        state.generation += 1
        state.arrived = []
    return state, generation


def run_cta(cta) -> None:
    """Run ``cta.warps`` (each with ``coroutine`` set) to completion."""
    warps = cta.warps
    while True:
        live = 0
        progressed = False
        for w in warps:
            if w.done:
                continue
            live += 1
            wait = w.wait
            if wait is not None:
                if not wait.ready(w):
                    continue
                w.wait = None
            try:
                wait = next(w.coroutine)
            except StopIteration:
                w.done = True
                progressed = True
                continue
            w.wait = wait
            wait.begin(w)
            progressed = True
        if not live:
            return
        if not progressed:
            forced = [w for w in warps if not w.done and w.wait.force(w)]
            if not forced:
                raise _deadlock(cta)
            for w in forced:
                w.wait = _FORCED


class _Resume(Wait):
    """The wait of a warp resumed by ``force``: ready at once."""

    def ready(self, warp) -> bool:
        return True


_FORCED = _Resume()


def _deadlock(cta) -> DeadlockError:
    x, y, z = cta.ctaid
    lines = [f"deadlock in block ({x},{y},{z}): every live warp is waiting and none can proceed"]
    first = None
    hints: list = []
    for w in cta.warps:
        if w.done:
            lines.append(f"  warp {w.index}: exited (it can no longer arrive anywhere)")
        else:
            lines.append(f"  warp {w.index}: waiting at {w.wait.describe()}")
            first = first or w.wait.op
            if w.wait.hint not in hints:
                hints.append(w.wait.hint)
    lines.extend(hints)
    return DeadlockError("\n".join(lines), where=where(first) if first else None)
