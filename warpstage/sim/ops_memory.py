"""ptr.offset, ptr.to_int, mem.load, mem.store: pointer arithmetic and masked, per-lane memory
access.

Pointers are int64 byte addresses. 'shared' pointers are offsets into the CTA's shared memory;
'global', 'generic' and 'const' pointers address the launch's global ``Memory`` (generic
pointers into shared memory need an address-space conversion op, which the op set does not have
yet). Only active lanes access memory; inactive lanes of a load read as zero.
"""
from __future__ import annotations

import numpy as np

from ..errors import OutOfBoundsError, SimulatorError, UnsupportedError
from ..core.source import format_location
from ..ir.core import Operation
from .compiler import where
from .dtypes import LANES, from_memory, memory_dtype, register_dtype, to_memory
from .memory import AccessFault
from .registry import handler

__all__ = ["memory_of", "access_error"]


def memory_of(op: Operation, space: str):
    """A function ``warp -> address space object`` for pointer space ``space``."""
    if space == "shared":
        return lambda w: w.cta.smem
    if space in ("global", "generic", "const"):
        return lambda w: w.cta.memory

    def unsupported(w):
        raise UnsupportedError(f"the simulator does not model {space!r} memory (at {where(op)})",
                               where=where(op))
    return unsupported


def access_error(op: Operation, w, what: str, fault: AccessFault, lanes) -> SimulatorError:
    """The user-facing error for ``fault`` raised while executing ``op`` (``lanes``: the lane of
    each address position, or None when all 32 lanes were active)."""
    lane = fault.position if lanes is None else int(lanes[fault.position])
    excerpt = format_location(op.loc if op is not None else None)
    excerpt = "\n" + excerpt if excerpt else ""
    if fault.out_of_bounds:
        return OutOfBoundsError(
            f"out-of-bounds {what} at {where(op)}: address {fault.address:#x} is "
            f"{fault.reason}; accessed by {w.describe_lane(lane)}. Check the index computation "
            f"and the bounds guard around this access.{excerpt}\nFix: guard the access with the "
            "tensor's extent (`if i < x.shape[0]:`), or correct the index.", where=where(op))
    return SimulatorError(f"bad {what} at {where(op)}: address {fault.address:#x}: "
                          f"{fault.reason}; accessed by {w.describe_lane(lane)}{excerpt}" +
                          (f"\nFix: {fault.fix}." if fault.fix else ""), where=where(op))


@handler("ptr.offset")
def _ptr_offset(op: Operation, cx):
    p, i = cx.slots(op.operands)
    r = cx.slot(op.result)
    nbytes = op.result.type.pointee.nbytes
    size = np.full(LANES, nbytes, np.int64)

    if nbytes == 1:
        def ptr_offset(s, w):
            s[r] = s[p] + s[i].astype(np.int64, copy=False)
        return ptr_offset

    def ptr_offset(s, w):
        s[r] = s[p] + s[i].astype(np.int64, copy=False) * size
    return ptr_offset


@handler("ptr.to_int")
def _ptr_to_int(op: Operation, cx):
    (p,) = cx.slots(op.operands)
    r = cx.slot(op.result)

    def ptr_to_int(s, w):
        s[r] = s[p].astype(np.uint64)
    return ptr_to_int


@handler("mem.load")
def _load(op: Operation, cx):
    p = cx.slot(op.operands[0])
    r = cx.slot(op.result)
    t = op.result.type
    space = op.operands[0].type.space
    mem_of = memory_of(op, space)
    mdt, rdt = memory_dtype(t), register_dtype(t)
    what = f"{space} load of {t}"
    hint = [None, op]   # [last buffer hit, the op: for race reports]

    def load(s, w):
        mem = mem_of(w)
        addrs = s[p]
        if w.nactive == LANES:
            try:
                s[r] = from_memory(t, mem.load(addrs, mdt, hint))
            except AccessFault as e:
                raise access_error(op, w, what, e, None) from None
            return
        m = w.mask
        out = np.zeros(LANES, rdt)
        try:
            out[m] = from_memory(t, mem.load(addrs[m], mdt, hint))
        except AccessFault as e:
            raise access_error(op, w, what, e, np.flatnonzero(m)) from None
        s[r] = out
    return load


@handler("mem.store")
def _store(op: Operation, cx):
    p, v = cx.slots(op.operands)
    t = op.operands[1].type
    space = op.operands[0].type.space
    mem_of = memory_of(op, space)
    what = f"{space} store of {t}"
    hint = [None, op]   # [last buffer hit, the op: for race reports]

    def store(s, w):
        mem = mem_of(w)
        values = to_memory(t, s[v])
        try:
            if w.nactive == LANES:
                mem.store(s[p], values, hint)
            else:
                m = w.mask
                mem.store(s[p][m], values[m], hint)
        except AccessFault as e:
            raise access_error(op, w, what, e,
                               None if w.nactive == LANES else np.flatnonzero(w.mask)) from None
    return store
