"""``ws.layout``: CuTe's layout algebra on shape:stride layouts whose leaves are static ints or
dynamic integers, tensors built on them, and pictures (docs/layouts.md).

The names and semantics are CuTe's (C++ ``cute::`` and the CuTe DSL's ``cute.``), so a CuTe
user recognizes every call: ``make_layout``, ``composition``, ``logical_divide``,
``local_tile``, ``Swizzle``, ... The modules:

- layout_int.py: integer tuples and the folding arithmetic (static parts never reach the IR);
- layout_core.py: ``Layout``, construction, queries, ``crd2idx`` / ``idx2crd``, slicing;
- layout_algebra.py: ``coalesce``, ``composition``, ``complement``, inverses, divides, products;
- layout_swizzle.py: ``Swizzle``, ``ComposedLayout``, the smem swizzle atoms, ``tile_to_shape``;
- layout_tensor.py: tensors (gmem / smem pointers, register fragments, identity tensors),
  ``local_tile``, ``local_partition``, ``copy``;
- layout_atoms.py: the mma.sync and wgmma accumulator thread-value layouts;
- layout_draw.py: ``print_layout`` and ``draw``.
"""
from __future__ import annotations

from .layout_algebra import (append_modes, blocked_product, coalesce, complement, composition,
                             filter_zeros, flat_divide, left_inverse, logical_divide,
                             logical_product, raked_product, right_inverse, tiled_divide,
                             zip_layouts, zipped_divide)
from .layout_atoms import (MMA_TILE, coordinate_layouts, mma_accumulator_tv, thread_coords,
                           wgmma_accumulator_tv, wgmma_tile)
from .layout_core import (Layout, cosize, crd2idx, depth_of as depth, flatten_layout as flatten,
                          get, group, idx2crd, is_layout, make_identity_layout, make_layout,
                          make_layout_from_modes, make_ordered_layout, rank_of as rank, select,
                          size, slice_and_offset)
from .layout_draw import draw, layout_table, print_layout
from .layout_int import ceil_div, product, product_each, shape_div
from .layout_swizzle import (ComposedLayout, Swizzle, make_composed_layout, make_swizzle,
                             smem_layout_atom, tile_to_shape)
from .layout_tensor import (LayoutTensor, copy, local_partition, local_tile, make_fragment,
                            make_fragment_like, make_identity_tensor, make_rmem_tensor,
                            make_tensor)

__all__ = [
    "Layout", "ComposedLayout", "Swizzle", "LayoutTensor",
    "make_layout", "make_ordered_layout", "make_identity_layout", "make_layout_from_modes",
    "make_composed_layout", "make_swizzle", "smem_layout_atom", "tile_to_shape",
    "size", "cosize", "rank", "depth", "shape", "stride", "get", "select", "flatten", "group",
    "crd2idx", "idx2crd", "slice_and_offset", "is_layout",
    "coalesce", "composition", "complement", "right_inverse", "left_inverse", "filter_zeros",
    "logical_divide", "zipped_divide", "tiled_divide", "flat_divide",
    "logical_product", "blocked_product", "raked_product", "zip_layouts", "append_modes",
    "make_tensor", "make_fragment", "make_rmem_tensor", "make_fragment_like",
    "make_identity_tensor", "local_tile", "local_partition", "copy",
    "mma_accumulator_tv", "wgmma_accumulator_tv", "MMA_TILE", "wgmma_tile",
    "coordinate_layouts", "thread_coords",
    "print_layout", "layout_table", "draw", "ceil_div", "product", "product_each", "shape_div",
]


def shape(x):
    """The shape of a layout or tensor (CuTe ``shape``)."""
    return x.shape


def stride(x):
    """The stride of a layout or tensor (CuTe ``stride``)."""
    return x.stride
