"""Legalization of the GPU ops that are integer arithmetic in disguise.

- ``wgmma.descriptor {lbo, sbo, swizzle, base_offset} (p)``: ``((ptr.to_int(p) & 0x3FFFF) >>
  4) | fields`` on u64, ``fields`` the static bits of ``ir.ops_wgmma.descriptor_fields`` (PTX
  ISA "Matrix Descriptor Format": bits 0-13 the shared-window address >> 4, 16-29 lbo >> 4,
  32-45 sbo >> 4, 49-51 base_offset, 62-63 the swizzle mode); the ``or`` is left out when they
  are all zero. A tile at ``base`` plus offsets of whole 16-byte units (``ptr.offset`` by a
  constant or by ``x * c``: a pipeline stage's tile) takes ``base``'s descriptor with the
  offsets / 16 added to its low word (``_offset_steps``), so that what a loop repeats per stage
  is a multiply-add, not the whole address-to-descriptor chain.
- ``smem.alloc {offset, nbytes}``: ``nvvm.smem_base`` (as u8), plus ``offset`` bytes
  (``ptr.offset`` by an i32 constant) when it is not 0. The allocation's extent is read before
  this, by the ``kernel_attributes`` pass (the kernel's ``dynamic_smem``).
"""
from __future__ import annotations

from ..ir import Builder
from ..ir.core import Block, Operation
from ..ir.ops_wgmma import DESCRIPTOR_ADDRESS_MASK, descriptor_fields
from ..ir.types import i32, i64, u8, u32, u64
from .legalize import rule

__all__ = []


@rule("wgmma.descriptor")
def _descriptor(b: Builder, op: Operation) -> list:
    a = op.attrs
    base, steps = _offset_steps(op.operands[0])
    addr = b.create("ptr.to_int", (base,)).result
    addr = b.binary("shr", b.binary("and", addr, b.constant(u64, DESCRIPTOR_ADDRESS_MASK)),
                    b.constant(u64, 4))
    fields = descriptor_fields(a["lbo"], a["sbo"], a["swizzle"], a.get("base_offset", 0))
    desc = b.binary("or", addr, b.constant(u64, fields)) if fields else addr
    if not steps:
        return [desc]
    # the offsets are added to the low 32-bit word (address field and lbo), in 32 bits, and
    # the high word (sbo, base_offset, swizzle) is kept as it is: the address field neither
    # carries nor borrows, so this is exact for offsets of either sign
    low = b.cast(desc, u32)
    for index, units in steps:
        if index is None:
            step = b.constant(u32, units & _U32)
        else:
            x = index if index.type in (i32, u32) else b.cast(index, i32)
            step = b.binary("mul", b.bitcast(x, u32) if x.type == i32 else x,
                            b.constant(u32, units & _U32))
        low = b.binary("add", low, step)
    high = b.binary("and", desc, b.constant(u64, _HIGH_WORD))
    return [b.binary("or", high, b.cast(low, u64))]


_U32 = (1 << 32) - 1
_HIGH_WORD = ((1 << 64) - 1) ^ _U32


def _offset_steps(p):
    """(base, steps) with the tile address ``p`` = ``base`` plus a sum of 16-byte multiples:
    the ``ptr.offset`` / ``ptr.cast`` chain above ``p`` peeled while each offset is a constant or
    ``x * c`` (``arith.mul`` by a constant) whose byte count is a multiple of 16. ``steps``:
    (index or None, descriptor units) per offset, ``index * units`` (or ``units``) being the
    offset's bytes >> 4.

    Why: a descriptor's address field is ``(addr & 0x3FFFF) >> 4``, and for a tile and a base
    inside one 256 KB shared window (every shared::cta address on sm_90: at most 227 KB per
    CTA) ``((A + o) & 0x3FFFF) >> 4`` is ``((A & 0x3FFFF) >> 4) + o / 16`` exactly, with no
    carry out of the 14-bit field. So a pipeline stage's descriptor, ``ring + stage * bytes``,
    is the ring's descriptor (loop-invariant: hoisted) plus ``stage * bytes / 16``: one
    multiply-add per step instead of the address, mask, shift and or of each stage's tile."""
    steps, tile = [], p
    while (d := _defining(p)) is not None:
        if d.name == "ptr.cast":
            p = d.operands[0]
            continue
        if d.name != "ptr.offset":
            break
        esize = d.results[0].type.pointee.nbytes
        index = d.operands[1]
        term = _scaled(index, esize)
        if term is None:
            break
        steps.append(term)
        p = d.operands[0]
    if not steps:
        return tile, steps              # no offset: the tile's own address (casts kept)
    steps.reverse()
    return p, steps


def _defining(v):
    """The op whose result ``v`` is, or None for a block argument."""
    return None if v.owner is None or isinstance(v.owner, Block) else v.owner


def _scaled(index, esize: int):
    """(x, units) with ``index * esize`` bytes = ``x * units * 16`` (x None: the constant
    ``units * 16`` bytes), or None when the byte count is not a static multiple of 16."""
    d = _defining(index)
    if d is None:
        return None
    if d.name == "arith.constant":
        nbytes = int(d.attrs["value"]) * esize
        return (None, nbytes // 16) if nbytes % 16 == 0 else None
    if d.name == "arith.mul":
        for x, c in (d.operands, reversed(d.operands)):
            k = _defining(c)
            if k is not None and k.name == "arith.constant":
                nbytes = int(k.attrs["value"]) * esize
                if nbytes % 16 == 0:
                    return (x, nbytes // 16)
    return None


@rule("smem.alloc")
def _smem_alloc(b: Builder, op: Operation) -> list:
    base = b.smem_base(u8)
    offset = op.attrs["offset"]
    if offset:
        base = b.ptr_offset(base, b.constant(i32 if offset < 2 ** 31 else i64, offset))
    return [base]
