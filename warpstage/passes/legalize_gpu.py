"""Legalization of the GPU ops that are integer arithmetic in disguise.

- ``wgmma.descriptor {lbo, sbo, swizzle, base_offset} (p)``: ``((ptr.to_int(p) & 0x3FFFF) >>
  4) | fields`` on u64, ``fields`` the static bits of ``ir.ops_wgmma.descriptor_fields`` (PTX
  ISA "Matrix Descriptor Format": bits 0-13 the shared-window address >> 4, 16-29 lbo >> 4,
  32-45 sbo >> 4, 49-51 base_offset, 62-63 the swizzle mode); the ``or`` is left out when they
  are all zero.
- ``smem.alloc {offset, nbytes}``: ``nvvm.smem_base`` (as u8), plus ``offset`` bytes
  (``ptr.offset`` by an i32 constant) when it is not 0. The allocation's extent is read before
  this, by the ``kernel_attributes`` pass (the kernel's ``dynamic_smem``).
"""
from __future__ import annotations

from ..ir import Builder
from ..ir.core import Operation
from ..ir.ops_wgmma import DESCRIPTOR_ADDRESS_MASK, descriptor_fields
from ..ir.types import i32, i64, u8, u64
from .legalize import rule

__all__ = []


@rule("wgmma.descriptor")
def _descriptor(b: Builder, op: Operation) -> list:
    a = op.attrs
    addr = b.create("ptr.to_int", op.operands).result
    addr = b.binary("shr", b.binary("and", addr, b.constant(u64, DESCRIPTOR_ADDRESS_MASK)),
                    b.constant(u64, 4))
    fields = descriptor_fields(a["lbo"], a["sbo"], a["swizzle"], a.get("base_offset", 0))
    return [b.binary("or", addr, b.constant(u64, fields)) if fields else addr]


@rule("smem.alloc")
def _smem_alloc(b: Builder, op: Operation) -> list:
    base = b.smem_base(u8)
    offset = op.attrs["offset"]
    if offset:
        base = b.ptr_offset(base, b.constant(i32 if offset < 2 ** 31 else i64, offset))
    return [base]
