"""cp.async (global -> shared copies completed later) and atomics.

cp.async. Each executing lane is one thread issuing one copy of ``size`` bytes. The source is
read when the copy is issued; the destination is written when the program is entitled to see
it, the latest moment the PTX rules allow, so a missing wait shows up as stale shared memory:

- ``cp_async.wait_group n``: the thread's copies in all but its n most recent committed groups
  land; ``cp_async.wait_all``: all the thread's copies land (committed or not);
- ``cp_async.mbarrier_arrive`` (``.noinc``): all the thread's earlier copies land, then the
  thread arrives on the mbarrier (one arrival, counted by init's count). Without ``noinc`` the
  pending count is raised and lowered again: no net arrival.

``commit_group`` closes the thread's uncommitted copies into a group (an empty group if none).
Copies never waited for never land (on the GPU they land at an unknown time: reading them
without a wait is a race). Errors: a source or destination address not aligned to ``size``,
or outside its memory.

Atomics (``mem.atomic``, ``mem.atomic_cas``): the executing lanes update memory one after
another in lane order; each gets the value before its own update.
"""
from __future__ import annotations

import numpy as np

from ..errors import SimulatorError
from ..ir.core import Operation
from .compiler import where
from .dtypes import LANES, from_memory, memory_dtype, to_memory
from .memory import AccessFault
from .ops_mbarrier import arrive, lookup, table
from .ops_memory import access_error, memory_of
from .registry import handler

__all__ = ["CopyQueue"]


class CopyQueue:
    """One warp's cp.async copies in flight: records of (lanes, destination addresses, data
    chunks, group per lane; -1 = not committed) and each lane's count of committed groups."""

    def __init__(self):
        self.records: list = []
        self.committed = np.zeros(LANES, np.int64)

    def land(self, smem, select, op=None) -> None:
        """Write the copies ``select(record) -> bool per record lane`` picks, then drop them
        (``op``: the op they land at, for race reports)."""
        kept = []
        for rec in self.records:
            lanes, dst, chunks, group = rec
            pick = select(lanes, group)
            if np.count_nonzero(pick):
                hint = [None, op, lanes[pick]]
                for k, chunk in enumerate(chunks):
                    smem.store(dst[pick] + k * chunk.dtype.itemsize, chunk[pick], hint)
            if not pick.all():
                rest = ~pick
                kept.append((lanes[rest], dst[rest], [c[rest] for c in chunks], group[rest]))
        self.records = kept

    def land_lanes(self, smem, active: np.ndarray, op=None) -> None:
        self.land(smem, lambda lanes, group: active[lanes], op)


def _queue(w) -> CopyQueue:
    queues = w.cta.ext.setdefault("cp_async", {})
    q = queues.get(w.index)
    if q is None:
        q = queues[w.index] = CopyQueue()
    return q


def _misaligned(op, w, what, addrs, size):
    bad = np.flatnonzero(addrs % size)
    if bad.size:
        lane = int(np.flatnonzero(w.mask)[bad[0]])
        raise SimulatorError(
            f"cp.async at {where(op)}: the {what} address {int(addrs[bad[0]]):#x} is not "
            f"{size}-byte aligned ({w.describe_lane(lane)}); cp.async needs both addresses "
            f"aligned to the copy size", where=where(op))


@handler("cp_async.copy")
def _copy(op: Operation, cx):
    dst_slot, src_slot = cx.slots(op.operands)
    size = op.attrs["size"]
    chunk_t = np.dtype(np.uint32 if size == 4 else np.uint64)
    nchunks = max(1, size // 8)
    hint = [None]

    def cp_async(s, w):
        active = w.mask
        dst, src = s[dst_slot][active], s[src_slot][active]
        _misaligned(op, w, "shared destination", dst, size)
        _misaligned(op, w, "global source", src, size)
        chunks = []
        for k in range(nchunks):
            try:
                chunks.append(w.cta.memory.load(src + k * chunk_t.itemsize, chunk_t, hint))
            except AccessFault as e:
                raise access_error(op, w, "cp.async source read", e, np.flatnonzero(active)) \
                    from None
        smem_size = w.cta.smem.bytes.size
        bad = np.flatnonzero((dst < 0) | (dst + size > smem_size))
        if bad.size:
            fault = AccessFault(int(bad[0]), int(dst[bad[0]]), w.cta.smem.nearest(int(dst[bad[0]])))
            raise access_error(op, w, "cp.async shared destination", fault,
                               np.flatnonzero(active))
        lanes = np.flatnonzero(active)
        _queue(w).records.append((lanes, dst, chunks, np.full(lanes.size, -1, np.int64)))
    return cp_async


@handler("cp_async.commit_group")
def _commit(op: Operation, cx):
    def commit_group(s, w):
        q = _queue(w)
        active = w.mask
        for lanes, _, _, group in q.records:
            fresh = active[lanes] & (group < 0)
            group[fresh] = q.committed[lanes[fresh]]
        q.committed[active] += 1
    return commit_group


@handler("cp_async.wait_group")
def _wait_group(op: Operation, cx):
    n = op.attrs["n"]

    def wait_group(s, w):
        q = _queue(w)
        active, committed = w.mask, q.committed
        q.land(w.cta.smem, lambda lanes, group: active[lanes] & (group >= 0)
               & (group < committed[lanes] - n), op)
    return wait_group


@handler("cp_async.wait_all")
def _wait_all(op: Operation, cx):
    def wait_all(s, w):
        _queue(w).land_lanes(w.cta.smem, w.mask, op)
    return wait_all


@handler("cp_async.mbarrier_arrive")
def _mbarrier_arrive(op: Operation, cx):
    bar_slot = cx.slot(op.operands[0])
    noinc = op.attrs.get("noinc", True)

    def cp_async_mbarrier_arrive(s, w):
        _queue(w).land_lanes(w.cta.smem, w.mask, op)
        tab = table(w.cta)
        addrs = s[bar_slot][w.mask].tolist()
        for addr in sorted(set(addrs)):
            bar = lookup(op, w, tab, addr)
            if noinc:
                arrive(op, w, tab, bar, addrs.count(addr))
        tab.epoch += 1
    return cp_async_mbarrier_arrive


# -- atomics ----------------------------------------------------------------------------------
def _exch(old, v):
    return v


def _cas(old, cmp, v):
    return np.where(old == cmp, v, old)


_OPS = {"add": np.add, "min": np.minimum, "max": np.maximum, "exch": _exch,
        "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}


def _atomic_handler(op: Operation, cx, update):
    slots = cx.slots(op.operands)
    r = cx.slot(op.result)
    t = op.result.type
    mem_of = memory_of(op, op.operands[0].type.space)
    mdt = memory_dtype(t)
    what = f"atomic {op.attrs.get('kind', 'cas')} on {t}"
    hint = [None, op]   # [last buffer hit, the op: shared atomics do not race each other]

    def atomic(s, w):
        mem = mem_of(w)
        lanes = np.flatnonzero(w.mask)
        out = np.zeros(LANES, mdt)
        addrs = s[slots[0]]
        args = [s[k] for k in slots[1:]]
        hit = mem.rmw_view(addrs[lanes], mdt, hint) if lanes.size else None
        if hit is not None:
            _apply_in_lane_order(hit[0], hit[1], lanes, out, update,
                                 [to_memory(t, x[lanes]) for x in args], mdt)
            s[r] = from_memory(t, out)
            return
        try:
            for lane in lanes.tolist():
                a = addrs[lane:lane + 1]
                old = mem.load(a, mdt, hint)
                new = update(old, *(to_memory(t, x[lane:lane + 1]) for x in args))
                mem.store(a, np.asarray(new, mdt), hint)
                out[lane] = old[0]
        except AccessFault as e:
            raise access_error(op, w, what, AccessFault(lane, e.address, e.reason,
                                                        e.out_of_bounds), None) from None
        s[r] = from_memory(t, out)
    return atomic


def _apply_in_lane_order(view, idx, lanes, out, update, values, mdt) -> None:
    """The atomics of ``lanes`` (ascending) on ``view[idx]``, as if one lane after another:
    ``out[lanes[j]]`` gets the element before lane j's update. With distinct elements the lanes
    do not see each other's updates, so one vectorized read-modify-write gives the same bits;
    where lanes share an element they run one by one."""
    if len(set(idx.tolist())) == idx.size:
        old = view[idx]
        view[idx] = np.asarray(update(old, *values), mdt)
        out[lanes] = old
        return
    for j, (lane, i) in enumerate(zip(lanes.tolist(), idx.tolist())):
        old = view[i:i + 1].copy()
        view[i:i + 1] = np.asarray(update(old, *(v[j:j + 1] for v in values)), mdt)
        out[lane] = old[0]


@handler("mem.atomic")
def _atomic(op: Operation, cx):
    return _atomic_handler(op, cx, _OPS[op.attrs["kind"]])


@handler("mem.atomic_cas")
def _atomic_cas(op: Operation, cx):
    return _atomic_handler(op, cx, _cas)
