"""mbarrier objects with real phase tracking (PTX ISA "Parallel Synchronization and
Communication Instructions: mbarrier").

An mbarrier is an 8-byte object in shared memory; the simulator keeps its state beside the
CTA's shared memory, keyed by its byte offset (``cta.ext['mbarrier']``):

- ``phase``: the current phase number (its parity is ``phase & 1``);
- ``expected``: arrivals per phase (``mbarrier.init``'s count);
- ``pending``: arrivals still missing in the current phase;
- ``tx``: the transaction count (bytes expected minus bytes completed; may go negative).

The current phase completes when ``pending == 0 and tx == 0``: ``phase += 1`` and ``pending =
expected``. Every executing lane is one thread: a warp whose 32 lanes run ``arrive`` arrives
32 times; ``arrive(count)`` arrives ``count`` times per lane; ``expect_tx(n)`` adds n per lane.
Arrivals beyond ``pending`` carry over into the next phase only when the phase completed;
arriving while the phase waits for transaction bytes with no arrival pending is an error.
The state token ``arrive`` returns is the phase number before the op's arrivals.

``try_wait_parity(p)`` is true iff the phase with parity p has completed, i.e. the current
phase's parity differs from p (so waiting with parity 1 on a fresh mbarrier succeeds at once:
the standard "empty" barrier start). ``wait_parity`` blocks the warp until that holds for every
executing lane; a deadlock report lists it with the mbarrier's state. A failed ``try_wait``
suspends the warp until an mbarrier of the CTA changes; when nothing else can run it returns
false instead (``MAX_IDLE_POLLS`` times in a row at most), so a spin loop on try_wait neither
hangs the simulator nor hides a deadlock, and code that polls and then works runs on.

Errors: an mbarrier address that is misaligned (not a multiple of 8), outside shared memory,
or not initialized (or invalidated); ``init`` on an mbarrier whose current phase has arrivals or
transaction bytes outstanding; a count outside [1, 2^20 - 1]; a transaction count leaving
[-(2^20 - 1), 2^20 - 1]; an mbarrier left with a negative transaction count when the CTA exits
(more TMA bytes completed than announced, e.g. a copy issued by every thread; ``ops_tma``
reports the lanes of one copy instruction crossing into the next phase at once). Deadlock
reports name the bytes a phase still waits for, or got beyond the announced ones. With the race
detector on, init/inval are writes of the 8 bytes and the other ops atomic accesses.
"""
from __future__ import annotations

import numpy as np

from ..core.source import format_location
from ..errors import OutOfBoundsError, SimulatorError
from ..ir.core import Operation
from .compiler import where
from .dtypes import LANES
from .registry import handler
from .scheduler import Wait

__all__ = ["Mbarrier", "MbarrierTable", "table", "lookup", "arrive", "complete_tx", "OBSERVERS"]

_MAX_COUNT = (1 << 20) - 1
MAX_IDLE_POLLS = 64
OBSERVERS: list = []
"""``f(warp, table, address)`` called when a wait or try_wait of ``warp`` sees a completed phase of
the mbarrier at ``address`` (the TMA rules deliver the copies completed on it there)."""
"""Failed try_waits a warp may make in a row, with no warp able to proceed and no mbarrier
changing, before the simulator reports a deadlock (a spin loop that can never succeed)."""


class Mbarrier:
    """The state of one initialized mbarrier (see the module docstring)."""

    __slots__ = ("address", "phase", "expected", "pending", "tx", "init_op", "tx_op")

    def __init__(self, address: int, count: int, init_op: Operation):
        self.address = address
        self.phase = 0
        self.expected = count
        self.pending = count
        self.tx = 0
        self.init_op = init_op
        self.tx_op = None          # the last op that completed transaction bytes on it

    def describe(self) -> str:
        if self.tx > 0:
            tx = (f"tx-count {self.tx} (waiting for {self.tx} more bytes of TMA/bulk copies: "
                  "announced with expect_tx but not completed; a copy not issued, issued on "
                  "another mbarrier, or smaller than announced)")
        elif self.tx < 0:
            tx = (f"tx-count {self.tx} ({-self.tx} bytes of TMA/bulk copies completed beyond "
                  "what expect_tx announced"
                  + (f", the last by the {self.tx_op.name} at {where(self.tx_op)}"
                     if self.tx_op is not None else "")
                  + "; the phase cannot complete until more bytes are announced: announce "
                  "each copy's bytes once, and issue it from one thread)")
        else:
            tx = "tx-count 0"
        return (f"the mbarrier at shared offset {self.address:#x} is in phase {self.phase} "
                f"(parity {self.phase & 1}) with {self.pending} of {self.expected} arrivals "
                f"pending and {tx} (initialized at {where(self.init_op)})")


class MbarrierTable:
    """The CTA's mbarriers by shared-memory offset; ``epoch`` counts state changes."""

    def __init__(self):
        self.bars: dict[int, Mbarrier] = {}
        self.invalidated: dict[int, Operation] = {}
        self.epoch = 0
        self.idle_polls: dict[int, tuple] = {}   # warp -> (epoch, failed polls forced at it)


def table(cta) -> MbarrierTable:
    t = cta.ext.get("mbarrier")
    if t is None:
        t = cta.ext["mbarrier"] = MbarrierTable()
        cta.ext.setdefault("at_exit", []).append(lambda: _at_exit(t))
    return t


def _at_exit(tab: MbarrierTable) -> None:
    """The CTA exits: an mbarrier whose phase got more transaction bytes than announced (a
    negative tx-count) means copies nobody announced, e.g. issued by every thread."""
    for bar in tab.bars.values():
        if bar.tx < 0 and bar.tx_op is not None:
            op = bar.tx_op
            raise SimulatorError(
                f"{op.name} at {where(op)}: when the CTA exited, {bar.describe()}. More TMA "
                "bytes were completed on the mbarrier than announced: issue TMA from one elected "
                "thread (if ws.arch.elect_one(): ...) and announce its bytes once "
                "(arrive_expect_tx).", where=where(op))


def _error(op: Operation, w, message: str, fix: str) -> SimulatorError:
    """The SimulatorError for ``op`` run by warp ``w``: what, the kernel line's excerpt, Fix."""
    excerpt = format_location(op.loc if op is not None else None)
    return SimulatorError(f"{op.name} at {where(op)} (warp {w.index}): {message}\n"
                          + (excerpt + "\n" if excerpt else "") + f"Fix: {fix}", where=where(op))


def _address(op: Operation, w, addr: int) -> int:
    size = w.cta.smem.bytes.size
    if addr % 8:
        raise _error(op, w, f"mbarrier address {addr:#x} is not 8-byte aligned; an mbarrier is a "
                            ".b64 object.", "keep mbarriers in a ws.smem.MbarrierArray (8-byte "
                            "aligned storage).")
    if not 0 <= addr <= size - 8:
        raise OutOfBoundsError(f"{op.name} at {where(op)} (warp {w.index}): mbarrier address "
                               f"{addr:#x} is outside the CTA's {size}-byte shared memory "
                               f"[0, {size:#x})", where=where(op))
    return addr


def lookup(op: Operation, w, tab: MbarrierTable, addr: int) -> Mbarrier:
    """The initialized mbarrier at shared offset ``addr``, or a SimulatorError for ``op``."""
    bar = tab.bars.get(_address(op, w, addr))
    if bar is None:
        gone = tab.invalidated.get(addr)
        why = (f"it was invalidated at {where(gone)}" if gone is not None
               else "no mbarrier.init ran there")
        raise _error(op, w, f"no mbarrier at shared offset {addr:#x}: {why}.",
                     "initialize it first, from one thread (bar.init(count) under `if "
                     "ws.arch.thread_idx()[0] == 0:`), then ws.arch.fence_mbarrier_init() and "
                     "ws.arch.sync_threads() before any thread uses it.")
    return bar


def _complete(tab: MbarrierTable, bar: Mbarrier) -> None:
    if bar.pending == 0 and bar.tx == 0:
        bar.phase += 1
        bar.pending = bar.expected


def _touch(op: Operation, w, addr: int, write: bool = False) -> None:
    """The race detector (when on): ``w`` accessed the mbarrier's 8 bytes, atomically (arrive,
    expect_tx, wait) or as a plain write (init, inval)."""
    if w is not None and w.cta.races is not None:
        w.cta.races.mbarrier_access(w, addr, int(np.argmax(w.mask)), op, write)


def arrive(op: Operation, w, tab: MbarrierTable, bar: Mbarrier, n: int,
           local: bool = True) -> int:
    """``n`` arrivals on ``bar``; returns the phase before them (the state token). ``local``:
    ``bar`` is in ``w``'s CTA (False: a peer CTA's, through shared::cluster; the race detector
    does not follow it)."""
    if local:
        _touch(op, w, bar.address)
    token = bar.phase
    while n > 0:
        if bar.pending == 0:
            raise _error(op, w, f"arrival on a phase with no arrival pending (it waits for "
                                f"{bar.tx} transaction bytes); {bar.describe()}.",
                         "give init the number of arrivals each phase gets (its count is too "
                         "small for this many arrivals).")
        take = min(n, bar.pending)
        bar.pending -= take
        n -= take
        _complete(tab, bar)
    tab.epoch += 1
    if local and w.cta.races is not None:   # the race detector: an arrival releases the clock
        w.cta.races.mbarrier_release(w.index, bar.address, bar.phase != token)
    return token


def complete_tx(op: Operation, w, tab: MbarrierTable, bar: Mbarrier, nbytes: int,
                local: bool = True) -> None:
    """The asynchronous proxy completed ``nbytes`` of transactions on ``bar`` (TMA, bulk copy);
    ``local``: ``bar`` is in ``w``'s CTA (False: a multicast's peer CTA)."""
    phase = bar.phase
    bar.tx_op = op
    _add_tx(op, w, bar, -nbytes)
    _complete(tab, bar)
    tab.epoch += 1
    races = w.cta.races if w is not None and local else None
    if races is not None:         # the bytes landed as writes of warp w: release, not advance
        races.mbarrier_release(w.index, bar.address, bar.phase != phase, advance=False)


def _add_tx(op, w, bar: Mbarrier, nbytes: int) -> None:
    bar.tx += nbytes
    if not -_MAX_COUNT <= bar.tx <= _MAX_COUNT:
        raise _error(op, w, f"the transaction count left [-(2^20-1), 2^20-1]; {bar.describe()}",
                     "expect_tx at most 2^20 - 1 bytes per phase (split the copy).")


def _groups(s, w, slots) -> list:
    """[(address, [per-lane operand values...])] over the executing lanes, in lane order."""
    active = w.mask
    col = s[slots[0]][active]
    extra = [s[k][active].tolist() for k in slots[1:]]
    if col.size and not np.count_nonzero(col != col[0]):     # one address (the usual case)
        return [(col[0].item(), list(zip(*extra)) if extra else [()] * col.size)]
    addrs = col.tolist()
    out: dict = {}
    for i, a in enumerate(addrs):
        out.setdefault(a, []).append(tuple(e[i] for e in extra))
    return list(out.items())


@handler("mbarrier.init")
def _init(op: Operation, cx):
    slots = cx.slots(op.operands)

    def init(s, w):
        tab = table(w.cta)
        for addr, vals in _groups(s, w, slots):
            counts = {v[0] for v in vals}
            if len(counts) != 1:
                raise _error(op, w, f"lanes initialize the mbarrier at {addr:#x} with different "
                                    f"counts {sorted(counts)}", "initialize each mbarrier from "
                                    "one thread, with one count.")
            count = counts.pop()
            if not 1 <= count <= _MAX_COUNT:
                raise _error(op, w, f"arrival count {count} is outside [1, 2^20 - 1]",
                             "init(count) with 1 <= count <= 2^20 - 1.")
            old = tab.bars.get(_address(op, w, addr))
            if old is not None and (old.pending != old.expected or old.tx != 0):
                raise _error(op, w, f"re-initializing an mbarrier in use: {old.describe()}.",
                             "initialize each mbarrier once, from one thread (e.g. under "
                             "`if ws.arch.thread_idx()[0] == 0:`).")
            _touch(op, w, addr, write=True)
            tab.bars[addr] = Mbarrier(addr, count, op)
            tab.invalidated.pop(addr, None)
        tab.epoch += 1
    return init


def _arrive_handler(op: Operation, cx, with_tx: bool):
    slots = cx.slots(op.operands)
    r = cx.slot(op.result)
    counted = len(op.operands) == 2 and not with_tx

    def arrive_step(s, w):
        tab = table(w.cta)
        token = np.zeros(LANES, np.uint64)
        active = w.mask
        for addr, vals in _groups(s, w, slots):
            bar = lookup(op, w, tab, addr)
            if with_tx:
                _add_tx(op, w, bar, sum(v[0] for v in vals))
            n = sum(v[0] for v in vals) if counted else len(vals)
            if counted and any(not 1 <= v[0] <= _MAX_COUNT for v in vals):
                raise _error(op, w, "arrive count outside [1, 2^20 - 1]",
                             "arrive(count) with 1 <= count <= 2^20 - 1.")
            phase = arrive(op, w, tab, bar, n)
            token[active & (s[slots[0]] == addr)] = phase
        s[r] = token
    return arrive_step


@handler("mbarrier.arrive")
def _arrive(op: Operation, cx):
    return _arrive_handler(op, cx, with_tx=False)


@handler("mbarrier.arrive_expect_tx")
def _arrive_expect_tx(op: Operation, cx):
    return _arrive_handler(op, cx, with_tx=True)


@handler("mbarrier.expect_tx")
def _expect_tx(op: Operation, cx):
    slots = cx.slots(op.operands)

    def expect_tx(s, w):
        tab = table(w.cta)
        for addr, vals in _groups(s, w, slots):
            _touch(op, w, addr)
            _add_tx(op, w, lookup(op, w, tab, addr), sum(v[0] for v in vals))
        tab.epoch += 1
    return expect_tx


@handler("mbarrier.inval")
def _inval(op: Operation, cx):
    bar_slot = cx.slot(op.operands[0])

    def inval(s, w):
        tab = table(w.cta)
        for addr, _ in _groups(s, w, [bar_slot]):
            lookup(op, w, tab, addr)
            _touch(op, w, addr, write=True)
            del tab.bars[addr]
            tab.invalidated[addr] = op
        tab.epoch += 1
    return inval


def _completed(op, w, tab, pairs) -> bool:
    return all((lookup(op, w, tab, a).phase & 1) != (p & 1) for a, p in pairs)


def _pairs(s, w, slots) -> list:
    active = w.mask
    return sorted(set(zip(s[slots[0]][active].tolist(), s[slots[1]][active].tolist())))


class MbarrierWait(Wait):
    """A warp blocked in mbarrier.wait_parity until each (address, parity) phase completes."""

    hint = ("Check each mbarrier wait's parity (a consumer waits on a full barrier starting at "
            "parity 0, a producer on an empty barrier starting at parity 1; both flip each time "
            "around the ring) and that init's count equals the arrivals each phase gets (every "
            "executing thread arrives once), and that expect_tx announces exactly the bytes the "
            "phase's TMA/bulk copies move, issued once (from one thread).")
    label = "mbarrier.wait_parity"

    def __init__(self, op: Operation, tab: MbarrierTable, pairs: list):
        self.op = op
        self.tab = tab
        self.pairs = pairs

    def ready(self, warp) -> bool:
        return _completed(self.op, warp, self.tab, self.pairs)

    def describe(self) -> str:
        parts = []
        for addr, parity in self.pairs:
            bar = self.tab.bars.get(addr)
            state = bar.describe() if bar is not None else "the mbarrier was invalidated"
            parts.append(f"waiting for the phase with parity {parity & 1} to complete; {state}")
        return f"{self.label} at {where(self.op)}: " + "; ".join(parts)


class PollWait(MbarrierWait):
    """A warp whose try_wait failed, suspended as the GPU suspends a failing try_wait: it resumes
    when an mbarrier of the CTA changes, or, when no warp can proceed, by ``force`` (its poll
    then fails), at most ``MAX_IDLE_POLLS`` times in a row while no mbarrier changes."""

    def begin(self, warp) -> None:
        self.epoch = self.tab.epoch

    def ready(self, warp) -> bool:
        return self.tab.epoch != self.epoch

    def force(self, warp) -> bool:
        tab = self.tab
        epoch, count = tab.idle_polls.get(warp.index, (None, 0))
        count = count + 1 if epoch == tab.epoch else 1
        tab.idle_polls[warp.index] = (tab.epoch, count)
        return count <= MAX_IDLE_POLLS

    @property
    def label(self) -> str:
        return (f"mbarrier.try_wait_parity (a polling loop: {MAX_IDLE_POLLS} failed polls while "
                "no mbarrier changed)")


@handler("mbarrier.try_wait_parity", "mbarrier.try_wait_parity_hint", blocking=True)
def _try_wait(op: Operation, cx):
    slots = cx.slots(op.operands)
    r = cx.slot(op.result)

    def poll(s, w, tab):
        addrs, parity = s[slots[0]], s[slots[1]]
        result = np.zeros(LANES, np.bool_)
        for addr, p in _pairs(s, w, slots):
            ok = (lookup(op, w, tab, addr).phase & 1) != (p & 1)
            result[w.mask & (addrs == addr) & (parity == p)] = ok
        return result

    def try_wait(s, w):
        tab = table(w.cta)
        if w.cta.races is not None:
            for addr, _ in _pairs(s, w, slots):
                _touch(op, w, addr)
        result = poll(s, w, tab)
        if not result[w.mask].all():
            # the GPU suspends a failing try_wait for a while; here: until something changed
            yield PollWait(op, tab, _pairs(s, w, slots))
            result = poll(s, w, tab)
        if OBSERVERS:
            _observe(w, tab, s[slots[0]][w.mask & result].tolist())
        s[r] = result
        if w.cta.races is not None and result[w.mask].any():   # a completed phase: acquire
            w.cta.races.mbarrier_acquire(w.index, s[slots[0]][w.mask & result].tolist())
    return try_wait


@handler("mbarrier.wait_parity", blocking=True)
def _wait(op: Operation, cx):
    slots = cx.slots(op.operands)

    def wait(s, w):
        tab = table(w.cta)
        pairs = _pairs(s, w, slots)
        if w.cta.races is not None:
            for addr, _ in pairs:
                _touch(op, w, addr)
        if not _completed(op, w, tab, pairs):
            yield MbarrierWait(op, tab, pairs)
        if OBSERVERS:
            _observe(w, tab, [a for a, _ in pairs])
        if w.cta.races is not None:   # the race detector: the completed phases are acquired
            w.cta.races.mbarrier_acquire(w.index, [a for a, _ in pairs])
    return wait


def _observe(w, tab: MbarrierTable, addresses) -> None:
    for addr in sorted(set(addresses)):
        for f in OBSERVERS:
            f(w, tab, addr)
