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
The wgmma layout's one definition is ``ir.ops_wgmma.accumulator_tv`` (``ir/`` imports nothing
of ``lang/``, and the simulator evaluates the same tuples); ``tests/ir/test_ir_wgmma.py`` checks
it against the PTX ISA formula, ``tests/lang/test_layout_atoms.py`` the mma.sync one against
``ws.mma.c_coords`` and both evaluations of the wgmma one against each other.
"""
from __future__ import annotations

from ..ir.ops_wgmma import accumulator_tv
from .layout_core import Layout, cosize, slice_and_offset
from .layout_int import add, flatten, floordiv, is_static, mod, unflatten_like
from .operands import operand_error, static_int

__all__ = ["mma_accumulator_tv", "wgmma_accumulator_tv", "MMA_TILE", "wgmma_tile",
           "coordinate_layouts", "thread_coords"]

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
    registers): ``((4, 8, 4), (2, 2, n/8)) : ((128, 1, 16), (64, 8, 512))``, the layout
    ``ir.ops_wgmma.accumulator_tv`` defines for the simulator too. ``n``: a static multiple of 8
    in [8, 256]; OperandError otherwise."""
    n = static_int(n, "ws.layout.wgmma_accumulator_tv()'s n", range(8, 257, 8),
                   "a multiple of 8 in [8, 256]", "pass the wgmma's N")
    return Layout(*accumulator_tv(n))


def coordinate_layouts(tv: Layout, rows: int) -> tuple:
    """(row layout, column layout) of a TV layout over a tile of ``rows`` rows whose strides
    each stay within a column (``d < rows``, all of them together reaching at most row
    ``rows - 1``) or move whole columns (``d % rows == 0``): then
    ``row = row_layout(t, v)`` and ``col = col_layout(t, v)`` with no division (the layouts'
    strides are ``d`` or 0, and 0 or ``d / rows``). Raises OperandError for any other stride."""
    fd = flatten(tv.stride)
    if not all(is_static(d) and (d < rows or d % rows == 0) for d in fd):
        raise operand_error("ws.layout.coordinate_layouts()", tv, f"strides below {rows} or "
                            f"multiples of {rows}", "split the coordinates with idx2crd instead")
    row = Layout(tv.shape, unflatten_like([d if d < rows else 0 for d in fd], tv.stride))
    col = Layout(tv.shape, unflatten_like([d // rows if d >= rows else 0 for d in fd], tv.stride))
    if cosize(row) > rows:
        raise operand_error("ws.layout.coordinate_layouts()", tv, f"row strides that stay within "
                            f"{rows} rows (the row part reaches {cosize(row) - 1})",
                            "split the coordinates with idx2crd instead")
    return row, col


def thread_coords(tv: Layout, rows: int, thread) -> list:
    """[(row, col)] of each value of ``thread`` under the TV layout ``tv`` over a ``rows``-row
    tile: the thread's part of the coordinate is computed once (dynamic for a dynamic
    ``thread``: a shift or mask per thread mode of power-of-two size, plus its multiply-adds),
    each value adds a static offset."""
    row_l, col_l = coordinate_layouts(tv, rows)
    t = _thread_coordinate(tv, thread)
    (rv, r0), (cv, c0) = slice_and_offset((t, None), row_l), slice_and_offset((t, None), col_l)
    return [(add(r0, rv(v)), add(c0, cv(v))) for v in range(rv.size())]


def _thread_coordinate(tv: Layout, thread):
    """The natural coordinate of ``thread`` in the thread mode of ``tv`` (column-major split);
    a tuple ``thread`` is taken as that coordinate already."""
    shape = tv.shape[0]
    if isinstance(thread, tuple) or not isinstance(shape, tuple):
        return thread
    sizes, out = flatten(shape), []
    for s in sizes[:-1]:
        out.append(mod(thread, s))
        thread = floordiv(thread, s)
    return unflatten_like(out + [thread], shape)
