"""The layout algebra (CuTe's ``coalesce``, ``composition``, ``complement``, inverses, divides
and products) on ``ws.layout.Layout`` (docs/layouts.md gives the definitions and pictures).

Every operation keeps the function it defines; where CuTe states a post-condition, the tests
check it (tests/lang/test_layout_algebra.py). The decisions an operation makes (which modes
merge, where a stride splits a mode) read only static leaves. A dynamic leaf is accepted where
no decision depends on it: a dynamic last mode (a sequence length, M or N of a GEMM), a dynamic
stride of a mode that is kept whole, a dynamic cotarget of ``complement``. Elsewhere the
operation raises ``BindingTimeError`` naming the leaf and the fix (make it static).
"""
from __future__ import annotations

from .layout_core import Layout, as_layout, get, make_layout_from_modes
from .layout_int import (ceil_div, flatten, is_static, is_tuple, mul, product, require_static,
                         tuple_repr)
from .operands import operand_error

__all__ = ["coalesce", "composition", "complement", "right_inverse", "left_inverse",
           "logical_divide", "zipped_divide", "tiled_divide", "flat_divide", "logical_product",
           "blocked_product", "raked_product", "zip_layouts", "append_modes", "filter_zeros"]


def _modes(layout: Layout) -> list:
    return list(zip(flatten(layout.shape), flatten(layout.stride)))


def _from_modes(modes: list) -> Layout:
    """A layout of flat ``modes``: ``1:0`` for none, ``s:d`` for one, a tuple otherwise."""
    if not modes:
        return Layout(1, 0)
    if len(modes) == 1:
        return Layout(modes[0][0], modes[0][1])
    return Layout(tuple(s for s, _ in modes), tuple(d for _, d in modes))


def _one(x) -> bool:
    return is_static(x) and x == 1


# -- coalesce -------------------------------------------------------------------------------
def coalesce(layout: Layout, profile=None) -> Layout:
    """The same function with the fewest modes (CuTe ``coalesce``): static size-1 modes are
    dropped and neighbours ``s0:d0, s1:d1`` with ``d1 == s0 * d0`` merge into ``s0*s1:d0``.
    ``profile`` (a tuple, e.g. ``(1, 1)``): coalesce each top-level mode separately instead,
    keeping the rank (nested profiles recurse). Result: a leaf layout for one mode, ``1:0``
    when every mode is size 1."""
    if profile is not None and is_tuple(profile):
        parts = [coalesce(get(layout, i), p) if i < len(profile) else get(layout, i)
                 for i, p in enumerate(profile)]
        rest = [get(layout, i) for i in range(len(profile), layout.rank())]
        return make_layout_from_modes(*(parts + rest))
    out: list = []
    for s, d in _modes(layout):
        if _one(s):
            continue
        if out:
            ps, pd = out[-1]
            if is_static(ps) and is_static(pd) and is_static(d) and d == ps * pd:
                out[-1] = (mul(ps, s), pd)
                continue
        out.append((s, d))
    return _from_modes(out)


def filter_zeros(layout: Layout) -> Layout:
    """The layout with every stride-0 mode replaced by ``1:0`` (CuTe ``filter_zeros``)."""
    def f(s, d):
        if is_tuple(s):
            pairs = [f(x, y) for x, y in zip(s, d)]
            return tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)
        return (1, 0) if is_static(d) and d == 0 else (s, d)
    s, d = f(layout.shape, layout.stride)
    return Layout(s, d)


# -- composition ----------------------------------------------------------------------------
def composition(a, b):
    """``a o b``: the layout ``c`` with ``c(i) == a(b(i))`` for every ``i < size(b)`` and the
    shape of ``b`` (CuTe ``composition``). ``b`` may be a layout, an int ``n`` (``n:1``) or a
    tuple *tiler* (one layout or int per mode of ``a``: composes mode by mode). Tensors and
    swizzled (composed) layouts compose through their outer layout.

    Raises OperandError when a stride of ``b`` does not divide (or is not divisible by) the
    modes of ``a`` it crosses (CuTe's divisibility conditions), BindingTimeError when that
    decision needs a dynamic leaf."""
    hook = getattr(a, "__layout_compose__", None)
    if hook is not None:
        return hook(b)
    a = as_layout(a, "ws.layout.composition()'s first operand")
    if is_tuple(b):
        if len(b) > a.rank():
            raise operand_error("ws.layout.composition()'s tiler", b,
                                f"at most {a.rank()} modes (the rank of {a})",
                                "give one tile per mode of the layout")
        parts = [composition(get(a, i), t) if t is not None else get(a, i)
                 for i, t in enumerate(b)]
        parts += [get(a, i) for i in range(len(b), a.rank())]
        return make_layout_from_modes(*parts)
    b = as_layout(b, "ws.layout.composition()'s second operand") if not isinstance(b, Layout) else b
    if is_tuple(b.shape):
        parts = [composition(a, get(b, i)) for i in range(b.rank())]
        return make_layout_from_modes(*parts)
    return _compose_mode(coalesce(a), b.shape, b.stride, a, b)


def _compose_mode(a: Layout, n, r, a_orig, b_orig) -> Layout:
    """``a o n:r`` for one mode of b: divide ``r`` out of a's modes, then keep ``n`` of them."""
    if is_static(r) and r == 0:
        return Layout(n, 0)
    modes = _modes(a)
    what = f"composition {a_orig} o {b_orig}"
    # 1. skip the first r elements' worth of modes (a's last mode is unbounded)
    i = 0
    while i < len(modes) - 1 and not _one(r):
        s, d = modes[i]
        s = require_static(s, f"{what}: the mode size {s!r} that the stride {tuple_repr(r)} "
                           "crosses", "make the layout's inner modes static")
        r = require_static(r, f"{what}: the stride {r!r} of the second layout",
                           "use a static stride, or compose with a layout of one mode")
        if r % s == 0:
            r //= s
            i += 1
        elif s % r == 0:
            modes[i] = (s // r, mul(d, r))
            r = 1
        else:
            raise operand_error(what, f"the stride {r} against the mode {s}:{d}",
                                "a stride divisible by the mode's size or dividing it (CuTe's "
                                "stride divisibility condition)",
                                "choose tile strides that are multiples or divisors of the "
                                "layout's mode sizes")
    rest = modes[i:]
    if not _one(r):
        s, d = rest[0]
        rest[0] = (None, mul(d, r))          # the last mode, unbounded
    # 2. keep the first n elements' worth of the remaining modes
    out = []
    for j, (s, d) in enumerate(rest):
        if _one(n) and out:
            break
        if j == len(rest) - 1 or s is None:
            out.append((n, d))
            break
        s = require_static(s, f"{what}: the mode size {s!r} that the shape {tuple_repr(n)} "
                           "covers", "make the layout's inner modes static")
        n = require_static(n, f"{what}: the size {n!r} of the second layout's mode",
                           "use a static tile size, or compose with a layout of one mode")
        if n % s == 0:
            out.append((s, d))
            n //= s
        elif s % n == 0:
            out.append((n, d))
            n = 1
            break
        else:
            raise operand_error(what, f"the size {n} against the mode {s}:{d}",
                                "a size divisible by the mode's size or dividing it (CuTe's "
                                "shape divisibility condition)",
                                "choose tile sizes that are multiples or divisors of the "
                                "layout's mode sizes")
    return _from_modes(out)


# -- complement and inverses ------------------------------------------------------------------
def complement(layout: Layout, cotarget=None) -> Layout:
    """The layout ``c`` that fills in what ``layout`` leaves out of ``[0, cotarget)`` (CuTe
    ``complement``; ``cotarget`` default ``cosize(layout)``; an int, a shape or a dynamic
    integer): its strides are increasing, its image is disjoint from ``layout``'s except at 0,
    and ``(layout, c)`` covers ``[0, cotarget)`` when the sizes divide. ``layout`` must be
    static; raises OperandError when its modes overlap."""
    layout = as_layout(layout, "ws.layout.complement()'s layout")
    if cotarget is None:
        from .layout_core import cosize
        cotarget = cosize(layout)
    elif is_tuple(cotarget):
        cotarget = product(cotarget)
    modes = []
    for s, d in _modes(layout):
        s = require_static(s, f"complement of {layout}: the mode size {s!r}",
                           "the layout whose complement is taken must be static")
        d = require_static(d, f"complement of {layout}: the stride {d!r}",
                           "the layout whose complement is taken must be static")
        if s != 1 and d != 0:
            modes.append((s, abs(d)))
    modes.sort(key=lambda m: (m[1], m[0]))
    out, cur = [], 1
    for s, d in modes:
        if d % cur != 0:
            raise operand_error(f"ws.layout.complement({layout})", f"the stride {d} after an "
                                f"extent of {cur}", "modes that do not overlap (each stride a "
                                "multiple of the extent of the smaller ones)",
                                "complement takes an injective layout; coalesce or fix its strides")
        out.append((d // cur, cur))
        cur = s * d
    out.append((ceil_div(cotarget, cur), cur))
    return coalesce(_from_modes(out))


def right_inverse(layout: Layout) -> Layout:
    """A layout ``r`` with ``layout(r(i)) == i`` for every ``i < size(r)`` (CuTe
    ``right_inverse``): the inverse on the contiguous part of ``layout``'s image ``[0, size(r))``.
    ``layout`` must be static."""
    layout = coalesce(layout)
    modes = _modes(layout)
    for s, d in modes:
        require_static(s, f"right_inverse of {layout}", "the layout must be static")
        require_static(d, f"right_inverse of {layout}", "the layout must be static")
    pre, acc = [], 1
    for s, _ in modes:
        pre.append(acc)
        acc *= s
    out, cur = [], 1
    for k in sorted(range(len(modes)), key=lambda k: (modes[k][1], modes[k][0])):
        s, d = modes[k]
        if d == 0 or s == 1:
            continue
        if d != cur:
            break
        out.append((s, pre[k]))
        cur *= s
    return coalesce(_from_modes(out))


def left_inverse(layout: Layout) -> Layout:
    """A layout ``l`` with ``l(layout(i)) == i`` for every ``i < size(layout)`` when ``layout``
    is injective (CuTe ``left_inverse``: the right inverse of ``(layout, complement(layout))``)."""
    layout = as_layout(layout, "ws.layout.left_inverse()'s layout")
    return right_inverse(make_layout_from_modes(layout, complement(layout)))


# -- divides --------------------------------------------------------------------------------
def logical_divide(layout, tiler):
    """``layout`` split into (tile, rest) (CuTe ``logical_divide``): for a layout tiler ``t``,
    ``composition(layout, (t, complement(t, size(layout))))``: mode 0 is one tile, mode 1
    enumerates the tiles. A tuple tiler divides mode by mode (each entry a layout or an int
    ``n``, i.e. ``n:1``). Tensors and composed layouts are divided through their layout."""
    hook = getattr(layout, "__layout_apply__", None)
    if hook is not None:
        return hook(lambda lay: logical_divide(lay, tiler))
    layout = as_layout(layout, "ws.layout.logical_divide()'s layout")
    if is_tuple(tiler):
        _check_tiler_rank(layout, tiler, "logical_divide")
        parts = [logical_divide(get(layout, i), t) if t is not None else get(layout, i)
                 for i, t in enumerate(tiler)]
        parts += [get(layout, i) for i in range(len(tiler), layout.rank())]
        return make_layout_from_modes(*parts)
    t = as_layout(tiler, "ws.layout.logical_divide()'s tiler")
    return composition(layout, make_layout_from_modes(t, complement(t, layout.size())))


def _check_tiler_rank(layout, tiler, name):
    if len(tiler) > layout.rank():
        raise operand_error(f"ws.layout.{name}()'s tiler", tiler,
                            f"at most {layout.rank()} modes (the rank of {layout})",
                            "give one tile per mode of the layout")


def zipped_divide(layout, tiler):
    """``((tile modes), (rest modes))`` (CuTe ``zipped_divide``): ``logical_divide`` with the
    tile parts of every mode gathered into mode 0 and the rest (and the modes the tiler does not
    cover) into mode 1. ``zipped_divide(A, t)(None, k)`` is tile ``k``."""
    hook = getattr(layout, "__layout_apply__", None)
    if hook is not None:
        return hook(lambda lay: zipped_divide(lay, tiler))
    layout = as_layout(layout, "ws.layout.zipped_divide()'s layout")
    d = logical_divide(layout, tiler)
    if not is_tuple(tiler):
        return d
    r = len(tiler)
    tiles = [get(d, i, 0) if tiler[i] is not None else None for i in range(r)]
    rests = [get(d, i, 1) if tiler[i] is not None else get(d, i) for i in range(r)]
    rests += [get(d, i) for i in range(r, d.rank())]
    tiles = [t for t in tiles if t is not None]
    return make_layout_from_modes(make_layout_from_modes(*tiles), make_layout_from_modes(*rests))


def tiled_divide(layout, tiler):
    """``((tile modes), rest0, rest1, ...)`` (CuTe ``tiled_divide``)."""
    hook = getattr(layout, "__layout_apply__", None)
    if hook is not None:
        return hook(lambda lay: tiled_divide(lay, tiler))
    z = zipped_divide(layout, tiler)
    return make_layout_from_modes(get(z, 0), *_split(get(z, 1)))


def flat_divide(layout, tiler):
    """``(tile0, tile1, ..., rest0, rest1, ...)`` (CuTe ``flat_divide``)."""
    hook = getattr(layout, "__layout_apply__", None)
    if hook is not None:
        return hook(lambda lay: flat_divide(lay, tiler))
    z = zipped_divide(layout, tiler)
    return make_layout_from_modes(*_split(get(z, 0)), *_split(get(z, 1)))


def _split(layout: Layout) -> list:
    if is_tuple(layout.shape):
        return [get(layout, i) for i in range(layout.rank())]
    return [layout]


# -- products -------------------------------------------------------------------------------
def logical_product(block, tiler):
    """``(block, complement(block, size(block)*cosize(tiler)) o tiler)`` (CuTe
    ``logical_product``): mode 0 is ``block``, mode 1 repeats it as ``tiler`` says. A tuple
    tiler multiplies mode by mode. ``block`` must be static."""
    block = as_layout(block, "ws.layout.logical_product()'s block")
    if is_tuple(tiler):
        _check_tiler_rank(block, tiler, "logical_product")
        parts = [logical_product(get(block, i), t) for i, t in enumerate(tiler)]
        parts += [get(block, i) for i in range(len(tiler), block.rank())]
        return make_layout_from_modes(*parts)
    tiler = as_layout(tiler, "ws.layout.logical_product()'s tiler")
    from .layout_core import cosize
    comp = complement(block, mul(block.size(), cosize(tiler)))
    return make_layout_from_modes(block, composition(comp, tiler))


def append_modes(layout: Layout, n: int) -> Layout:
    """``layout`` padded with ``1:0`` modes to rank ``n`` (CuTe ``append<N>``)."""
    modes = _split(layout) if layout.rank() > 1 or is_tuple(layout.shape) else [layout]
    modes += [Layout(1, 0)] * (n - len(modes))
    return make_layout_from_modes(*modes)


def zip_layouts(a: Layout, b: Layout) -> Layout:
    """Mode i of the result is ``(a_i, b_i)`` (CuTe ``zip`` of two layouts of one rank)."""
    return make_layout_from_modes(*[make_layout_from_modes(get(a, i), get(b, i))
                                    for i in range(a.rank())])


def _product_zip(block, tiler, block_first: bool) -> Layout:
    block = as_layout(block, "the product's block")
    tiler = as_layout(tiler, "the product's tiler")
    r = max(block.rank(), tiler.rank())
    p = logical_product(append_modes(block, r), append_modes(tiler, r))
    b, t = get(p, 0), get(p, 1)
    return zip_layouts(b, t) if block_first else zip_layouts(t, b)


def blocked_product(block, tiler) -> Layout:
    """Mode i is ``(block_i, tiler_i)`` of the logical product (CuTe ``blocked_product``): the
    block is repeated as contiguous blocks, arranged as ``tiler``. Both are layouts or shapes."""
    return _product_zip(block, tiler, True)


def raked_product(block, tiler) -> Layout:
    """Mode i is ``(tiler_i, block_i)`` of the logical product (CuTe ``raked_product``): the
    copies of the block are interleaved (raked) element by element."""
    return _product_zip(block, tiler, False)

