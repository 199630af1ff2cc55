"""``Swizzle(B, M, S)`` and swizzled (composed) layouts: the Hopper shared-memory swizzles as
layout functions (CuTe ``Swizzle``, ``ComposedLayout``, ``make_composed_layout``).

``Swizzle(B, M, S)`` maps an offset ``x`` to ``x ^ ((x & yyy) >> S)`` where ``yyy`` is the mask
of ``B`` bits starting at bit ``M + S``: bits ``[M, M+B)`` are XORed with bits ``[M+S, M+S+B)``.
The hardware's 32/64/128-byte smem swizzles (``ir/swizzle.py``: TMA, wgmma descriptors,
``ws.smem.Array(..., swizzle=...)``) are ``Swizzle(B, 4, 3)`` on byte offsets with
``B = 1, 2, 3``, i.e. ``Swizzle(B, 4 - log2(element bytes), 3)`` on element offsets:
``Swizzle(3, 3, 3)`` for 128-byte swizzled 16-bit data, as in CuTe's ``SW128`` atoms.

A ``ComposedLayout(inner, offset, outer)`` is the function ``c -> inner(offset + outer(c))``.
Slicing and dividing act on ``outer`` and fold the slice's offset into ``offset`` (the swizzle
is applied to the whole offset, because the hardware swizzles absolute smem addresses).
"""
from __future__ import annotations

from .layout_core import Layout, as_layout, has_none, slice_and_offset
from .layout_int import add, is_static, is_tuple, tuple_repr
from .operands import operand_error, static_int

__all__ = ["Swizzle", "ComposedLayout", "make_composed_layout", "make_swizzle",
           "smem_layout_atom", "tile_to_shape"]


class Swizzle:
    """The offset permutation ``x ^ ((x >> S) & (mask(B) << M))`` (CuTe ``Swizzle<B, M, S>``).
    ``B``, ``M``, ``S``: static ints, ``B >= 0``, ``M >= 0``, ``|S| >= B`` (a negative ``S``
    shifts left). A bijection on the integers and an involution. Static offsets give Python
    ints; a dynamic one costs an and, a shift and a xor."""

    __slots__ = ("bits", "base", "shift")

    def __init__(self, B: int, M: int, S: int):
        what = "ws.layout.Swizzle(B, M, S)"
        self.bits = static_int(B, f"{what}'s B", range(0, 32), "an int in [0, 32)", "pass e.g. 3")
        self.base = static_int(M, f"{what}'s M", range(0, 32), "an int in [0, 32)", "pass e.g. 4")
        self.shift = static_int(S, f"{what}'s S", range(-32, 33), "an int in [-32, 32]",
                                "pass e.g. 3")
        if abs(self.shift) < self.bits:
            raise operand_error(what, (B, M, S), "|S| >= B (the two bit fields must not overlap)",
                                "use Swizzle(B, M, S) with S at least B, e.g. Swizzle(3, 4, 3)")

    @property
    def yyy_mask(self) -> int:
        return ((1 << self.bits) - 1) << (self.base + max(self.shift, 0))

    def __call__(self, x):
        if self.bits == 0:
            return x
        m = self.yyy_mask
        if is_static(x):
            return x ^ ((x & m) >> self.shift if self.shift >= 0 else (x & m) << -self.shift)
        y = x & m
        return x ^ (y >> self.shift if self.shift >= 0 else y << -self.shift)

    def __eq__(self, o):
        return isinstance(o, Swizzle) and (o.bits, o.base, o.shift) == (self.bits, self.base,
                                                                          self.shift)

    def __hash__(self):
        return hash(("Swizzle", self.bits, self.base, self.shift))

    def __repr__(self) -> str:
        return f"Sw<{self.bits},{self.base},{self.shift}>"

    def __static_key__(self):
        return ("Swizzle", self.bits, self.base, self.shift)


class ComposedLayout:
    """``c -> inner(offset + outer(c))`` (CuTe ``ComposedLayout``). ``inner``: a ``Swizzle``
    (or any callable on offsets with a static key); ``offset``: a static int or dynamic integer
    (elements); ``outer``: a ``Layout``. Shape, size and rank are ``outer``'s. Calling with
    ``None`` in the coordinate slices (the offset moves into ``offset``)."""

    __slots__ = ("inner", "offset", "outer")

    def __init__(self, inner, offset, outer: Layout):
        self.inner = inner
        self.offset = offset
        self.outer = as_layout(outer, "ws.layout.ComposedLayout's outer layout")

    shape = property(lambda self: self.outer.shape)
    stride = property(lambda self: self.outer.stride)

    def size(self):
        return self.outer.size()

    def rank(self) -> int:
        return self.outer.rank()

    def depth(self) -> int:
        return self.outer.depth()

    def __len__(self) -> int:
        return self.outer.rank()

    def __call__(self, *coord):
        c = coord[0] if len(coord) == 1 else tuple(coord)
        if has_none(c):
            sub, off = slice_and_offset(c, self.outer)
            return ComposedLayout(self.inner, add(self.offset, off), sub)
        return self.inner(add(self.offset, self.outer(c)))

    def __layout_apply__(self, fn):
        return ComposedLayout(self.inner, self.offset, fn(self.outer))

    def __layout_compose__(self, b):
        from .layout_algebra import composition
        return ComposedLayout(self.inner, self.offset, composition(self.outer, b))

    def __repr__(self) -> str:
        off = "" if is_static(self.offset) and self.offset == 0 else f" o {tuple_repr(self.offset)}"
        return f"{self.inner!r}{off} o {self.outer!r}"

    __str__ = __repr__

    def __eq__(self, o):
        return isinstance(o, ComposedLayout) and o.inner == self.inner and \
            o.outer == self.outer and _same(o.offset, self.offset)

    def __hash__(self):
        return hash((self.inner, self.outer))

    # -- value protocol -----------------------------------------------------------------------
    def __extract_values__(self):
        return ([] if is_static(self.offset) else [self.offset]) + [self.outer]

    def __new_from_values__(self, values):
        if is_static(self.offset):
            return ComposedLayout(self.inner, self.offset, values[0])
        return ComposedLayout(self.inner, values[0], values[1])

    def __static_key__(self):
        key = getattr(self.inner, "__static_key__", None)
        return ("ComposedLayout", key() if key else self.inner,
                self.offset if is_static(self.offset) else "?", self.outer.__static_key__())



def _same(a, b) -> bool:
    return (a == b) if is_static(a) and is_static(b) else a is b


def make_composed_layout(inner, offset, outer) -> ComposedLayout:
    """``inner o offset o outer`` (CuTe ``make_composed_layout``)."""
    return ComposedLayout(inner, offset, outer)


def make_swizzle(span: int, dtype) -> Swizzle:
    """The ``Swizzle`` of the hardware's ``span``-byte smem swizzle (0, 32, 64 or 128; PTX ISA
    "Tensor Memory Access swizzling modes", ``CU_TENSOR_MAP_SWIZZLE_*B``) on element offsets of
    ``dtype``: ``Swizzle(log2(span/16), 4 - log2(bytes), 3)``; ``span`` 0 gives ``Swizzle(0,..)``
    (the identity). Matches ``ir.swizzle.swizzle_offset`` element for element."""
    from ..ir.swizzle import swizzle_bits
    try:
        b = swizzle_bits(span)
    except ValueError as e:
        raise operand_error("ws.layout.make_swizzle()'s span", span, "0, 32, 64 or 128 (bytes)",
                            "pass the TMA/wgmma swizzle mode in bytes") from e
    esize = dtype.ir_type.nbytes
    if esize > 16 or esize & (esize - 1):
        raise operand_error("ws.layout.make_swizzle()'s dtype", dtype, "a dtype of 1, 2, 4, 8 or "
                            "16 bytes", "pass the element dtype of the smem tile")
    return Swizzle(b, 4 - (esize.bit_length() - 1), 3)


def smem_layout_atom(span: int, dtype, major: str = "K"):
    """The swizzle atom of a ``span``-byte swizzled smem tile (CuTe's ``Layout_K_SW128_Atom``
    family): 8 rows of ``span`` bytes, K-major (row-major, rows of ``span / bytes`` elements)
    under ``make_swizzle(span, dtype)``; ``major='MN'``: the transposed atom (column-major).
    ``span`` 0: the 8 x (16 / bytes) unswizzled interleave atom."""
    esize = dtype.ir_type.nbytes
    cols = (span or 16) // esize
    if major == "K":
        outer = Layout((8, cols), (cols, 1))
    elif major == "MN":
        outer = Layout((cols, 8), (1, cols))
    else:
        raise operand_error("ws.layout.smem_layout_atom()'s major", major, "'K' or 'MN'",
                            "pass major='K' for K-major (row-major) tiles")
    return ComposedLayout(make_swizzle(span, dtype), 0, outer)


def tile_to_shape(atom, shape, order=None):
    """``atom`` repeated to cover ``shape`` (CuTe ``tile_to_shape``): the blocked product of the
    atom with a (column-major, or ``order``ed) layout of ``shape // atom shape`` copies, each
    mode coalesced. Raises OperandError when the atom does not divide ``shape``."""
    from .layout_algebra import blocked_product, coalesce
    from .layout_core import make_layout, make_ordered_layout
    from .layout_int import flatten, product_each
    inner = atom.outer if isinstance(atom, ComposedLayout) else as_layout(atom, "tile_to_shape's atom")
    shape = shape if is_tuple(shape) else (shape,)
    tile = product_each(inner.shape)
    if len(tile) > len(shape) or any(not is_static(s) or s % t for s, t in zip(shape, tile)):
        raise operand_error("ws.layout.tile_to_shape()", f"the atom {inner} for the shape "
                            f"{tuple_repr(shape)}", "static sizes that are multiples of the "
                            "atom's", "pick a tile shape made of whole atoms")
    reps = tuple(s // t for s, t in zip(shape, tile)) + tuple(flatten(shape[len(tile):]))
    rep = make_layout(reps) if order is None else make_ordered_layout(reps, order)
    out = coalesce(blocked_product(inner, rep), (1,) * len(reps))
    if isinstance(atom, ComposedLayout):
        return ComposedLayout(atom.inner, atom.offset, out)
    return out
