"""TMA: tensor tile copies through descriptors, bulk copies and bulk groups (PTX ISA
"cp.async.bulk.tensor", "cp.async.bulk", "cp.async.bulk.commit_group / wait_group").

Each executing lane is one thread issuing one copy (kernels issue from one elected thread). The
descriptor operand is the launch's ``SimTensorMap`` (``runtime/tensormap.py``): the tensor's
address, sizes, byte strides, box, element strides, swizzle and fill.

Loads (``tma.load``, ``tma.bulk_copy``) read global memory when issued and complete their bytes
on the mbarrier at once (``complete_tx``: the phase may complete then), but the shared-memory
writes are held back until a warp's ``mbarrier.wait_parity`` / successful ``try_wait_parity``
sees that phase (or a later one) complete: the latest moment the PTX memory model lets a thread
see them. A thread that reads the tile without waiting reads stale shared memory, as it may on
the GPU; copies nobody waits for never land. The tile is written in the swizzled layout: element
``e`` of the box (row-major over ``ceil(box / element_strides)``) goes to shared byte address
``swizzle_offset(dst + e * size, swizzle)`` (``ir/swizzle.py``); elements outside the tensor
read as 0 (a quiet NaN with the NaN fill).

Stores (``tma.store``) read shared memory (through the swizzle) when issued and write global
memory when ``tma.wait_group n`` (without ``.read``) retires their bulk group, or when the CTA
exits; elements outside the tensor are not written. The source bytes are kept: the wait that
retires the store's read (``wait_group n`` with or without ``.read``) compares them with shared
memory, and changed bytes are an error ("overwritten before ws.tma.wait_group(read=True)"); a
store whose read no wait retired before the CTA exits is an error too (the GPU may read freed
or reused shared memory), and so is a load whose bytes no wait on its mbarrier observed before
the CTA exits (the GPU may land them in shared memory the next CTA uses). ``commit_group`` closes the thread's stores into a group.

Errors, at the op's line: an innermost coordinate that is not a multiple of 16 bytes, or a
negative coordinate in a store (the GPU faults with an illegal instruction on both; checked on
an H200), a shared address that is misaligned (128 bytes, or the swizzle's
period; 16 for bulk copies) or out of range, a descriptor whose box differs from the one the
kernel was compiled for, a bulk copy size that is not a positive multiple of 16, global
addresses outside the mapped tensor, an mbarrier that is not initialized.

Multicast loads (``multicast``: an i32 CTA mask after the mbarrier) read the box once and
issue it to every CTA of the cluster whose rank's bit is set: the bytes go to the same shared
offset in each, complete on the mbarrier at the same offset in each, and land when a warp of
that CTA observes the phase. A mask bit past the cluster, a peer that exited or whose mbarrier
is not initialized is an error (``sim/cluster.py``).

The landed bytes are written straight into the CTA's shared-memory bytes (they come from the
async proxy, not from a warp's st.shared).
"""
from __future__ import annotations

import numpy as np

from ..errors import OutOfBoundsError, SimulatorError
from ..ir.core import Operation
from ..ir.swizzle import swizzle_align, swizzle_offset
from .compiler import where
from . import races
from .memory import AccessFault
from .ops_memory import access_error
from .cluster import peer
from .ops_mbarrier import OBSERVERS, complete_tx, lookup, table
from .registry import handler

__all__ = ["TmaState", "SMEM_ALIGN"]

SMEM_ALIGN = 128
_NAN_BITS = {"f16": 0x7E00, "bf16": 0x7FC0, "f32": 0x7FC00000, "f64": 0x7FF8000000000000}


class TmaState:
    """A CTA's TMA copies in flight: ``loads`` (mbarrier address -> [(phase, shared byte
    addresses, bytes, op, warp, lane)]) and ``stores`` ([warp, lane, group, global addresses, values, op];
    group -1 = not committed), with ``committed`` bulk groups per (warp, lane)."""

    def __init__(self):
        self.loads: dict = {}
        self.stores: list = []
        self.committed: dict = {}


def _state(cta) -> TmaState:
    st = cta.ext.get("tma")
    if st is None:
        st = cta.ext["tma"] = TmaState()
        cta.ext.setdefault("at_exit", []).append(lambda: _at_exit(cta, st))
    return st


def _error(op: Operation, w, lane: int, message: str, cls=SimulatorError) -> SimulatorError:
    return cls(f"{op.name} at {where(op)} ({w.describe_lane(lane)}): {message}", where=where(op))


def _deliver(w, tab, addr: int) -> None:
    """A wait saw a completed phase of the mbarrier at ``addr``: land the copies that completed
    on that phase or an earlier one."""
    st = w.cta.ext.get("tma")
    pending = st.loads.get(addr) if st is not None else None
    bar = tab.bars.get(addr)
    if not pending or bar is None:
        return
    smem = w.cta.smem.bytes
    kept = []
    for rec in pending:
        phase, byte_addrs, data = rec[:3]
        if phase < bar.phase:
            smem[byte_addrs] = data
        else:
            kept.append(rec)
    st.loads[addr] = kept


OBSERVERS.append(_deliver)


# -- geometry ---------------------------------------------------------------------------------
def _check_map(op: Operation, w, lane: int, m):
    if tuple(op.attrs["box"]) != tuple(m.box):
        raise _error(op, w, lane, f"the descriptor's box is {tuple(m.box)} but the kernel was "
                                  f"compiled for box {tuple(op.attrs['box'])}; pass a "
                                  "descriptor with the box the kernel was specialized for")
    size = m.dtype.nbytes
    n = size * int(np.prod(m.smem_shape))
    if n != op.attrs["bytes"]:
        raise _error(op, w, lane, f"the descriptor moves {n} bytes per box, the kernel expects "
                                  f"{op.attrs['bytes']}")
    return size, n


def _check_inner(op: Operation, w, lane: int, coords, size: int) -> None:
    """The box's first column must start on 16 bytes of global memory: the GPU faults
    ("illegal instruction") on a TMA copy whose innermost coordinate times the element size is
    not a multiple of 16 (checked on an H200, loads and stores)."""
    inner = coords[-1]
    if (inner * size) % 16:
        raise _error(op, w, lane, f"the innermost coordinate {inner} is {inner * size} bytes "
                                  "into a row, not a multiple of 16; TMA copies start on "
                                  "16-byte boundaries in the innermost dimension (the GPU stops "
                                  f"the kernel with an illegal-instruction error). Use a multiple "
                                  f"of {max(1, 16 // size)} elements.")


_GEOMETRY: dict = {}
"""Read-only arrays that depend on a box's geometry only: a kernel copies the same few box
shapes to the same few shared-memory tiles (its ring stages) over and over. Bounded: emptied
past ``_GEOMETRY_KEPT`` entries (an entry is one int64 per element or byte of a box)."""
_GEOMETRY_KEPT = 64


def _kept(key, make):
    hit = _GEOMETRY.get(key)
    if hit is None:
        if len(_GEOMETRY) >= _GEOMETRY_KEPT:
            _GEOMETRY.clear()
        hit = _GEOMETRY[key] = make()
        hit.flags.writeable = False
    return hit


def _box_offsets(shape: tuple, element_strides: tuple, byte_strides: tuple) -> np.ndarray:
    """Byte offsets of a box's elements from its first one, row-major over ``shape``."""
    rank = len(shape)
    rel = np.zeros(shape, np.int64)
    for k in range(rank):
        pos = np.arange(shape[k], dtype=np.int64) * element_strides[k]
        rel = rel + pos.reshape([shape[j] if j == k else 1 for j in range(rank)]) * byte_strides[k]
    return rel.ravel()


def _box(m, coords):
    """(global byte addresses, in-bounds mask or None when every element is in bounds) of the
    box's elements at ``coords`` (outermost first), row-major over ``m.smem_shape``."""
    shape, strides = tuple(m.smem_shape), tuple(m.element_strides)
    inside = all(0 <= c and c + (n - 1) * e < dim
                 for c, n, e, dim in zip(coords, shape, strides, m.shape))
    rel = _kept(("box", shape, strides, tuple(m.byte_strides)),
                lambda: _box_offsets(shape, strides, tuple(m.byte_strides)))
    addr = rel + (m.address + sum(c * b for c, b in zip(coords, m.byte_strides)))
    if inside:
        return addr, None
    rank = len(shape)
    valid = np.ones(shape, np.bool_)
    for k in range(rank):
        pos = coords[k] + np.arange(shape[k], dtype=np.int64) * strides[k]
        pos = pos.reshape([shape[j] if j == k else 1 for j in range(rank)])
        valid = valid & (pos >= 0) & (pos < m.shape[k])
    return addr, valid.ravel()


def _smem_bytes(op, w, lane, base: int, nelems: int, size: int, swizzle: int, align: int):
    """Shared byte addresses (read-only, shape (nelems, size)) of ``nelems`` elements of
    ``size`` bytes stored from ``base`` with ``swizzle``, one row per element; checks alignment
    and range."""
    if base % align:
        raise _error(op, w, lane, f"the shared-memory address {base:#x} is not {align}-byte "
                                  "aligned (TMA needs 128 bytes, and a swizzled tile the "
                                  f"swizzle's period {swizzle_align(swizzle) if swizzle else 16})")
    end = base + nelems * size
    limit = w.cta.smem.bytes.size
    if base < 0 or end > limit:
        raise _error(op, w, lane, f"the shared-memory range [{base:#x}, {end:#x}) is outside the "
                                  f"CTA's {limit}-byte shared memory", OutOfBoundsError)

    def make():
        elems = base + np.arange(nelems, dtype=np.int64) * size
        if swizzle:
            elems = swizzle_offset(elems, swizzle)
        return elems[:, None] + np.arange(size, dtype=np.int64)
    return _kept(("smem", base, nelems, size, swizzle), make)


def _span_view(memory, addrs, dtype, store: bool):
    """(typed view, element indices) when every address is an aligned element of one buffer
    (writable for a store), else None: a whole box in one numpy operation."""
    k = dtype.itemsize
    lo, hi = int(addrs.min()), int(addrs.max())
    buf = memory.find(lo)
    if buf is None or hi + k > buf.end or (store and buf.readonly):
        return None
    tv = buf.typed(dtype)
    rel = addrs - tv.base
    if k > 1 and np.count_nonzero(rel % k):
        return None
    return tv.view, rel // k


def _global_load(op, w, lane, addrs, dtype, what):
    memory = w.cta.memory
    hit = _span_view(memory, addrs, dtype, False)
    if hit is not None:
        return hit[0][hit[1]]
    out = np.empty(addrs.size, dtype)
    try:
        for i in range(0, addrs.size, 32):      # the general path takes 32 lanes at a time
            out[i:i + 32] = memory.load(addrs[i:i + 32], dtype)
    except AccessFault as e:
        raise access_error(op, w, what, AccessFault(0, e.address, e.reason, e.out_of_bounds),
                           [lane]) from None
    return out


def _lanes(w):
    return np.flatnonzero(w.mask).tolist()


def _complete(op, w, tab, bar, nbytes: int, issued: dict, lanes: list, bar_slot, s,
              local: bool = True) -> None:
    """``complete_tx`` for one lane's copy, checking that one instruction's lanes do not complete
    more bytes than the phase announced (``issued``: (table, mbarrier address) -> [phase at the
    first lane, lanes so far])."""
    rec = issued.setdefault((id(tab), bar.address), [bar.phase, 0])
    rec[1] += 1
    complete_tx(op, w, tab, bar, nbytes, local)
    if bar.tx < 0 and bar.phase > rec[0]:
        addrs = s[bar_slot]
        n = sum(1 for ln in lanes if int(addrs[ln]) == bar.address)
        extra = n - rec[1] + 1
        what = "TMA loads" if op.name == "tma.load" else "bulk copies"
        raise SimulatorError(
            f"{op.name} at {where(op)} (warp {w.index}): {n} threads execute it, each issuing a "
            f"copy of {nbytes} bytes on the mbarrier at shared offset {bar.address:#x}; the "
            f"announced bytes of phase {rec[0]} were complete after {rec[1] - 1} of them, so "
            f"{extra} more {what} than announced (the tx-count of phase {bar.phase} would reach "
            f"{bar.tx - (extra - 1) * nbytes}). Each executing thread issues its own copy: issue "
            "TMA from one elected thread: if ws.arch.elect_one(): ... (and announce its bytes "
            "once with arrive_expect_tx).", where=where(op))


# -- loads --------------------------------------------------------------------------------------
def _issue(op, w, s, tab, st, bar, dst, data, lane, tx, local=True) -> None:
    """One lane's copy issued: its shared bytes ``dst`` count as written by the issuing warp
    (race detector), its bytes complete on ``bar`` (``tx``: _complete's byte count and per-op
    bookkeeping), and ``data`` waits in ``st.loads`` for a wait that observes the phase.
    ``local``: ``tab``/``st`` are the issuing CTA's (False: a multicast's peer CTA)."""
    if local:
        races.note_write(w.cta, dst, 1, w, op, np.full(dst.size, lane),
                         async_proxy=True)          # the issuer, then the release
    phase = bar.phase
    nbytes, issued, lanes, bar_slot = tx
    _complete(op, w, tab, bar, nbytes, issued, lanes, bar_slot, s, local)
    st.loads.setdefault(bar.address, []).append((phase, dst, data, op, w, lane))


def _targets(op, w, mask: int, lane: int) -> list:
    """The CTAs a multicast with CTA mask ``mask`` writes to, in rank order."""
    if not 0 < mask < 1 << 16:
        raise _error(op, w, lane, f"the multicast CTA mask {mask:#x} must have 1 to 16 bits "
                                  "set (bit r: the CTA of cluster rank r)")
    return [peer(op, w, r, "the multicast mask") for r in range(16) if mask >> r & 1]


def _peer_bar(op, w, lane, cta, addr: int):
    bar = table(cta).bars.get(addr)
    if bar is None:
        raise _error(op, w, lane, f"the multicast reaches CTA rank {cta.cluster_rank}, which "
                                  f"has no mbarrier at shared offset {addr:#x} (not initialized "
                                  "yet): initialize the mbarriers, then ws.arch.cluster_arrive()"
                                  "; ws.arch.cluster_wait() before the first multicast")
    return bar


@handler("tma.load")
def _load(op: Operation, cx):
    multicast = op.attrs.get("multicast", False)
    desc_slot, dst_slot, bar_slot, *coord_slots = cx.slots(op.operands)
    mask_slot = coord_slots.pop(0) if multicast else None

    def tma_load(s, w):
        tab = table(w.cta)
        st = _state(w.cta)
        issued: dict = {}
        lanes = _lanes(w)
        for lane in lanes:
            m = s[desc_slot][lane]
            size, nbytes = _check_map(op, w, lane, m)
            bar = lookup(op, w, tab, int(s[bar_slot][lane]))
            coords = [int(s[c][lane]) for c in coord_slots]
            _check_inner(op, w, lane, coords, size)
            addrs, valid = _box(m, coords)
            udt = np.dtype(f"u{size}")
            fill = _NAN_BITS.get(m.dtype.name, 0) if m.oob_nan else 0
            if valid is None:
                vals = _global_load(op, w, lane, addrs, udt, "TMA load source read")
            else:
                vals = np.full(addrs.size, fill, udt)
                if valid.any():
                    vals[valid] = _global_load(op, w, lane, addrs[valid], udt,
                                               "TMA load source read")
            align = max(SMEM_ALIGN, swizzle_align(m.swizzle))
            dst = _smem_bytes(op, w, lane, int(s[dst_slot][lane]), addrs.size, size, m.swizzle,
                              align)
            tx = (nbytes, issued, lanes, bar_slot)
            if mask_slot is None:
                _issue(op, w, s, tab, st, bar, dst.ravel(), vals.view(np.uint8), lane, tx)
                continue
            for cta in _targets(op, w, int(s[mask_slot][lane]), lane):   # same offsets in each
                local = cta is w.cta
                cbar = bar if local else _peer_bar(op, w, lane, cta, bar.address)
                _issue(op, w, s, table(cta), _state(cta), cbar, dst.ravel(),
                       vals.view(np.uint8), lane, tx, local)
    return tma_load


@handler("tma.bulk_copy")
def _bulk_copy(op: Operation, cx):
    dst_slot, src_slot, n_slot, bar_slot = cx.slots(op.operands)

    def bulk_copy(s, w):
        tab = table(w.cta)
        st = _state(w.cta)
        issued: dict = {}
        lanes = _lanes(w)
        for lane in lanes:
            dst, src, n = int(s[dst_slot][lane]), int(s[src_slot][lane]), int(s[n_slot][lane])
            if n <= 0 or n % 16:
                raise _error(op, w, lane, f"the byte count {n} is not a positive multiple of 16")
            if src % 16:
                raise _error(op, w, lane, f"the global source address {src:#x} is not 16-byte "
                                          "aligned")
            bar = lookup(op, w, tab, int(s[bar_slot][lane]))
            chunks = src + 8 * np.arange(n // 8, dtype=np.int64)
            data = _global_load(op, w, lane, chunks, np.dtype(np.uint64), "bulk copy source read")
            dst_bytes = _smem_bytes(op, w, lane, dst, n, 1, 0, 16)
            _issue(op, w, s, tab, st, bar, dst_bytes.ravel(), data.view(np.uint8), lane,
                   (n, issued, lanes, bar_slot))
    return bulk_copy


# -- stores and bulk groups ---------------------------------------------------------------------
@handler("tma.store")
def _store(op: Operation, cx):
    desc_slot, src_slot, *coord_slots = cx.slots(op.operands)

    def tma_store(s, w):
        st = _state(w.cta)
        smem = w.cta.smem.bytes
        for lane in _lanes(w):
            m = s[desc_slot][lane]
            size, _ = _check_map(op, w, lane, m)
            coords = [int(s[c][lane]) for c in coord_slots]
            _check_inner(op, w, lane, coords, size)
            if min(coords) < 0:
                raise _error(op, w, lane, f"a TMA store at coordinates {tuple(coords)}: stores "
                                          "need non-negative coordinates (the GPU stops the "
                                          "kernel with an illegal-instruction error; boxes past "
                                          "the end are clipped, boxes before the start are not)")
            addrs, valid = _box(m, coords)
            align = max(SMEM_ALIGN, swizzle_align(m.swizzle))
            src = _smem_bytes(op, w, lane, int(s[src_slot][lane]), addrs.size, size, m.swizzle,
                              align)
            races.note_read(w.cta, src.ravel(), 1, w, op, np.full(src.size, lane),
                            async_proxy=True)
            raw = smem[src]                  # a copy: the source snapshot, checked at the wait
            vals = raw.view(np.dtype(f"u{size}")).ravel()
            if valid is not None:
                addrs, vals = addrs[valid], vals[valid]
            st.stores.append([w.index, lane, -1, addrs, vals, op, src, raw, False])
    return tma_store


@handler("tma.commit_group")
def _commit(op: Operation, cx):
    def commit_group(s, w):
        st = _state(w.cta)
        for lane in _lanes(w):
            key = (w.index, lane)
            group = st.committed.get(key, 0)
            for rec in st.stores:
                if rec[0] == w.index and rec[1] == lane and rec[2] < 0:
                    rec[2] = group
            st.committed[key] = group + 1
    return commit_group


@handler("tma.wait_group")
def _wait_group(op: Operation, cx):
    n = op.attrs["n"]
    read = op.attrs.get("read", False)

    def wait_group(s, w):
        st = w.cta.ext.get("tma")
        if st is None or not st.stores:
            return
        lanes = set(_lanes(w))

        def retired(rec):
            return (rec[0] == w.index and rec[1] in lanes and 0 <= rec[2]
                    < st.committed.get((w.index, rec[1]), 0) - n)
        for rec in st.stores:
            if not rec[8] and retired(rec):
                _check_source(w.cta, rec, op)
        if not read:
            _land_stores(w.cta, st, retired)
    return wait_group


def _check_source(cta, rec, wait_op) -> None:
    """The store's shared source must still hold the bytes it had at issue when the wait that
    retires its read (``wait_op``; None: the CTA exits) comes: the GPU may read it until then."""
    windex, lane, op, src, raw = rec[0], rec[1], rec[5], rec[6], rec[7]
    rec[8] = True
    now = cta.smem.bytes[src]
    who = cta.warps[windex].describe_lane(lane)
    if wait_op is None:
        changed = "" if np.array_equal(now, raw) else (
            " (and its source bytes were overwritten meanwhile)")
        raise SimulatorError(
            f"the tma.store at {where(op)} ({who}) was never waited for: the CTA exited without "
            f"a ws.tma.wait_group that retires it{changed}. The GPU reads the source after "
            "issue, and may read shared memory that is freed or reused by the next CTA. Fix: "
            "ws.tma.commit_group(), then ws.tma.wait_group(0, read=True) (or wait_group(0)) in "
            "the issuing thread before the kernel ends, as CUTLASS's tma_store_wait<0>() does.",
            where=where(op))
    if not np.array_equal(now, raw):
        pos = int(np.flatnonzero(now.ravel() != raw.ravel())[0])
        addr = int(src.ravel()[pos])
        raise SimulatorError(
            f"shared memory read by the tma.store at {where(op)} ({who}; byte {addr:#x}) was "
            f"overwritten before ws.tma.wait_group(read=True) at {where(wait_op)} retired the "
            "store's read; the GPU may read the source at any time until then, so it may store "
            "the new bytes. Fix: ws.tma.commit_group(), then ws.tma.wait_group(0, read=True) in "
            "the issuing thread, and a barrier before other threads reuse the buffer.",
            where=where(wait_op))


def _at_exit(cta, st: TmaState) -> None:
    """The CTA exits: a load no mbarrier wait observed, or a store whose read was never waited
    for, is an error; the other stores land."""
    for addr, recs in st.loads.items():
        if recs:
            phase, _, _, op, w, lane = recs[0]
            raise SimulatorError(
                f"the {op.name} at {where(op)} ({w.describe_lane(lane)}) was still in flight when "
                f"the CTA exited: no wait on its mbarrier (shared offset {addr:#x}) saw phase "
                f"{phase} (parity {phase % 2}) complete. The GPU may write the bytes into shared "
                "memory after the CTA has ended, where the next CTA may live. Fix: wait on the "
                "mbarrier "
                "(bar.wait(parity)) for every copy issued, or do not issue copies nobody reads.",
                where=where(op))
    for rec in st.stores:
        if not rec[8]:
            _check_source(cta, rec, None)
    _land_stores(cta, st, None)


def _land_stores(cta, st: TmaState, pick) -> None:
    """Write the stores ``pick(record)`` selects (all when None) to global memory."""
    kept = []
    for rec in st.stores:
        if pick is not None and not pick(rec):
            kept.append(rec)
            continue
        windex, lane, _, addrs, vals, op = rec[:6]
        if not addrs.size:
            continue
        hit = _span_view(cta.memory, addrs, vals.dtype, True)
        if hit is not None:
            hit[0][hit[1]] = vals
            continue
        try:
            for i in range(0, addrs.size, 32):
                cta.memory.store(addrs[i:i + 32], vals[i:i + 32])
        except AccessFault as e:
            w = cta.warps[windex]
            raise access_error(op, w, "TMA store destination write",
                               AccessFault(0, e.address, e.reason, e.out_of_bounds),
                               [lane]) from None
    st.stores = kept


@handler("tma.prefetch_descriptor")
def _prefetch(op: Operation, cx):
    def prefetch_descriptor(s, w):
        pass                           # a cache hint: nothing to simulate
    return prefetch_descriptor
