"""The shared-memory tiles of wgmma operands (``ws.wgmma``, wgmma.py): their layout
(``TileLayout``) and 64-bit matrix descriptors (``make_descriptor``; ``TileDescriptor``, made by
``tile_descriptor``), PTX ISA 8.0 "Asynchronous Warpgroup Level Matrix Multiply-Accumulate
Instructions", "Matrix Descriptor Format" (sm_90a).

Shared-memory tiles (``TileLayout``): a (rows, cols) tile with ``cols`` contiguous is stored in
column blocks one swizzle span wide (16 bytes without swizzle), each block row-major; so a tile
whose rows are exactly one span (64 bf16 with 128-byte swizzle) is a plain row-major 2-D array,
and a wider one is a 3-D array (blocks, rows, span / element size), what a TMA box of one span
produces. Swizzled tiles start at a multiple of 8 * span bytes.
"""
from __future__ import annotations

from ..core.source import user_location
from ..core.trace import Origin, builder
from ..ir.swizzle import SWIZZLE_MODES, swizzle_align
from .layout_int import mul
from .layout_swizzle import smem_layout_atom, tile_to_shape
from .operands import operand_error, pointer_operand, static_int
from .scalars import BFloat16, Float8E4M3FN, Float8E5M2, Float16, Scalar, Uint64

__all__ = ["make_descriptor", "TileLayout", "TileDescriptor", "tile_descriptor", "mma_k_of"]

_MMA_DTYPES = (Float16, BFloat16)
_FP8_DTYPES = (Float8E4M3FN, Float8E5M2)
_TILE_DTYPES = _MMA_DTYPES + _FP8_DTYPES


def mma_k_of(dtype) -> int:
    """The K of one wgmma of ``dtype``'s operands: 32 bytes of it (16 f16/bf16, 32 fp8)."""
    return 32 // dtype.ir_type.nbytes


# -- descriptors and tile layouts ---------------------------------------------------------------
def _swizzle(x, what: str) -> int:
    return static_int(x, what, SWIZZLE_MODES, "0 (none), 32, 64 or 128 (bytes)",
                      "pass the swizzle the tile was stored with (TMA's CU_TENSOR_MAP_SWIZZLE_*)")


def make_descriptor(smem, lbo: int, sbo: int, swizzle=None, base_offset: int = 0) -> Uint64:
    """The 64-bit shared-memory matrix descriptor of the tile at ``smem`` (an smem array or a
    shared ``ws.Pointer``, 16-byte aligned): PTX ISA "Matrix Descriptor Format". ``lbo`` and
    ``sbo`` (static, bytes, multiples of 16 below 2^18): the leading- and stride-dimension byte
    offsets of the canonical layout; ``swizzle``: 0, 32, 64 or 128 bytes (default: the array's
    ``swizzle`` attribute, else 0); ``base_offset``: 0..7 (0 for tiles aligned to their swizzle
    atom). Returns a dynamic Uint64. ``tile_descriptor`` computes lbo and sbo for you."""
    what = "ws.wgmma.make_descriptor()"
    p = pointer_operand(smem, f"{what}'s tile", "shared")
    if swizzle is None:
        swizzle = getattr(smem, "swizzle", 0) or 0
    swizzle = _swizzle(swizzle, f"{what}'s swizzle")
    offsets = range(0, 1 << 18, 16)
    for name, v in (("lbo", lbo), ("sbo", sbo)):
        static_int(v, f"{what}'s {name}", offsets, "a static multiple of 16 in [0, 2^18) (bytes)",
                   "pass the byte distance between core matrices (see docs/wgmma.md)")
    base_offset = static_int(base_offset, f"{what}'s base_offset", range(8), "an int in [0, 8)",
                             "use 0 and align swizzled tiles to 8 * swizzle bytes")
    r = builder(what).wgmma_descriptor(p.value, lbo, sbo, swizzle, base_offset)
    return Uint64._wrap(r, Origin(what, user_location()))


class TileLayout:
    """The shared-memory layout of a (rows, cols) tile of ``dtype`` with ``cols`` contiguous,
    swizzled with ``swizzle`` bytes (0, 32, 64, 128): column blocks of ``span`` bytes (the
    swizzle, or 16 without one), each block row-major with rows ``span`` bytes apart.

    For wgmma, a K-major operand is (rows = M or N, cols = K) and an MN-major one (rows = K,
    cols = M or N). ``shape`` is the smem array to allocate ((rows, cols) when one block,
    else (blocks, rows, block_cols)), ``align`` its alignment (8 * span bytes when swizzled),
    ``spec`` that field type (``ws.smem.Array[dtype, shape, align]``). ``element_layout`` is the
    tile as a ``ws.layout`` (logical (r, c) -> element offset in that array, swizzled):
    ``tile_to_shape(smem_layout_atom(swizzle, dtype), (rows, cols))``, i.e.
    ``Sw o (rows, (span/eb, blocks)) : (span/eb, (1, rows span/eb))``; ``offset(r, c)`` evaluates
    it (static or dynamic indices). rows must be a multiple of 8 and cols of span / element
    size."""

    def __init__(self, rows: int, cols: int, dtype, swizzle: int = 0):
        what = "ws.wgmma.TileLayout"
        self.dtype = dtype
        self.swizzle = _swizzle(swizzle, f"{what}'s swizzle")
        self.eb = dtype.ir_type.nbytes
        self.span = self.swizzle or 16
        self.block_cols = self.span // self.eb
        self.rows = static_int(rows, f"{what}'s rows", range(8, 1 << 16, 8),
                               "a static positive multiple of 8", "pad the tile to 8-row groups")
        self.cols = static_int(cols, f"{what}'s cols", range(self.block_cols, 1 << 16,
                                                              self.block_cols),
                               f"a static positive multiple of {self.block_cols} ({self.span} "
                               f"bytes of {dtype.__name__})", "pad the tile's contiguous extent")
        self.blocks = self.cols // self.block_cols
        self.shape = ((self.rows, self.cols) if self.blocks == 1
                      else (self.blocks, self.rows, self.block_cols))
        self.align = swizzle_align(self.swizzle)
        self.nbytes = self.rows * self.cols * self.eb
        # (r, c) -> element offset: the span-wide K-major swizzle atom tiled over the tile,
        # column blocks outermost (CuTe's tile_to_shape of Layout_K_SW*_Atom)
        self.element_layout = tile_to_shape(smem_layout_atom(self.swizzle, dtype),
                                            (self.rows, self.cols))

    @property
    def spec(self):
        from .smem import Array
        return Array[self.dtype, self.shape, self.align]

    def byte_offset(self, r, c, swizzled: bool = True):
        """Byte offset of element (r, c) from the tile's start (swizzled unless told not)."""
        lay = self.element_layout if swizzled else self.element_layout.outer
        return mul(lay(r, c), self.eb)

    def offset(self, r, c):
        """Element offset of (r, c) in the tile's array (flat), swizzle applied:
        ``element_layout(r, c)``."""
        return self.element_layout(r, c)

    @property
    def box(self) -> tuple:
        """The TMA box (outermost first, elements) of one column block: ``(rows, block_cols)``,
        the sub-layout ``element_layout`` maps to one contiguous ``rows x span`` bytes; the tile
        is ``blocks`` such boxes side by side (``ws.tma.load_tile``)."""
        return (self.rows, self.block_cols)

    def block(self, tile, blk: int):
        """Column block ``blk`` (static, < ``blocks``) of ``tile``, an smem array of ``shape``:
        ``tile[blk]``, or ``tile`` itself when the tile is one block."""
        return tile if self.blocks == 1 else tile[blk]

    def descriptor_offsets(self, major: str) -> tuple:
        """(LBO, SBO) in bytes of this tile as a ``major`` ("K" or "MN") wgmma operand."""
        whole = self.rows * self.span
        if major == "K":
            return (whole, 128) if not self.swizzle else (16, 8 * self.span)
        return (128, whole) if not self.swizzle else (whole, 8 * self.span)

    def key(self):
        return ("TileLayout", self.rows, self.cols, self.dtype.__name__, self.swizzle)

    def __repr__(self) -> str:
        return (f"<TileLayout {self.dtype.__name__}[{self.rows}, {self.cols}] swizzle "
                f"{self.swizzle}: array {self.shape}>")


class TileDescriptor:
    """A matrix descriptor (``desc``, a dynamic Uint64) with the static facts of its tile:
    ``layout`` (TileLayout), ``major`` ("K": M/N rows, K contiguous; "MN": K rows, M/N
    contiguous), ``dtype``. Follows the value protocol (its leaf is ``desc``). ``at(row, k)``
    and ``k_step(j)`` give the descriptor of the sub-tile starting at M/N index ``row``
    (multiple of 8) and K index ``k`` (multiple of 16; ``k_step``: of one wgmma's K, 16 for
    f16/bf16 and 32 for fp8): the start address advanced by that
    sub-tile's byte offset >> 4, as CUTLASS and FlashAttention-3 do."""

    __slots__ = ("layout", "major", "desc")

    def __init__(self, layout: TileLayout, major: str, desc: Uint64):
        self.layout, self.major, self.desc = layout, major, desc

    @property
    def dtype(self):
        return self.layout.dtype

    def _extent(self) -> tuple:
        """(M/N extent, K extent) of the whole tile."""
        lay = self.layout
        return (lay.rows, lay.cols) if self.major == "K" else (lay.cols, lay.rows)

    def at(self, row=0, k=0) -> "TileDescriptor":
        for name, v, m in (("row", row, 8), ("k", k, 16)):
            if not isinstance(v, Scalar):
                limit = self._extent()[0 if name == "row" else 1]
                static_int(v, f"TileDescriptor.at()'s {name}", range(0, limit, m),
                           f"a multiple of {m} in [0, {limit})", f"offset by whole {m}-element "
                           f"steps inside the {limit}-element extent")
        r, c = (row, k) if self.major == "K" else (k, row)
        off = self.layout.byte_offset(r, c, swizzled=False)
        if isinstance(off, int):
            if off == 0:
                return self
            return TileDescriptor(self.layout, self.major, self.desc + (off >> 4))
        return TileDescriptor(self.layout, self.major, self.desc + Uint64(off >> 4))

    def k_step(self, j) -> "TileDescriptor":
        """The descriptor of the j-th K slice of one wgmma (``at(k=mma_k_of(dtype) * j)``: k16
        slices of f16/bf16, k32 of fp8)."""
        return self.at(0, j * mma_k_of(self.dtype))

    def __extract_values__(self):
        return [self.desc]

    def __new_from_values__(self, values):
        return TileDescriptor(self.layout, self.major, values[0])

    def __static_key__(self):
        return ("TileDescriptor", self.layout.key(), self.major)

    def __repr__(self) -> str:
        return f"<TileDescriptor {self.major}-major {self.layout!r}>"


def tile_descriptor(smem, major: str = "K", swizzle=None) -> TileDescriptor:
    """The descriptor of the tile held in smem array ``smem`` (2-D (rows, cols) when ``cols``
    fills one swizzle span, else 3-D (blocks, rows, span / element size): ``TileLayout.shape``),
    as a ``major`` wgmma operand ("K" or "MN"), computing LBO and SBO. ``swizzle``: bytes
    (default: the array's ``swizzle`` attribute, else 0). Raises OperandError for a shape that
    is not a canonical layout, naming the shape to allocate."""
    what = "ws.wgmma.tile_descriptor()"
    if major not in ("K", "MN"):
        raise operand_error(f"{what}'s major", major, "'K' (K contiguous) or 'MN' (M/N "
                            "contiguous)", "pass major='K' for a row-major A or a B^T tile")
    if swizzle is None:
        swizzle = getattr(smem, "swizzle", 0) or 0
    swizzle = _swizzle(swizzle, f"{what}'s swizzle")
    shape, dtype = getattr(smem, "shape", None), getattr(smem, "dtype", None)
    if shape is None or dtype not in _TILE_DTYPES:
        raise operand_error(what, smem, "a shared-memory array of ws.Float16, ws.BFloat16, "
                            "ws.Float8E4M3FN or ws.Float8E5M2 (an element of a ws.smem storage)",
                            "allocate the tile with ws.smem.Array[ws.BFloat16, "
                            "ws.wgmma.TileLayout(...).shape, 1024]")
    if dtype in _FP8_DTYPES and major != "K":
        raise operand_error(f"{what}'s major for a {dtype.__name__} tile", major, "'K': the fp8 "
                            "wgmma forms read both operands K-major (PTX ISA wgmma.mma_async: "
                            "imm-trans-a/-b exist for .f16/.bf16 only)", "store the tile K "
                            "contiguous (A as M x K row-major, B as N x K, i.e. B^T row-major)")
    span = swizzle or 16
    block = span // dtype.ir_type.nbytes
    rows, cols = (shape[0], shape[1]) if len(shape) == 2 else \
        (shape[1], shape[0] * shape[2]) if len(shape) == 3 else (0, 0)
    if shape[-1] != block or len(shape) not in (2, 3) or rows % 8:
        up = lambda x, m: max(m, -(-x // m) * m)                          # noqa: E731
        want = TileLayout(up(rows, 8), up(cols or shape[-1], block), dtype, swizzle).shape
        raise operand_error(f"{what}'s tile shape", shape, f"a canonical {span}-byte-block "
                            f"layout: (rows, {block}) or (blocks, rows, {block}) with rows a "
                            "multiple of 8", f"allocate ws.wgmma.TileLayout(rows, cols, "
                            f"{dtype.__name__}, {swizzle}).shape, e.g. {want}, or pass the "
                            "swizzle the tile was stored with")
    layout = TileLayout(rows, cols, dtype, swizzle)
    align = getattr(smem, "align", None)          # known statically for typed smem views
    if isinstance(align, int) and align < layout.align:
        raise operand_error(f"{what}'s tile alignment", f"{align} bytes", f"at least "
                            f"{layout.align} bytes for a {swizzle}-byte swizzle (its 8-row atom)",
                            f"allocate it as ws.smem.Array[..., {layout.align}]")
    lbo, sbo = layout.descriptor_offsets(major)
    return TileDescriptor(layout, major, make_descriptor(smem, lbo, sbo, swizzle))
