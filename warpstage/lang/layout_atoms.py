"""The hardware's fixed layouts as ``ws.layout`` layouts, defined once: the thread-value (TV)
layouts of the mma.sync and wgmma accumulator fragments and the smem swizzle atoms.

A TV layout maps ``(thread, value)`` to the column-major index of an element in the tile
(``row + rows * col``): ``idx2crd(tv(t, v), tile)`` is the ``(row, col)`` that register ``v``
of thread ``t`` holds. Composing a tile tensor with it (``composition(tile, tv)``) and slicing
``[t, None]`` gives thread ``t``'s elements in register order.

Sources: PTX ISA "Matrix Fragments for mma.m16n8k16" (accumulator: ``(g, 2t+i%2)`` and
``(g+8, ...)`` with ``g = lane >> 2``, ``t = lane & 3``) and "Register Fragments" of
``wgmma.mma_async`` m64nNk16 (D: row ``16*warp + lane/4 + 8*((i/2)%2)``, column
``8*(i/4) + 2*(lane%4) + i%2``); the same as CuTe's ``SM80_16x8_Row`` and ``CLayout_64xN``.
``tests/lang/test_layout_atoms.py`` checks them against ``ws.mma.c_coords`` and
``ws.wgmma.accumulator_coords``.
"""
from __future__ import annotations

from .layout_core import Layout
from .operands import static_int

__all__ = ["mma_accumulator_tv", "wgmma_accumulator_tv", "MMA_TILE", "wgmma_tile"]

MMA_TILE = (16, 8)
"""(M, N) of one mma.sync m16n8 accumulator tile."""


def mma_accumulator_tv() -> Layout:
    """The mma.sync m16n8 C/D fragment: ``((4, 8), (2, 2)) : ((32, 1), (16, 8))`` over the
    16 x 8 tile (32 lanes x 4 registers)."""
    return Layout(((4, 8), (2, 2)), ((32, 1), (16, 8)))


def wgmma_tile(n: int) -> tuple:
    """(M, N) of a wgmma m64nNk16 accumulator tile: ``(64, n)``."""
    return (64, n)


def wgmma_accumulator_tv(n: int) -> Layout:
    """The wgmma m64nNk16 D fragment over the 64 x ``n`` tile (128 threads x ``n/2``
    registers): ``((4, 8, 4), (2, 2, n/8)) : ((128, 1, 16), (64, 8, 512))``. ``n``: a static
    multiple of 8 in [8, 256]."""
    n = static_int(n, "ws.layout.wgmma_accumulator_tv()'s n", range(8, 257, 8),
                   "a multiple of 8 in [8, 256]", "pass the wgmma's N")
    return Layout(((4, 8, 4), (2, 2, n // 8)), ((128, 1, 16), (64, 8, 512)))
