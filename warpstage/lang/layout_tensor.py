"""Layout-backed tensors (CuTe's ``Tensor``): an engine (a gmem or smem pointer, a register
fragment, or the counting engine of an identity tensor) plus a layout (``ws.layout``).

``t[c]`` is the element at coordinate ``c`` (``t[i, j]``: a load from the pointer, or a
register of the fragment); ``t[c] = v`` stores; a coordinate with ``None`` (or ``:``) entries
is a sub-tensor (``t[None, k]``, CuTe's ``t(_, k)``). ``local_tile`` and ``local_partition``
tile a tensor and split a tile over threads; any algebra operation (``composition``,
``zipped_divide``, ...) applies to a tensor's layout and keeps its engine.

Offsets are in elements. For a pointer engine a slice's offset moves into the pointer; under a
swizzled layout (``ComposedLayout``) it moves into the layout's offset instead, because the
swizzle applies to the whole offset. Register fragments are indexed statically (registers have
no addresses): their layout must be static and so must every coordinate.

A tensor follows the value protocol: the pointer (or the fragment's registers) and the layout's
dynamic leaves are its values; the engine kind and the layout's static part are its key.
"""
from __future__ import annotations

from .fragment import Fragment
from .layout_core import (Layout, as_layout, cosize, crd2idx, has_none, idx2crd, make_layout,
                          slice_and_offset)
from .layout_int import add, is_static, is_tuple, product_each, tuple_repr
from .layout_swizzle import ComposedLayout
from .operands import operand_error
from .pointer import Pointer
from .scalars import Scalar, as_dynamic

__all__ = ["LayoutTensor", "make_tensor", "make_fragment", "make_rmem_tensor",
           "make_fragment_like", "make_identity_tensor", "local_tile", "local_partition", "copy"]


class _Counting:
    """The engine of an identity tensor: element ``k`` is the natural coordinate of ``k`` in
    ``shape`` (column-major), i.e. ``idx2crd(k, shape)``."""

    __slots__ = ("layout",)

    def __init__(self, layout: Layout):
        self.layout = layout

    def __extract_values__(self):
        return [self.layout]

    def __new_from_values__(self, values):
        return _Counting(values[0])

    def __static_key__(self):
        return ("counting", self.layout.__static_key__())


class LayoutTensor:
    """``engine`` + ``layout`` (+ a static or dynamic element ``base`` for fragments and
    identity tensors). ``shape``/``stride``/``size()``/``rank()`` are the layout's; ``dtype``
    the engine's element dtype (None for identity tensors)."""

    __slots__ = ("engine", "layout", "base")

    def __init__(self, engine, layout, base=0):
        self.engine = engine
        self.layout = layout
        self.base = base

    shape = property(lambda self: self.layout.shape)
    stride = property(lambda self: self.layout.stride)

    @property
    def dtype(self):
        e = self.engine
        return e.dtype if isinstance(e, (Pointer, Fragment)) else None

    @property
    def iterator(self):
        """The engine: the pointer (for gmem/smem tensors) or the fragment."""
        return self.engine

    def size(self):
        return self.layout.size()

    def rank(self) -> int:
        return self.layout.rank()

    def __len__(self) -> int:
        return self.layout.rank()

    # -- slicing and elements -----------------------------------------------------------------
    def __getitem__(self, coord):
        c = _coord(coord)
        if has_none(c):
            return self._slice(c)
        return self._load(self._offset(c))

    def __setitem__(self, coord, value):
        c = _coord(coord)
        if has_none(c):
            raise operand_error("a tensor store", coord, "a full coordinate (no None)",
                                "store single elements, t[i, j] = v, or use ws.layout.copy")
        off = self._offset(c)
        e = self.engine
        if isinstance(e, Pointer):
            e[off] = value
        elif isinstance(e, Fragment):
            e[self._register(off)] = value
        else:
            raise operand_error("a tensor store", "an identity (coordinate) tensor",
                                "a tensor over memory or registers", "store into a data tensor")

    def _offset(self, c):
        return add(self.base, self.layout(c))

    def _register(self, off) -> int:
        if not is_static(off):
            raise operand_error("a register tensor's element", "a dynamic coordinate",
                                "a static coordinate (registers cannot be indexed dynamically)",
                                "index with Python ints; unroll loops with ws.static_range")
        return off

    def _load(self, off):
        e = self.engine
        if isinstance(e, Pointer):
            return e[off]
        if isinstance(e, Fragment):
            return e[self._register(off)]
        return idx2crd(off, e.layout.shape)

    def _slice(self, c):
        lay = self.layout
        if isinstance(lay, ComposedLayout):
            return LayoutTensor(self.engine, lay(c), self.base)
        sub, off = slice_and_offset(c, lay)
        if isinstance(self.engine, Pointer):
            ptr = self.engine if is_static(off) and off == 0 else self.engine + off
            return LayoutTensor(ptr, sub, 0)
        if isinstance(self.engine, Fragment):
            self._register(off)
        return LayoutTensor(self.engine, sub, add(self.base, off))

    # -- whole-tensor helpers -------------------------------------------------------------------
    def _static_size(self, what) -> int:
        n = self.size()
        if not is_static(n):
            raise operand_error(what, f"a tensor of dynamic size {tuple_repr(self.shape)}",
                                "a tensor of static size", "tile it first (ws.layout.local_tile)")
        return n

    def fill(self, value) -> None:
        """Store ``value`` into every element (static size; unrolled)."""
        for i in range(self._static_size("LayoutTensor.fill()")):
            self[i] = value

    def load(self) -> Fragment:
        """All elements, in 1-D (column-major coordinate) order, as a fragment (static size)."""
        n = self._static_size("LayoutTensor.load()")
        vals = [self[i] for i in range(n)]
        if self.dtype is None:
            raise operand_error("LayoutTensor.load()", "an identity tensor", "a data tensor",
                                "read coordinates element by element")
        return Fragment(self.dtype, vals)

    def store(self, frag) -> None:
        """Store the fragment (or sequence) ``frag`` into the elements in 1-D order."""
        n = self._static_size("LayoutTensor.store()")
        if len(frag) != n:
            raise operand_error("LayoutTensor.store()", f"{len(frag)} values", f"{n} values "
                                f"(the tensor's size)", "store a fragment of the tensor's size")
        for i in range(n):
            self[i] = frag[i]

    # -- algebra hooks ------------------------------------------------------------------------
    def __layout_apply__(self, fn):
        return LayoutTensor(self.engine, fn(self.layout), self.base)

    def __layout_compose__(self, b):
        from .layout_algebra import composition
        return LayoutTensor(self.engine, composition(self.layout, b), self.base)

    # -- value protocol -----------------------------------------------------------------------
    def __extract_values__(self):
        base = [] if is_static(self.base) else [self.base]
        return [self.engine, self.layout] + base

    def __new_from_values__(self, values):
        base = self.base if is_static(self.base) else values[2]
        return LayoutTensor(values[0], values[1], base)

    def __static_key__(self):
        e = self.engine
        kind = (("ptr", str(e.value.type)) if isinstance(e, Pointer) else
                e.__static_key__() if hasattr(e, "__static_key__") else type(e).__name__)
        return ("LayoutTensor", kind, self.layout.__static_key__(),
                self.base if is_static(self.base) else "?")

    def __repr__(self) -> str:
        e = self.engine
        what = (f"{e.space} {e.dtype.__name__}" if isinstance(e, Pointer) else
                f"rmem {e.dtype.__name__}" if isinstance(e, Fragment) else "coord")
        return f"<LayoutTensor {what} {self.layout!r}>"

    def __bool__(self):
        raise TypeError("a layout tensor has no static truth value")


def _coord(coord):
    if isinstance(coord, slice):
        if coord != slice(None):
            raise operand_error("a tensor coordinate", coord, "an int, a dynamic integer, None "
                                "or ':'", "select whole modes with None or ':'")
        return None
    if is_tuple(coord):
        return tuple(_coord(c) for c in coord)
    return coord



# -- construction ---------------------------------------------------------------------------
def make_tensor(engine, layout=None) -> LayoutTensor:
    """A tensor over ``engine`` with ``layout`` (CuTe ``make_tensor``). ``engine``: a
    ``ws.Pointer`` (gmem or smem; ``layout`` required), a ``ws.Tensor`` kernel parameter
    (default layout: its dynamic shape and strides, ``make_layout(t.shape, t.strides)``), a
    ``ws.smem`` array view (default: its row-major layout, under ``make_swizzle`` when the
    array is swizzled) or a ``ws.mma.Fragment`` (default: ``make_layout(len(frag))``)."""
    from .smem import SmemArray
    from .tensor import Tensor
    if isinstance(engine, Tensor):
        lay = layout if layout is not None else make_layout(engine.shape, engine.strides)
        return LayoutTensor(engine.ptr, lay)
    if isinstance(engine, SmemArray):
        return LayoutTensor(engine.ptr, layout if layout is not None else engine.layout)
    if isinstance(engine, Fragment):
        lay = layout if layout is not None else make_layout(len(engine))
        return LayoutTensor(engine, lay)
    if isinstance(engine, Pointer):
        if layout is None:
            raise operand_error("ws.layout.make_tensor()", "a pointer without a layout",
                                "a layout for a pointer engine", "pass make_tensor(ptr, layout)")
        return LayoutTensor(engine, layout)
    raise operand_error("ws.layout.make_tensor()'s engine", type(engine).__name__,
                        "a ws.Pointer, a ws.Tensor parameter, a ws.smem array or a fragment",
                        "pass the memory the tensor views")


def make_fragment(layout_or_shape, dtype, value=0) -> LayoutTensor:
    """A register tensor (CuTe ``make_fragment`` / ``make_rmem_tensor``): ``cosize(layout)``
    registers of ``dtype`` filled with ``value``, viewed through ``layout`` (a shape gives its
    compact column-major layout). The layout must be static."""
    lay = as_layout(layout_or_shape, "ws.layout.make_fragment()'s layout")
    if not lay.is_static():
        raise operand_error("ws.layout.make_fragment()'s layout", lay, "a static layout",
                            "register tensors have a static size; tile the data first")
    return LayoutTensor(Fragment.filled(dtype, max(cosize(lay), 1), value), lay)


make_rmem_tensor = make_fragment


def make_fragment_like(tensor, dtype=None) -> LayoutTensor:
    """A register tensor of ``tensor``'s (static) shape, compact column-major, of ``dtype``
    (default the tensor's)."""
    return make_fragment(make_layout(_static_shape(tensor.shape)), dtype or tensor.dtype)


def _static_shape(shape):
    if is_tuple(shape):
        return tuple(_static_shape(s) for s in shape)
    if not is_static(shape):
        raise operand_error("ws.layout.make_fragment_like()", f"the dynamic shape {shape!r}",
                            "a static shape", "tile the tensor first (ws.layout.local_tile)")
    return shape


def make_identity_tensor(shape) -> LayoutTensor:
    """The tensor whose element at coordinate ``c`` is ``c`` itself, as a tuple (CuTe
    ``make_identity_tensor``): tile and partition it like the data tensor to get each element's
    global coordinate, e.g. for bounds predicates. Its elements cost the div/mod of ``idx2crd``
    (shifts and masks for power-of-two modes)."""
    lay = make_layout(shape)
    return LayoutTensor(_Counting(lay), lay)


# -- tiling ---------------------------------------------------------------------------------
def _project(t, proj):
    if proj is None:
        return t
    return tuple(x for x, p in zip(t, proj) if p is not None)


def local_tile(tensor, tiler, coord, proj=None) -> LayoutTensor:
    """The tile at ``coord`` of ``tensor`` tiled by ``tiler`` (CuTe ``local_tile``:
    ``zipped_divide(tensor, tiler)[(None,)*R, coord]``). ``tiler``: a tuple of tile sizes (or
    layouts), one per leading mode; ``coord``: the tile's coordinate among the tiles, ``None``
    entries keep that mode of tiles (``local_tile(gA, (bM, bK), (m, None))`` is
    ``(bM, bK, k_tiles)``). ``proj`` (e.g. ``(1, None, 1)``) keeps only the tiler and coordinate
    entries where it is not None (CuTe's ``Step<_1, X, _1>``)."""
    if proj is not None:
        tiler, coord = _project(tiler, proj), _project(coord, proj)
    from .layout_algebra import zipped_divide
    t = zipped_divide(tensor, tiler)
    r0 = len(tiler) if is_tuple(tiler) else 1
    first = (None,) * r0
    if is_tuple(coord):
        r1 = _rank1(t)
        coord = tuple(coord) + (None,) * (r1 - len(coord))
    return t[first, coord]


def _rank1(t) -> int:
    from .layout_core import get
    lay = t.layout.outer if isinstance(t.layout, ComposedLayout) else t.layout
    return get(lay, 1).rank()


def local_partition(tensor, thr_layout, thr_idx, proj=None) -> LayoutTensor:
    """The elements of ``tensor`` that thread ``thr_idx`` owns when the threads, arranged by
    ``thr_layout``, tile it repeatedly (CuTe ``local_partition``: the tensor divided by
    ``thr_layout``'s shape, at the thread's coordinate ``thr_layout.get_flat_coord(thr_idx)`` in
    the tile mode). E.g. a (32, 8):(8, 1) thread layout over a (128, 64) tile gives each of the
    256 threads a (4, 8) tensor with steps of 32 rows and 8 columns."""
    thr = as_layout(thr_layout, "ws.layout.local_partition()'s thread layout")
    tiler = product_each(thr.shape)
    hier = thr.get_hier_coord(thr_idx)
    if is_tuple(thr.shape):
        coord = tuple(crd2idx(c, s) for c, s in zip(hier, thr.shape))
    else:
        coord = (hier,)
    if proj is not None:
        tiler, coord = _project(tiler, proj), _project(coord, proj)
    from .layout_algebra import zipped_divide
    t = zipped_divide(tensor, tiler)
    return t[tuple(coord), (None,) * _rank1(t)]


def copy(src, dst) -> None:
    """``dst[i] = src[i]`` for every 1-D coordinate ``i`` (CuTe's elementwise ``copy``; static
    size, unrolled into loads and stores; values are converted to ``dst``'s dtype)."""
    n = src._static_size("ws.layout.copy()'s source")
    m = dst._static_size("ws.layout.copy()'s destination")
    if n != m:
        raise operand_error("ws.layout.copy()", f"sizes {n} and {m}", "tensors of equal size",
                            "partition both tensors the same way")
    for i in range(n):
        v = src[i]
        dst[i] = v if not isinstance(v, Scalar) or dst.dtype is None else as_dynamic(v, dst.dtype)
