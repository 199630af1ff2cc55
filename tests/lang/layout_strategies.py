"""Hypothesis strategies for static layouts (tests of ws.layout). Sizes and strides are powers
of two, so CuTe's divisibility conditions hold and every composition is defined."""
from hypothesis import strategies as st

import warpstage as ws

L = ws.layout

pow2 = st.sampled_from([1, 2, 4, 8])
stride = st.sampled_from([0, 1, 2, 4, 8, 16, 32])


@st.composite
def shapes(draw, max_modes=3, nested=True):
    """A shape of 1..max_modes modes, a mode optionally a nested pair."""
    n = draw(st.integers(1, max_modes))
    out = []
    for _ in range(n):
        if nested and draw(st.booleans()) and draw(st.booleans()):
            out.append((draw(pow2), draw(pow2)))
        else:
            out.append(draw(pow2))
    return tuple(out)


def _like(shape, leaves):
    it = iter(leaves)

    def build(s):
        return tuple(build(x) for x in s) if isinstance(s, tuple) else next(it)
    return build(shape)


@st.composite
def layouts(draw, max_modes=3, nested=True):
    """Any static layout (strides may repeat or be 0: not necessarily injective)."""
    shape = draw(shapes(max_modes, nested))
    n = len(ws.layout.flatten(L.make_layout(shape)).shape) if isinstance(shape, tuple) else 1
    return L.make_layout(shape, _like(shape, [draw(stride) for _ in range(n)]))


@st.composite
def injective_layouts(draw, max_modes=3):
    """An injective layout: its modes, in a random stride order, each start at a multiple (1 or
    2) of the extent of the smaller ones."""
    sizes = [draw(st.sampled_from([2, 4, 8])) for _ in range(draw(st.integers(1, max_modes)))]
    order = draw(st.permutations(range(len(sizes))))
    strides = [0] * len(sizes)
    extent = 1
    for k in order:
        strides[k] = extent * draw(st.sampled_from([1, 2]))
        extent = strides[k] * sizes[k]
    return L.make_layout(tuple(sizes), tuple(strides))


@st.composite
def compact_layouts(draw, max_modes=3):
    """A bijection onto [0, size): a compact layout with a random mode order."""
    sizes = tuple(draw(st.sampled_from([2, 4, 8])) for _ in range(draw(st.integers(1, max_modes))))
    order = tuple(draw(st.permutations(range(len(sizes)))))
    return L.make_ordered_layout(sizes, order)


def images(layout):
    return [layout(i) for i in range(L.size(layout))]
