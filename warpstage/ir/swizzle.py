"""Hopper shared-memory swizzle modes: the one definition that TMA, wgmma descriptors, typed smem
views and the simulator all use.

A swizzled tile is stored in rows of ``span`` bytes (32, 64 or 128: the swizzle mode); inside
each aligned group of 8 such rows, the 16-byte chunks of a row are permuted by XOR with the row's
index in the group. In address bits (CUTLASS's ``Swizzle<B, 4, 3>`` with ``B = log2(span / 16)``):
bits [4, 4+B) of the byte address are XORed with bits [7, 7+B). The pattern repeats every
``8 * span`` bytes, and the hardware applies it to the *absolute* shared-memory address, so a
swizzled tile must start at a multiple of ``8 * span`` bytes (1024 for 128-byte swizzle).

Sources: PTX ISA, "Tensor Memory Access swizzling modes" (cp.async.bulk.tensor) and "Shared
Memory Matrix Layout" / "Matrix Descriptor Format" (wgmma); CUDA driver API
``CUtensorMapSwizzle`` (``CU_TENSOR_MAP_SWIZZLE_32B/64B/128B``).
"""
from __future__ import annotations

__all__ = ["SWIZZLE_MODES", "swizzle_offset", "swizzle_bits", "swizzle_align"]

SWIZZLE_MODES = (0, 32, 64, 128)
"""Swizzle spans in bytes; 0 means no swizzle (interleave none)."""

_BITS = {0: 0, 32: 1, 64: 2, 128: 3}


def swizzle_bits(span: int) -> int:
    """``B``: how many address bits the mode XORs (0, 1, 2, 3 for 0/32/64/128 bytes). Raises
    ValueError for any other span."""
    try:
        return _BITS[span]
    except (KeyError, TypeError):
        raise ValueError(f"swizzle must be one of {SWIZZLE_MODES} (bytes), got {span!r}") from None


def swizzle_align(span: int) -> int:
    """Bytes a tile swizzled with ``span`` must be aligned to (the pattern's period; 16 for none)."""
    return 8 * span if swizzle_bits(span) else 16


def swizzle_offset(addr, span: int):
    """The byte address where logical byte address ``addr`` is stored under swizzle ``span``.

    ``addr`` is an int or a numpy integer array (absolute shared-memory byte addresses, or offsets
    from a base aligned to ``swizzle_align(span)``). The map is an involution: applying it twice
    gives ``addr`` back.
    """
    b = swizzle_bits(span)
    if not b:
        return addr
    mask = ((1 << b) - 1) << 7
    return addr ^ ((addr & mask) >> 3)
