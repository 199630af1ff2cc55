"""The simulator's optional shared-memory race detector (docs/simulator.md, "Race detector").

Off by default: it costs time. On with ``WARPSTAGE_SIM_RACES=1``, ``ws.set_target("sim",
races=True)`` or ``sim.run(..., races=True)``. A launch with races on gives each CTA a
``CheckedSharedMemory``, whose ``load``/``store`` also check and record the access, and a
``RaceState`` in ``cta.races`` (None when off), so the unchecked path pays nothing per access.

Happens-before with vector clocks. ``vc[w]`` (an int32 per warp of the CTA) is what warp w has
seen of each warp's progress; ``vc[w, w]`` is w's own epoch, which advances after each release.
An access made by warp u at epoch e is ordered before warp w's access iff ``e <= vc[w, u]``.

- bar.sync / bar.arrive: every arriving warp releases its clock into the barrier phase; when the
  phase completes, the warps that arrived with bar.sync acquire the join (bar.arrive only
  releases).
- mbarrier arrivals (arrive, arrive_expect_tx, cp.async.mbarrier.arrive) release the arriving
  warp's clock into the mbarrier; ``complete_tx`` (TMA bytes landing) releases the issuing warp's
  clock without advancing it; a completing phase leaves a snapshot, which wait_parity and a
  successful try_wait acquire.
- cp.async data lands at the wait that makes it visible (wait_group, wait_all,
  cp.async.mbarrier.arrive): a write by the issuing warp at that point.

Shadow state per shared byte: the last plain write (warp, epoch, location), and per warp the last
read and the last atomic (epoch, location). Reported, as a ``RaceError`` naming both accesses:
a read or write not ordered after another warp's write; a write not ordered after another warp's
read; plain accesses and atomics of different warps not ordered (atomics do not race with each
other); two lanes of one warp storing different values to one byte in one instruction (the GPU
keeps one, unspecified which). Different lanes of one warp in different instructions are ordered:
the simulator runs a warp's lanes in lockstep (the GPU's independent thread scheduling needs
``__syncwarp`` for that, which this detector does not model). Synchronization through memory
(flags, atomics with fences) is not modelled either: data handed over that way in shared memory
is reported.

mbarriers: ``mbarrier.init``/``inval`` are plain writes of the object's 8 bytes, arrive /
expect_tx / wait / try_wait atomic accesses (``RaceState.mbarrier_access``), so a use by a warp
that no barrier orders after the init is a race.

The async proxy: for the last write of each byte, ``f_epoch`` is -1 if the async proxy made it,
else the epoch of its writer's first ``fence.proxy.async`` after it (0 while unfenced; set by
``proxy_fence``). An async-proxy read (``note_read(..., async_proxy=True)``: TMA store sources,
wgmma operands) of a generic write with no such fence ordered before the read is reported;
async-proxy writes (TMA / bulk copies, ``note_write(..., async_proxy=True)``) need none. These
checks live in ``races_async.py``.

Hooks for ops that access shared memory without ``SharedMemory.load``/``store`` (TMA writes,
wgmma reads): ``note_write(cta, offsets, nbytes, warp, op)`` / ``note_read(...)``, no-ops when
the detector is off. Ops going through ``load``/``store`` pass ``hint=[None, op]`` (or
``[None, op, lanes]``) so that accesses are attributed to their op; without it the op is
looked up in the calling step's frame.
"""
from __future__ import annotations

import sys
from typing import Optional

import numpy as np

from ..errors import RaceError
from ..ir import Trait, ops_with
from ..ir.core import Operation
from .compiler import where
from .dtypes import LANES
from .memory import SharedMemory
from .races_async import ATOMIC, READ, WRITE, AsyncChecks, _span, fix_text

__all__ = ["RaceState", "CheckedSharedMemory", "note_read", "note_write", "READ", "WRITE",
           "ATOMIC"]

_ATOMIC_OPS = ops_with(Trait.ATOMIC)
_ALL_LANES = np.arange(LANES, dtype=np.int64)
_ALL_LANES.flags.writeable = False


class RaceState(AsyncChecks):
    """Vector clocks and per-byte shadow state of one CTA (see the module docstring)."""

    def __init__(self, cta, size: int):
        n = cta.nwarps
        self.cta = cta
        self.vc = np.eye(n, dtype=np.int32)
        self.w_warp = np.zeros(size, np.int16)
        self.w_epoch = np.zeros(size, np.int32)     # epoch 0: never written
        self.w_loc = np.zeros(size, np.int32)
        self.r_epoch = np.zeros((n, size), np.int32)
        self.r_loc = np.zeros((n, size), np.int32)
        self.a_epoch: Optional[np.ndarray] = None   # allocated at the first shared atomic
        self.a_loc: Optional[np.ndarray] = None
        self._ops: list = [None]
        self._op_ids: dict = {}
        self._bars: dict = {}      # barrier id -> [joined clock, warps that arrived with bar.sync]
        self._mbar_acc: dict = {}  # mbarrier offset -> clock released into it so far
        self._mbar_done: dict = {}  # mbarrier offset -> that clock when its last phase completed
        # for the last write of each byte (w_*): the epoch of its writer's first
        # fence.proxy.async after it (0: none yet; -1: an async-proxy write, needing none)
        self.f_epoch = np.zeros(size, np.int32)
        self._mbar_atomics: dict = {}  # mbarrier offset -> (epoch, location) per warp
        self._unfenced = np.zeros(n, np.bool_)     # per warp: has generic writes not fenced

    # -- synchronization ------------------------------------------------------------------------
    def barrier(self, wi: int, bar_id: int, sync: bool, completed: bool) -> None:
        """Warp ``wi`` arrived at barrier ``bar_id`` (bar.sync if ``sync``, else bar.arrive);
        ``completed``: its arrival completed the phase."""
        entry = self._bars.get(bar_id)
        if entry is None:
            entry = self._bars[bar_id] = [np.zeros(self.vc.shape[0], np.int32), []]
        acc, syncing = entry
        vc = self.vc
        np.maximum(acc, vc[wi], out=acc)
        vc[wi, wi] += 1
        if sync:
            syncing.append(wi)
        if completed:
            for u in syncing:
                np.maximum(vc[u], acc, out=vc[u])
            acc[:] = 0
            syncing.clear()

    def mbarrier_release(self, wi: Optional[int], addr: int, completed: bool,
                         advance: bool = True) -> None:
        """Warp ``wi`` released into the mbarrier at ``addr`` (None: nobody, e.g. bytes landing
        with no warp to name); ``completed``: a phase completed."""
        acc = self._mbar_acc.get(addr)
        if acc is None:
            acc = self._mbar_acc[addr] = np.zeros(self.vc.shape[0], np.int32)
        if wi is not None:
            np.maximum(acc, self.vc[wi], out=acc)
        if completed:
            self._mbar_done[addr] = acc.copy()
        if wi is not None and advance:
            self.vc[wi, wi] += 1

    def mbarrier_acquire(self, wi: int, addrs) -> None:
        """Warp ``wi`` observed completed phases of the mbarriers at ``addrs``."""
        row = self.vc[wi]
        for a in addrs:
            done = self._mbar_done.get(a)
            if done is not None:
                np.maximum(row, done, out=row)

    # -- accesses -------------------------------------------------------------------------------
    def access(self, kind: str, warp, starts: np.ndarray, k: int, lanes: np.ndarray,
               op: Optional[Operation]) -> None:
        """Check and record ``kind`` accesses of ``k`` bytes at each offset of ``starts`` by
        ``warp`` (``lanes[i]`` made access i), executing ``op``."""
        if k == 1:
            idx, lane_b = starts, lanes
        else:
            idx = (starts[:, None] + _span(k)).ravel()
            lane_b = np.repeat(lanes, k)
        wi = warp.index
        clock = self.vc[wi]
        # an epoch recorded by warp wi itself never exceeds vc[wi, wi]: no self-races
        bad = self.w_epoch[idx] > clock[self.w_warp[idx]]
        if bad.any():
            j = int(np.argmax(bad))
            u = int(self.w_warp[idx[j]])
            self._report(WRITE, u, self.w_loc[idx], kind, warp, op, idx, lane_b, k, j, bad)
        if kind != READ:
            self._against(READ, self.r_epoch, self.r_loc, kind, warp, op, idx, lane_b, k, clock)
        if kind != ATOMIC and self.a_epoch is not None:
            self._against(ATOMIC, self.a_epoch, self.a_loc, kind, warp, op, idx, lane_b, k, clock)
        loc = (self._op_id(op) << 5) | lane_b
        e = clock[wi]
        if kind == READ:
            self.r_epoch[wi, idx] = e
            self.r_loc[wi, idx] = loc
        elif kind == WRITE:
            self.w_warp[idx] = wi
            self.w_epoch[idx] = e
            self.w_loc[idx] = loc
            self.f_epoch[idx] = 0          # a generic write, unfenced (note_write: or async)
            self._unfenced[wi] = True
        else:
            if self.a_epoch is None:
                self.a_epoch = np.zeros_like(self.r_epoch)
                self.a_loc = np.zeros_like(self.r_loc)
            self.a_epoch[wi, idx] = e
            self.a_loc[wi, idx] = loc

    def _against(self, earlier: str, epochs, locs, kind, warp, op, idx, lane_b, k, clock):
        unordered = epochs[:, idx] > clock[:, None]
        if unordered.any():
            cols = unordered.any(axis=0)
            j = int(np.argmax(cols))
            u = int(np.argmax(unordered[:, j]))
            self._report(earlier, u, locs[u, idx], kind, warp, op, idx, lane_b, k, j,
                         unordered[u])

    def lane_conflict(self, warp, starts: np.ndarray, values: np.ndarray, lanes: np.ndarray,
                      op: Optional[Operation]) -> None:
        """Two lanes of one store writing different values to the same bytes."""
        if starts.size < 2:
            return
        order = np.argsort(starts, kind="stable")
        s = starts[order]
        dup = np.flatnonzero(s[1:] == s[:-1])
        if dup.size == 0:
            return
        raw = np.ascontiguousarray(values).view(np.dtype(f"u{values.dtype.itemsize}"))[order]
        differ = dup[raw[dup] != raw[dup + 1]]
        if differ.size == 0:
            return
        i = int(differ[0])
        la, lb = int(lanes[order[i]]), int(lanes[order[i + 1]])
        lo = int(s[i])
        hi = lo + values.dtype.itemsize
        at = where(op)
        x, y, z = self.cta.ctaid
        raise RaceError(
            f"shared-memory race in block ({x},{y},{z}) on bytes [{lo:#x}, {hi:#x}): lanes {la} "
            f"and {lb} of warp {warp.index} store different values ({int(raw[i]):#x} and "
            f"{int(raw[i + 1]):#x}) there in one instruction at {at}; the GPU keeps one of them, "
            "unspecified which. Fix: give each lane its own address, or let one lane store "
            "(e.g. under `if lane == 0:`).", where=at,
            accesses=((WRITE, warp.index, la, (lo, hi), at), (WRITE, warp.index, lb, (lo, hi), at)))

    # -- reports --------------------------------------------------------------------------------
    def _op_id(self, op) -> int:
        i = self._op_ids.get(id(op))
        if i is None:
            i = self._op_ids[id(op)] = len(self._ops)
            self._ops.append(op)
        return i

    def _report(self, earlier, u, earlier_locs, kind, warp, op, idx, lane_b, k, j, bad):
        """Raise the RaceError for position ``j`` of the current access (``bad``: positions that
        conflict; ``earlier_locs``: the earlier accesses' locations at each position)."""
        loc = int(earlier_locs[j])
        j0 = j - j % k
        same = [p for p in range(j0, j0 + k) if bad[p] and int(earlier_locs[p]) == loc]
        lo, hi = int(idx[same[0]]), int(idx[same[-1]]) + 1
        first_op, first_lane = self._ops[loc >> 5], loc & 31
        lane = int(lane_b[j])
        first = (earlier, u, first_lane, (lo, hi), where(first_op))
        second = (kind, warp.index, lane, (lo, hi), where(op))
        x, y, z = self.cta.ctaid
        lines = [f"shared-memory race in block ({x},{y},{z}) on bytes [{lo:#x}, {hi:#x}) of "
                 "shared memory:"]
        for what, wi, ln, _, at in (first, second):
            tx, ty, tz = self.cta.warps[wi].thread(ln)
            lines.append(f"  {what} by warp {wi}, lane {ln} (thread ({tx},{ty},{tz})) at {at}")
        lines.append(f"No barrier, mbarrier wait or other synchronization orders them: the "
                     f"{kind} is not ordered after the {earlier}. "
                     + fix_text(first_op, op, earlier, kind))
        raise RaceError("\n".join(lines), where=where(op), accesses=(first, second))


class CheckedSharedMemory(SharedMemory):
    """Shared memory whose ``load``/``store`` also run the race checks of ``cta.races``; the
    accessing warp is ``cta.current`` (set by the scheduler when it resumes a warp)."""

    def __init__(self, size: int, fill: int = 0):
        super().__init__(size, fill)
        self.cta = None

    def _context(self, n: int, hint):
        warp = self.cta.current
        op = hint[1] if hint is not None and len(hint) > 1 else _caller_op()
        lanes = hint[2] if hint is not None and len(hint) > 2 else None
        if lanes is None:
            if n == LANES:
                lanes = _ALL_LANES
            elif n == warp.nactive:
                lanes = np.flatnonzero(warp.mask)
            else:
                lanes = np.arange(n)
        return warp, op, lanes

    def rmw_view(self, addrs, dtype, hint):
        """None: each access goes through ``load``/``store``, which run the race checks."""
        return None

    def load(self, addrs, dtype, hint=None):
        out = super().load(addrs, dtype, hint)
        if addrs.size:
            warp, op, lanes = self._context(addrs.size, hint)
            kind = ATOMIC if op is not None and op.name in _ATOMIC_OPS else READ
            self.cta.races.access(kind, warp, addrs, np.dtype(dtype).itemsize, lanes, op)
        return out

    def store(self, addrs, values, hint=None):
        super().store(addrs, values, hint)
        if addrs.size:
            warp, op, lanes = self._context(addrs.size, hint)
            races = self.cta.races
            if op is not None and op.name in _ATOMIC_OPS:
                races.access(ATOMIC, warp, addrs, values.dtype.itemsize, lanes, op)
                return
            races.lane_conflict(warp, addrs, values, lanes, op)
            races.access(WRITE, warp, addrs, values.dtype.itemsize, lanes, op)


def _caller_op() -> Optional[Operation]:
    """The ``op`` a step closure was compiled for, found in its frame (for accesses whose
    handler passed no op in its hint)."""
    f = sys._getframe(3)
    for _ in range(4):
        if f is None:
            break
        op = f.f_locals.get("op")
        if isinstance(op, Operation):
            return op
        f = f.f_back
    return None


def _note(kind: str, cta, offsets, nbytes: int, warp, op, lanes, async_proxy=False) -> None:
    races = cta.races
    if races is None:
        return
    starts = np.atleast_1d(np.asarray(offsets, np.int64))
    lanes = np.zeros(starts.size, np.int64) if lanes is None else np.asarray(lanes)
    races.access(kind, warp, starts, int(nbytes), lanes, op)
    if async_proxy:
        if kind == READ:
            races.async_read(warp, starts, int(nbytes), lanes, op)
        else:
            races.async_written(starts if nbytes == 1 else
                                (starts[:, None] + _span(int(nbytes))).ravel())


def note_read(cta, offsets, nbytes: int, warp, op: Optional[Operation], lanes=None,
              async_proxy: bool = False) -> None:
    """Hook: ``warp`` read ``nbytes`` bytes of shared memory at each byte offset of ``offsets``
    (an int or int vector) executing ``op`` (``lanes``: the lane of each offset; default 0).
    ``async_proxy``: the read is made by the async proxy (TMA store source, wgmma operands), so
    generic writes there need their writer's fence.proxy.async ordered before it. Raises
    RaceError when the detector is on and the read races; a no-op when it is off."""
    _note(READ, cta, offsets, nbytes, warp, op, lanes, async_proxy)


def note_write(cta, offsets, nbytes: int, warp, op: Optional[Operation], lanes=None,
               async_proxy: bool = False) -> None:
    """Hook: ``warp`` wrote ``nbytes`` bytes of shared memory at each offset of ``offsets`` (e.g.
    a TMA box landing, attributed to the issuing warp, before or after its ``complete_tx``;
    ``async_proxy=True`` for those, which need no proxy fence before async reads); as
    ``note_read`` otherwise."""
    _note(WRITE, cta, offsets, nbytes, warp, op, lanes, async_proxy)
