"""``Layout``: CuTe's shape:stride function from coordinates to indices, with static and dynamic
leaves, and its construction, queries and coordinate mapping (``ws.layout``, docs/layouts.md).

A layout ``S:D`` maps a coordinate of the (nested) shape ``S`` to the index ``sum(c_i * d_i)``
over the flattened modes. A coordinate may be a natural (congruent) tuple, an int (split over
the shape in column-major order: the 1-D coordinate of CuTe), or any mix of the two per mode.
Leaves are static ints or dynamic integers (layout_int.py); the arithmetic folds what is static,
so a static layout at a static coordinate is a Python int and emits no IR.

Binding time: a layout follows the value protocol. Its static leaves and its tuple structure are
its skeleton and static key; its dynamic leaves (shape first, then stride, in flattened order)
are its values. On the host a leaf is made dynamic with ``ws.Int32(n)`` (or ``ws.Int64(n)``);
a plain int in a layout is static, as in CuTe. Inside a trace a dynamic leaf is a ``ws.Int32``.
"""
from __future__ import annotations

from ..errors import OperandError
from .layout_int import (add, congruent, depth, flatten, floordiv, is_int, is_static,
                         is_tuple, mod, mul, prefix_product, product, rank, tuple_repr,
                         unflatten_like)
from .operands import operand_error

__all__ = ["Layout", "make_layout", "make_ordered_layout", "make_identity_layout", "crd2idx",
           "idx2crd", "size", "cosize", "rank_of", "depth_of", "get", "select", "flatten_layout",
           "group", "make_layout_from_modes", "slice_and_offset", "is_layout", "as_layout",
           "check_int_tuple", "has_none"]


def check_int_tuple(t, what: str):
    """``t`` if it is an int, a dynamic integer or a nested tuple of them; else OperandError."""
    if is_tuple(t):
        for x in t:
            check_int_tuple(x, what)
        return t
    if is_int(t):
        return t
    if isinstance(t, list):
        raise operand_error(what, t, "an int or a (nested) tuple of ints", "pass a tuple, e.g. "
                            f"{tuple(t)!r}, not a list")
    raise operand_error(what, t, "an int, a dynamic integer (ws.Int32) or a nested tuple of them",
                        "pass static ints, or ws.Int32(n) for a leaf known only at run time")


def check_shape(shape, what: str):
    """``shape`` checked as ``check_int_tuple`` does, with every static leaf at least 1 (a mode
    of extent 0 or less holds no coordinate); else OperandError."""
    check_int_tuple(shape, what)
    leaves = [shape]
    while leaves:
        x = leaves.pop()
        if is_tuple(x):
            leaves.extend(x)
        elif isinstance(x, int) and not isinstance(x, bool) and x < 1:
            raise operand_error(what, shape, "extents of at least 1 in every mode",
                                "drop or fix the mode of extent " + str(x))
    return shape


class Layout:
    """A layout ``shape:stride`` (CuTe's ``Layout``). ``shape`` and ``stride`` are congruent
    nested tuples (or single leaves) of static ints and dynamic integers; units are elements.

    ``layout(c)`` / ``layout(c0, c1, ...)`` is the index of coordinate ``c`` (an int, a natural
    tuple or a mix; a Python int if everything involved is static, else a dynamic integer);
    with ``None`` in the coordinate it is the sliced sub-layout (``layout(None, 0)``, CuTe's
    ``layout(_, 0)``). Raises OperandError for a coordinate of the wrong rank."""

    __slots__ = ("shape", "stride")

    def __init__(self, shape, stride):
        check_int_tuple(shape, "ws.layout.Layout's shape")
        check_int_tuple(stride, "ws.layout.Layout's stride")
        if not congruent(shape, stride):
            raise operand_error("ws.layout.make_layout()", f"shape {tuple_repr(shape)} with stride "
                                f"{tuple_repr(stride)}", "a stride congruent with the shape (the "
                                "same nesting of tuples)", "give one stride per shape leaf, "
                                "nested the same way, or omit stride for column-major")
        self.shape = shape
        self.stride = stride

    # -- evaluation ---------------------------------------------------------------------------
    def __call__(self, *coord):
        c = coord[0] if len(coord) == 1 else tuple(coord)
        if has_none(c):
            return slice_and_offset(c, self)[0]
        return _crd2idx(c, self.shape, self.stride)

    # -- queries ------------------------------------------------------------------------------
    def size(self):
        return product(self.shape)

    def cosize(self):
        return cosize(self)

    def rank(self) -> int:
        return rank(self.shape)

    def depth(self) -> int:
        return depth(self.shape)

    def __len__(self) -> int:
        return rank(self.shape)

    def __getitem__(self, i):
        return get(self, i)

    def is_static(self) -> bool:
        return all(is_static(x) for x in flatten(self.shape) + flatten(self.stride))

    def get_hier_coord(self, idx):
        """The coordinate whose index is ``idx`` for a layout that is a bijection onto its
        image in stride order (``idx2crd(idx, shape, stride)``)."""
        return _idx2crd(idx, self.shape, self.stride)

    def get_flat_coord(self, idx) -> tuple:
        return flatten(self.get_hier_coord(idx))

    def __eq__(self, other):
        return isinstance(other, Layout) and _key(self.shape) == _key(other.shape) and \
            _key(self.stride) == _key(other.stride)

    def __hash__(self):
        return hash((_key(self.shape), _key(self.stride)))

    def __repr__(self) -> str:
        return f"{tuple_repr(self.shape)}:{tuple_repr(self.stride)}"

    __str__ = __repr__

    # -- value protocol -----------------------------------------------------------------------
    def __extract_values__(self):
        return [x for x in flatten(self.shape) + flatten(self.stride) if not is_static(x)]

    def __new_from_values__(self, values):
        it = iter(values)
        flat = [x if is_static(x) else next(it) for x in flatten(self.shape) + flatten(self.stride)]
        n = len(flatten(self.shape))
        return Layout(unflatten_like(flat[:n], self.shape), unflatten_like(flat[n:], self.stride))

    def __static_key__(self):
        return ("Layout", _skeleton(self.shape), _skeleton(self.stride))

    def __ws_leaf_names__(self) -> list:
        """Names of the dynamic leaves (ABI slots in ``ws.explain``): ``shape[k]`` /
        ``stride[k]``, k the leaf's position in the flattened shape or stride."""
        fs, fd = flatten(self.shape), flatten(self.stride)
        return ([f"shape[{k}]" for k, x in enumerate(fs) if not is_static(x)]
                + [f"stride[{k}]" for k, x in enumerate(fd) if not is_static(x)])

    def __ws_describe__(self):
        """(type description, key description) for ``ws.explain``: ``?`` marks the dynamic
        leaves (the layout's ABI slots); the rest is static and part of the key."""
        dyn = len(self.__extract_values__())
        desc = f"Layout {tuple_repr(self.shape)}:{tuple_repr(self.stride)}"
        text = f"static {_skeleton_text(self.shape)}:{_skeleton_text(self.stride)}; {dyn} dynamic"
        return desc, text


def _key(t):
    """Structural equality key; dynamic leaves compare by identity."""
    if is_tuple(t):
        return tuple(_key(x) for x in t)
    return t if is_static(t) else ("dyn", id(t))


def _skeleton(t):
    if is_tuple(t):
        return tuple(_skeleton(x) for x in t)
    return t if is_static(t) else "?"


def _skeleton_text(t) -> str:
    if is_tuple(t):
        return "(" + ",".join(_skeleton_text(x) for x in t) + ")"
    return str(t) if is_static(t) else "?"


def has_none(c) -> bool:
    """True if the coordinate ``c`` has a ``None`` (a slice) anywhere."""
    return c is None or (is_tuple(c) and any(has_none(x) for x in c))


def is_layout(x) -> bool:
    return isinstance(x, Layout)


def as_layout(x, what: str) -> Layout:
    """``x`` if it is a Layout; a shape (int or tuple) becomes its compact column-major layout
    (CuTe's tilers accept shapes); anything else is an OperandError."""
    if isinstance(x, Layout):
        return x
    if is_int(x) or is_tuple(x):
        return make_layout(x)
    raise operand_error(what, x, "a ws.layout.Layout or a shape", "build one with "
                        "ws.layout.make_layout(shape, stride)")


# -- construction ---------------------------------------------------------------------------
def make_layout(shape, stride=None) -> Layout:
    """The layout ``shape:stride`` (CuTe ``make_layout``). Without ``stride``: the compact
    column-major stride (CuTe's ``LayoutLeft``; a static size-1 mode gets stride 0).
    ``shape``/``stride``: ints, dynamic integers (``ws.Int32(n)`` on the host) or nested
    tuples. Raises OperandError when they are not congruent or not integers."""
    check_shape(shape, "ws.layout.make_layout()'s shape")
    if stride is None:
        stride = prefix_product(shape)
    return Layout(shape, stride)


def make_layout_from_modes(*layouts) -> Layout:
    """A layout whose modes are ``layouts`` (CuTe ``make_layout(l0, l1, ...)``)."""
    return Layout(tuple(x.shape for x in layouts), tuple(x.stride for x in layouts))


def make_ordered_layout(shape, order) -> Layout:
    """A compact layout of ``shape`` whose modes get strides in the order ``order`` (CuTe
    ``make_ordered_layout``): the mode with the smallest ``order`` value has stride 1, the next
    the size of the first, ... ``order`` is congruent with ``shape`` (static ints)."""
    check_shape(shape, "ws.layout.make_ordered_layout()'s shape")
    fs, fo = flatten(shape), flatten(order)
    if len(fs) != len(fo) or not all(is_static(o) for o in fo):
        raise operand_error("ws.layout.make_ordered_layout()'s order", order,
                            f"{len(fs)} static ints, one per leaf of shape {tuple_repr(shape)}",
                            "give each mode its rank in stride order, e.g. (1, 0) for row-major")
    strides = [None] * len(fs)
    cur = 1
    for k in sorted(range(len(fs)), key=lambda k: (fo[k], k)):
        strides[k] = 0 if is_static(fs[k]) and fs[k] == 1 else cur
        cur = mul(cur, fs[k])
    return Layout(shape, unflatten_like(strides, shape))


def make_identity_layout(shape) -> "Layout":
    """The identity layout of ``shape`` (CuTe ``make_identity_layout``): it maps a coordinate
    to itself; here the compact column-major layout of ``shape`` whose index is the coordinate's
    1-D value (``idx2crd(layout(c), shape)`` gives ``c`` back). For coordinate tensors use
    ``ws.layout.make_identity_tensor``."""
    return make_layout(shape)


# -- coordinate mapping ---------------------------------------------------------------------
def _coord_leaf(c, what):
    if is_int(c):
        return c
    raise operand_error(what, c, "an int or a dynamic integer coordinate",
                        "index with ints, ws.Int32 values or tuples of them")


def crd2idx(coord, shape, stride=None):
    """The index of ``coord`` in the layout ``shape:stride`` (CuTe ``crd2idx``; ``stride``
    default: column-major compact). An int coordinate for a tuple mode is split over that mode
    column-major. Static parts fold; only the needed multiply-adds are emitted. A static extent
    below 1 in ``shape`` raises OperandError (as ``make_layout`` does)."""
    if isinstance(shape, Layout):
        return _crd2idx(coord, shape.shape, shape.stride)
    return _crd2idx(coord, check_shape(shape, "ws.layout.crd2idx()'s shape"), stride)


def _crd2idx(coord, shape, stride):
    if stride is None:
        stride = prefix_product(shape)
    if is_tuple(coord):
        if not is_tuple(shape) or len(coord) != len(shape):
            raise operand_error("a layout coordinate", coord, f"an int or a coordinate of rank "
                                f"{rank(shape)} for the shape {tuple_repr(shape)}",
                                "give one entry per mode (or a single int)")
        out = 0
        for c, s, d in zip(coord, shape, stride):
            out = add(out, _crd2idx(c, s, d))
        return out
    c = _coord_leaf(coord, "a layout coordinate")
    if is_tuple(shape):
        out = 0
        for k, (s, d) in enumerate(zip(shape, stride)):
            if k == len(shape) - 1:
                return add(out, _crd2idx(c, s, d))
            n = product(s)
            out = add(out, _crd2idx(mod(c, n), s, d))
            c = floordiv(c, n)
        return out
    return mul(c, stride)


def idx2crd(idx, shape, stride=None):
    """The coordinate of ``idx`` (CuTe ``idx2crd``). Without ``stride``: the column-major split
    over ``shape`` (the last mode takes the rest, unbounded); with ``stride``: each leaf is
    ``(idx // stride) % shape``. Static parts fold; a power-of-two divisor is a shift/mask. A
    static extent below 1 in ``shape`` raises OperandError (as ``make_layout`` does)."""
    return _idx2crd(idx, check_shape(shape, "ws.layout.idx2crd()'s shape"), stride)


def _idx2crd(idx, shape, stride=None):
    if stride is not None:
        if is_tuple(shape):
            return tuple(_idx2crd(idx, s, d) for s, d in zip(shape, stride))
        if is_static(stride) and stride == 0:
            return 0
        return mod(floordiv(idx, stride), shape)
    if is_tuple(shape):
        out = []
        for k, s in enumerate(shape):
            if k == len(shape) - 1:
                out.append(_idx2crd(idx, s))
                break
            n = product(s)
            out.append(_idx2crd(mod(idx, n), s))
            idx = floordiv(idx, n)
        return tuple(out)
    return idx


# -- queries --------------------------------------------------------------------------------
def size(x, mode=None):
    """The number of coordinates of a layout or shape (CuTe ``size``); of mode ``mode`` if given."""
    if mode is not None:
        x = get(getattr(x, "layout", x), mode)
    return product(x.shape if hasattr(x, "shape") else x)


def cosize(layout: Layout):
    """One past the largest index (CuTe ``cosize``): ``layout(size - 1) + 1`` for a layout
    with non-negative strides."""
    fs, fd = flatten(layout.shape), flatten(layout.stride)
    out = 1
    for s, d in zip(fs, fd):
        out = add(out, mul(add(s, -1), d))
    return out


def rank_of(x) -> int:
    return rank(x.shape if hasattr(x, "shape") else x)


def depth_of(x) -> int:
    return depth(x.shape if hasattr(x, "shape") else x)


def get(layout: Layout, *path):
    """Mode ``path[0]`` (then ``path[1]`` of it, ...) as a layout (CuTe ``get<I...>``/
    ``layout<I>``). A path may also be one tuple. Raises OperandError out of range."""
    if len(path) == 1 and is_tuple(path[0]):
        path = path[0]
    shape, stride = layout.shape, layout.stride
    for i in path:
        if not is_tuple(shape):
            if i == 0:
                continue
            raise operand_error("ws.layout.get()", i, f"mode 0 of the rank-1 mode {shape}",
                                "index modes within the layout's rank")
        if not isinstance(i, int) or not -len(shape) <= i < len(shape):
            raise operand_error("ws.layout.get()", i, f"a mode index in [0, {len(shape)})",
                                f"the layout {layout} has rank {len(shape)}")
        shape, stride = shape[i], stride[i]
    return Layout(shape, stride)


def select(layout: Layout, *modes) -> Layout:
    """The layout of modes ``modes`` (CuTe ``select<I...>``), in that order."""
    if len(modes) == 1 and is_tuple(modes[0]):
        modes = modes[0]
    parts = [get(layout, m) for m in modes]
    return make_layout_from_modes(*parts)


def flatten_layout(layout: Layout) -> Layout:
    """The layout with all nesting removed (CuTe ``flatten``); the same function."""
    return Layout(flatten(layout.shape), flatten(layout.stride))


def group(layout: Layout, begin: int, end: int) -> Layout:
    """Modes [begin, end) grouped into one nested mode (CuTe ``group<B, E>``)."""
    shape = layout.shape if is_tuple(layout.shape) else (layout.shape,)
    stride = layout.stride if is_tuple(layout.stride) else (layout.stride,)
    if not 0 <= begin <= end <= len(shape):
        raise operand_error("ws.layout.group()", (begin, end), f"0 <= begin <= end <= {len(shape)}",
                            "pick a range of the layout's modes")
    return Layout(shape[:begin] + (shape[begin:end],) + shape[end:],
                  stride[:begin] + (stride[begin:end],) + stride[end:])


def slice_and_offset(coord, layout: Layout):
    """(sub-layout, offset) of a coordinate with ``None`` entries (CuTe ``slice_and_offset``):
    the sub-layout keeps the modes at ``None`` (a ``None`` for a nested mode keeps it whole;
    the nesting of tuple coordinates is flattened one level, as in CuTe), the offset is the
    index of the coordinate with every ``None`` read as 0."""
    shape, stride = _slice(coord, layout.shape), _slice(coord, layout.stride)
    offset = _crd2idx(_zero_nones(coord), layout.shape, layout.stride)
    return Layout(shape, stride), offset


def _slice(c, t):
    if c is None:
        return t
    if is_tuple(c):
        if not is_tuple(t) or len(c) != len(t):
            raise OperandError(f"slicing a layout: the coordinate {c!r} does not match the shape "
                               f"{tuple_repr(t)}; give one entry (an int or None) per mode")
        out = ()
        for x, y in zip(c, t):
            if x is None:
                out += (y,)
            elif is_tuple(x):
                out += _slice(x, y)
        return out
    return ()


def _zero_nones(c):
    if c is None:
        return 0
    if is_tuple(c):
        return tuple(_zero_nones(x) for x in c)
    return c
