"""Runs the warps of the grid's CTAs as coroutines until all have exited.

Each warp is a Python generator. It runs until it must wait, and then yields a ``Wait``
describing what it waits for; the scheduler calls ``wait.begin(warp)`` once (a barrier records
the arrival there) and resumes the warp when ``wait.ready(warp)`` is true. Warps run in index
order, each until it waits or exits, so a run is deterministic. When every live warp of a CTA
waits and none is ready, nothing can ever change again: that is a deadlock, reported with each
warp's wait point (and which warps already exited). Before declaring a deadlock the scheduler asks
each waiting warp's ``Wait.force``: a warp polling an mbarrier (try_wait) may resume and see its
poll fail, a bounded number of times without any mbarrier changing, so a program that polls and
then does other work runs on, and a spin loop that can never succeed is still reported.

Spin loops. A ``scf.while`` that reads memory (sim/ops_control.py) yields a ``SpinWait`` every
``SPIN_ITERATIONS`` iterations, so a warp polling a flag in memory lets the others run. The wait
is ``idle`` when the loop's carried values and active lanes are unchanged since its previous
``SpinWait``. CTAs run one at a time (the CTAs of a thread-block cluster together, started as
one; one of them that cannot proceed while a peer still can is not deadlocked); when every live warp of the running CTAs is idle or
blocked for ``ADMIT_ROUNDS`` rounds, the next CTA of the grid is started beside them (as a GPU
keeps several CTAs resident), and a CTA that exits hands its place to the next one. With no CTA
left to start, ``SPIN_ROUNDS`` such rounds are a livelock, reported with each warp's spin loop
or wait point.
"""
from __future__ import annotations

from typing import Optional

from ..errors import BarrierError, DeadlockError, LivelockError
from ..ir.core import Operation
from .compiler import where

__all__ = ["Wait", "SpinWait", "SimulationInterrupted", "BarrierState", "BarrierWait",
           "barrier_arrive", "run_ctas", "run_cta", "SPIN_ITERATIONS", "ADMIT_ROUNDS",
           "SPIN_ROUNDS"]

SPIN_ITERATIONS = 64
"""Iterations of a memory-reading while loop between two yields to the scheduler."""
ADMIT_ROUNDS = 2
"""Scheduler rounds in which every live warp of the running CTAs is idle (spinning with unchanged
loop state) or blocked, before the next CTA of the grid is started beside them."""
SPIN_ROUNDS = 32
"""Such rounds, with no CTA left to start, before a livelock is reported (each round runs each
spinning warp ``SPIN_ITERATIONS`` more iterations)."""


class Wait:
    """Something a warp waits for. Subclasses implement ``begin``, ``ready`` and ``describe``;
    ``op`` is the waiting op (for its source location in deadlock reports)."""

    op: Optional[Operation] = None
    idle = False
    """True for a wait that marks no progress (a spin loop whose state did not change)."""
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


class SpinWait(Wait):
    """A warp preempted in the memory-reading while loop ``op``: ready at once. ``idle``: the
    loop's state (carried values, active lanes) is the same as at its previous preemption."""

    hint = ("A spinning warp waits for memory that no running warp will change: check that the "
            "warp meant to write the flag gets there (it may itself wait for the spinning warp, "
            "at a barrier or mbarrier), and that the flag is written with an atomic or store and "
            "read with an atomic (ws.atomic_add(flag, 0)) or fresh load in every iteration.")

    def __init__(self, op: Operation, idle: bool, iterations: int, idle_iterations: int):
        self.op = op
        self.idle = idle
        self.iterations = iterations
        self.idle_iterations = idle_iterations

    def ready(self, warp) -> bool:
        return True

    def describe(self) -> str:
        return (f"spinning in the while loop at {where(self.op)} ({self.iterations} iterations, "
                f"the last {self.idle_iterations} without a change of its loop state)")


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
    completed = len(state.arrived) == state.expected
    if completed:
        state.generation += 1
        state.arrived = []
    if cta.races is not None:
        cta.races.barrier(warp.index, bar_id, op.name == "nvvm.barrier", completed)
    return state, generation


_DONE, _PROGRESS, _IDLE, _STUCK = range(4)


class SimulationInterrupted(KeyboardInterrupt):
    """Ctrl-C (KeyboardInterrupt) during a simulated launch; the message lists where each warp
    of the running CTAs is in the kernel (file:line), so a hang can be located."""


def run_ctas(ctas, finished) -> None:
    """Run the CTAs from iterable ``ctas`` (each with its warps' ``coroutine`` set) to completion,
    one at a time unless spinning warps need more CTAs started beside them (see the module
    docstring); ``finished(cta)`` is called as each one exits. A KeyboardInterrupt becomes a
    ``SimulationInterrupted`` naming each warp's position."""
    resident: list = []
    try:
        _run_ctas(ctas, finished, resident)
    except KeyboardInterrupt as e:
        if isinstance(e, SimulationInterrupted):
            raise
        raise SimulationInterrupted(_interrupted(resident, e.__traceback__)) from None


def _ops_on(frames) -> list:
    """The IR ops that the simulator's step closures in ``frames`` (outermost first) execute."""
    ops = []
    for f in frames:
        loc = f.f_locals
        op = loc.get("op")
        site = loc.get("site")            # scf.while: its condition's line (ops_control.py)
        if not isinstance(op, Operation):
            if isinstance(site, Operation) and ops:
                ops[-1] = (ops[-1][0], site)
            continue
        pair = (op, site if isinstance(site, Operation) else op)
        if ops and ops[-1][0] is op:
            if pair[1] is not op:
                ops[-1] = pair
        else:
            ops.append(pair)
    return ops


_KINDS = {"scf.while": "the while loop", "scf.for": "the for loop", "scf.if": "the if",
          "func.call": "the call"}


def _name(pair) -> str:
    op, site = pair
    return f"{_KINDS.get(op.name, op.name)} at {where(site)}"


def _generator_frames(gen) -> list:
    frames = []
    while gen is not None and getattr(gen, "gi_frame", None) is not None:
        frames.append(gen.gi_frame)
        gen = gen.gi_yieldfrom
    return frames


def _position(ops: list) -> str:
    if not ops:
        return "not started"
    outer = [p for p in ops[:-1] if p[0].name in ("scf.for", "scf.while", "func.call")]
    text = "in " + _name(ops[-1])
    if outer:
        text += " (inside " + ", ".join(_name(p) for p in reversed(outer)) + ")"
    return text


def _interrupted(resident: list, tb) -> str:
    frames = []
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    lines = ["simulation interrupted (KeyboardInterrupt); where each warp was:"]
    for cta in resident:
        lines.append("  block ({},{},{}):".format(*cta.ctaid))
        for w in cta.warps:
            if w.done:
                state = "exited"
            elif w is cta.current and w.wait is None:
                state = "running " + _position(_ops_on(frames))
            elif w.wait is not None and w.wait is not _FORCED:
                state = ("" if isinstance(w.wait, SpinWait) else "waiting at ") + w.wait.describe()
            else:
                state = "ready, " + _position(_ops_on(_generator_frames(w.coroutine)))
            lines.append(f"    warp {w.index}: {state}")
    return "\n".join(lines)


def _run_ctas(ctas, finished, resident: list) -> None:
    pending = iter(ctas)
    _admit(pending, resident)
    idle_rounds = 0
    while resident:
        progressed = False
        stuck = []
        for cta in list(resident):
            state = _round(cta)
            if state == _DONE:
                resident.remove(cta)
                cta.exited = True
                finished(cta)
                if _cluster_left(cta, resident):
                    _admit(pending, resident)   # its place goes to the next CTA (or cluster)
                progressed = True
            elif state == _PROGRESS:
                progressed = True
            elif state == _STUCK:
                stuck.append(cta)
        for cta in stuck:        # a CTA of a cluster may wait for a peer that can still move
            if not _peer_moving(cta, stuck, resident):
                raise _deadlock(cta)
        if progressed:
            idle_rounds = 0
            continue
        idle_rounds += 1
        if idle_rounds >= ADMIT_ROUNDS and _admit(pending, resident):
            idle_rounds = 0
        elif idle_rounds >= SPIN_ROUNDS:
            raise _livelock(resident)


def _admit(pending, resident: list) -> bool:
    """Start the next item of ``pending``: a CTA, or a tuple of the CTAs of one cluster (started
    together: they may wait on each other)."""
    item = next(pending, None)
    if item is None:
        return False
    resident.extend(item if isinstance(item, tuple) else (item,))
    return True


def _cluster_left(cta, resident: list) -> bool:
    """``cta`` exited: is its whole cluster gone (so its place may go to the next one)?"""
    c = cta.cluster
    return c is None or not any(p in resident for p in c.ctas)


def _peer_moving(cta, stuck: list, resident: list) -> bool:
    """Whether a CTA of ``cta``'s cluster was not stuck this round (it may release ``cta``)."""
    c = cta.cluster
    return c is not None and any(p is not cta and p in resident and p not in stuck
                                 for p in c.ctas)


def run_cta(cta) -> None:
    """Run one CTA (its warps' ``coroutine`` set) to completion."""
    run_ctas((cta,), lambda _cta: None)


def _round(cta) -> int:
    """Resume each ready warp of ``cta`` once; what the round achieved."""
    live = 0
    progressed = idle = False
    for w in cta.warps:
        if w.done:
            continue
        live += 1
        wait = w.wait
        if wait is not None:
            if not wait.ready(w):
                continue
            w.wait = None
        cta.current = w
        try:
            wait = next(w.coroutine)
        except StopIteration:
            w.done = True
            progressed = True
            continue
        w.wait = wait
        wait.begin(w)
        if wait.idle:
            idle = True
        else:
            progressed = True
    if not live:
        return _DONE
    if progressed:
        return _PROGRESS
    forced = [w for w in cta.warps if not w.done and w.wait.force(w)]
    for w in forced:
        w.wait = _FORCED
    if forced:
        return _PROGRESS
    return _IDLE if idle else _STUCK


class _Resume(Wait):
    """The wait of a warp resumed by ``force``: ready at once."""

    def ready(self, warp) -> bool:
        return True


_FORCED = _Resume()


def _deadlock(cta) -> DeadlockError:
    x, y, z = cta.ctaid
    lines = [f"deadlock in block ({x},{y},{z}): every live warp is waiting and none can proceed"]
    first, hints = _warp_lines(cta, lines, "  ")
    lines.extend(hints)
    return DeadlockError("\n".join(lines), where=where(first) if first else None)


def _livelock(ctas) -> LivelockError:
    blocks = ", ".join("({},{},{})".format(*c.ctaid) for c in ctas)
    lines = [f"livelock in block{'s' if len(ctas) > 1 else ''} {blocks}: every live warp spins "
             f"without its loop state changing, or waits, for {SPIN_ROUNDS} rounds of "
             f"{SPIN_ITERATIONS} iterations, and no other CTA of the grid is left to start"]
    first, hints = None, []
    for cta in ctas:
        if len(ctas) > 1:
            lines.append("  block ({},{},{}):".format(*cta.ctaid))
        op, more = _warp_lines(cta, lines, "    " if len(ctas) > 1 else "  ")
        first = first or op
        hints.extend(h for h in more if h not in hints)
    lines.extend(hints)
    return LivelockError("\n".join(lines), where=where(first) if first else None)


def _warp_lines(cta, lines: list, indent: str) -> tuple:
    """Append each warp's state to ``lines``; returns (first waiting op, the waits' hints)."""
    first = None
    hints: list = []
    for w in cta.warps:
        if w.done:
            lines.append(f"{indent}warp {w.index}: exited (it can no longer arrive anywhere)")
            continue
        verb = "" if isinstance(w.wait, SpinWait) else "waiting at "
        lines.append(f"{indent}warp {w.index}: {verb}{w.wait.describe()}")
        first = first or w.wait.op
        if w.wait.hint not in hints:
            hints.append(w.wait.hint)
    return first, hints
