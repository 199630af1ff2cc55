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
exits; elements outside the tensor are not written. ``wait_group.read`` has nothing left to do:
the sources were read at issue. ``commit_group`` closes the thread's stores into a group.

Errors, at the op's line: an innermost coordinate that is not a multiple of 16 bytes, or a
negative coordinate in a store (the GPU faults with an illegal instruction on both; checked on
an H200), a shared address that is misaligned (128 bytes, or the swizzle's
period; 16 for bulk copies) or out of range, a descriptor whose box differs from the one the
kernel was compiled for, a bulk copy size that is not a positive multiple of 16, global
addresses outside the mapped tensor, an mbarrier that is not initialized.

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
from .ops_mbarrier import OBSERVERS, complete_tx, lookup, table
from .registry import handler

__all__ = ["TmaState", "SMEM_ALIGN"]

SMEM_ALIGN = 128
_NAN_BITS = {"f16": 0x7E00, "bf16": 0x7FC0, "f32": 0x7FC00000, "f64": 0x7FF8000000000000}


class TmaState:
    """A CTA's TMA copies in flight: ``loads`` (mbarrier address -> [(phase, shared byte
    addresses, bytes)]) and ``stores`` ([warp, lane, group, global addresses, values, op];
    group -1 = not committed), with ``committed`` bulk groups per (warp, lane)."""

    def __init__(self):
        self.loads: dict = {}
        self.stores: list = []
        self.committed: dict = {}


def _state(cta) -> TmaState:
    st = cta.ext.get("tma")
    if st is None:
        st = cta.ext["tma"] = TmaState()
        cta.ext.setdefault("at_exit", []).append(lambda: _land_stores(cta, st, None))
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
        phase, byte_addrs, data = rec
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


def _box(m, coords):
    """(global byte addresses, in-bounds mask) of the box's elements at ``coords`` (outermost
    first), row-major over ``m.smem_shape``."""
    shape = m.smem_shape
    rank = len(shape)
    addr = np.full(shape, m.address, np.int64)
    valid = np.ones(shape, np.bool_)
    for k in range(rank):
        pos = coords[k] + np.arange(shape[k], dtype=np.int64) * m.element_strides[k]
        pos = pos.reshape([shape[j] if j == k else 1 for j in range(rank)])
        valid = valid & (pos >= 0) & (pos < m.shape[k])
        addr = addr + pos * m.byte_strides[k]
    return addr.ravel(), valid.ravel()


def _smem_bytes(op, w, lane, base: int, nelems: int, size: int, swizzle: int, align: int):
    """Shared byte addresses of ``nelems`` elements of ``size`` bytes stored from ``base`` with
    ``swizzle``, one row per element; checks alignment and range."""
    if base % align:
        raise _error(op, w, lane, f"the shared-memory address {base:#x} is not {align}-byte "
                                  "aligned (TMA needs 128 bytes, and a swizzled tile the "
                                  f"swizzle's period {swizzle_align(swizzle) if swizzle else 16})")
    end = base + nelems * size
    limit = w.cta.smem.bytes.size
    if base < 0 or end > limit:
        raise _error(op, w, lane, f"the shared-memory range [{base:#x}, {end:#x}) is outside the "
                                  f"CTA's {limit}-byte shared memory", OutOfBoundsError)
    elems = base + np.arange(nelems, dtype=np.int64) * size
    if swizzle:
        elems = swizzle_offset(elems, swizzle)
    return elems[:, None] + np.arange(size, dtype=np.int64)


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


# -- loads --------------------------------------------------------------------------------------
@handler("tma.load")
def _load(op: Operation, cx):
    desc_slot, dst_slot, bar_slot, *coord_slots = cx.slots(op.operands)

    def tma_load(s, w):
        tab = table(w.cta)
        st = _state(w.cta)
        for lane in _lanes(w):
            m = s[desc_slot][lane]
            size, nbytes = _check_map(op, w, lane, m)
            bar = lookup(op, w, tab, int(s[bar_slot][lane]))
            coords = [int(s[c][lane]) for c in coord_slots]
            _check_inner(op, w, lane, coords, size)
            addrs, valid = _box(m, coords)
            udt = np.dtype(f"u{size}")
            fill = _NAN_BITS.get(m.dtype.name, 0) if m.oob_nan else 0
            vals = np.full(addrs.size, fill, udt)
            if valid.any():
                vals[valid] = _global_load(op, w, lane, addrs[valid], udt, "TMA load source read")
            align = max(SMEM_ALIGN, swizzle_align(m.swizzle))
            dst = _smem_bytes(op, w, lane, int(s[dst_slot][lane]), addrs.size, size, m.swizzle,
                              align)
            races.note_write(w.cta, dst.ravel(), 1, w, op, np.full(dst.size, lane))  # issuer, then release
            phase = bar.phase
            complete_tx(op, w, tab, bar, nbytes)
            st.loads.setdefault(bar.address, []).append((phase, dst.ravel(),
                                                         vals.view(np.uint8)))
    return tma_load


@handler("tma.bulk_copy")
def _bulk_copy(op: Operation, cx):
    dst_slot, src_slot, n_slot, bar_slot = cx.slots(op.operands)

    def bulk_copy(s, w):
        tab = table(w.cta)
        st = _state(w.cta)
        for lane in _lanes(w):
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
            races.note_write(w.cta, dst_bytes.ravel(), 1, w, op, np.full(dst_bytes.size, lane))
            phase = bar.phase
            complete_tx(op, w, tab, bar, n)
            st.loads.setdefault(bar.address, []).append((phase, dst_bytes.ravel(),
                                                         data.view(np.uint8)))
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
            races.note_read(w.cta, src.ravel(), 1, w, op, np.full(src.size, lane))
            vals = smem[src].copy().view(np.dtype(f"u{size}")).ravel()
            st.stores.append([w.index, lane, -1, addrs[valid], vals[valid], op])
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
    if op.attrs.get("read", False):
        def wait_group_read(s, w):
            pass                       # the shared-memory sources were read at issue
        return wait_group_read

    def wait_group(s, w):
        st = w.cta.ext.get("tma")
        if st is None:
            return
        lanes = set(_lanes(w))

        def retired(rec):
            return (rec[0] == w.index and rec[1] in lanes and 0 <= rec[2]
                    < st.committed.get((w.index, rec[1]), 0) - n)
        _land_stores(w.cta, st, retired)
    return wait_group


def _land_stores(cta, st: TmaState, pick) -> None:
    """Write the stores ``pick(record)`` selects (all when None) to global memory."""
    kept = []
    for rec in st.stores:
        if pick is not None and not pick(rec):
            kept.append(rec)
            continue
        windex, lane, _, addrs, vals, op = rec
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
