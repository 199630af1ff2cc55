"""ws.layout's algebra against its mathematical definitions (CuTe's post-conditions), by
hypothesis on random static layouts, and CuTe's documented worked examples."""
import pytest
from hypothesis import given, settings, strategies as st

import warpstage as ws
from layout_strategies import compact_layouts, images, injective_layouts, layouts, pow2

L = ws.layout
FEW = settings(max_examples=25, deadline=None)


def lay(shape, stride):
    return L.make_layout(shape, stride)


# -- CuTe's worked examples (docs: "CuTe Layout Algebra") -----------------------------------
@pytest.mark.parametrize("a, b, want", [
    (lay((6, 2), (8, 2)), lay((4, 3), (3, 1)), "((2,2),3):((24,2),8)"),
    (lay(20, 2), lay((5, 4), (4, 1)), "(5,4):(8,2)"),
    (lay((10, 2), (16, 4)), lay((5, 4), (1, 5)), "(5,(2,2)):(16,(80,4))"),
])
def test_composition_worked_examples(a, b, want):
    assert repr(L.composition(a, b)) == want


@pytest.mark.parametrize("a, cotarget, want", [
    (lay(4, 2), 24, "(2,3):(1,8)"),
    (lay((2, 2), (1, 6)), 24, "(3,2):(2,12)"),
    (lay((2, 4), (1, 2)), None, "1:0"),
])
def test_complement_worked_examples(a, cotarget, want):
    assert repr(L.complement(a, cotarget)) == want


def test_divide_and_product_worked_examples():
    assert repr(L.logical_divide(lay((4, 2, 3), (2, 1, 8)), lay(4, 2))) == "((2,2),(2,3)):((4,1),(2,8))"
    assert repr(L.logical_product(lay((2, 2), (4, 1)), lay(6, 1))) == "((2,2),(2,3)):((4,1),(2,8))"
    assert repr(L.blocked_product(lay((2, 5), (5, 1)), lay((3, 4), (1, 3)))) == \
        "((2,3),(5,4)):((5,10),(1,30))"
    assert repr(L.raked_product(lay((2, 5), (5, 1)), lay((3, 4), (1, 3)))) == \
        "((3,2),(4,5)):((10,5),(30,1))"
    a = lay((12, 32), (32, 1))
    assert repr(L.zipped_divide(a, (4, 8))) == "((4,8),(3,4)):((32,1),(128,8))"
    assert repr(L.tiled_divide(a, (4, 8))) == "((4,8),3,4):((32,1),128,8)"
    assert repr(L.flat_divide(a, (4, 8))) == "(4,8,3,4):(32,1,128,8)"


def test_coalesce_and_inverse_examples():
    assert repr(L.coalesce(lay((2, (1, 6)), (1, (6, 2))))) == "12:1"
    assert repr(L.coalesce(lay((2, 4), (1, 2)), (1, 1))) == "(2,4):(1,2)"
    assert repr(L.right_inverse(lay((4, 8), (8, 1)))) == "(8,4):(4,1)"
    assert repr(L.left_inverse(lay((4, 8), (8, 1)))) == "(8,4):(4,1)"


# -- properties -----------------------------------------------------------------------------
@FEW
@given(layouts())
def test_coalesce_keeps_size_and_function_with_fewest_modes(a):
    c = L.coalesce(a)
    assert L.size(c) == L.size(a) and images(c) == images(a)
    modes = list(zip(L.flatten(c).shape if isinstance(c.shape, tuple) else (c.shape,),
                     L.flatten(c).stride if isinstance(c.stride, tuple) else (c.stride,)))
    assert all(s != 1 for s, _ in modes) or modes == [(1, 0)]
    assert all(d1 != s0 * d0 for (s0, d0), (_, d1) in zip(modes, modes[1:]))


@FEW
@given(layouts(nested=False))
def test_coalesce_by_mode_keeps_rank_and_function(a):
    c = L.coalesce(a, (1,) * L.rank(a))
    assert L.rank(c) == L.rank(a) and images(c) == images(a)


@FEW
@given(layouts(), injective_layouts())
def test_composition_is_function_composition(a, b):
    """CuTe's post-condition, for an injective B whose image lies inside A's domain (beyond
    it, A's extension depends on how A is written, in CuTe too; a B whose modes overlap
    breaks the mode-by-mode distribution, in CuTe too)."""
    from hypothesis import assume
    assume(L.cosize(b) <= L.size(a))
    c = L.composition(a, b)
    assert L.size(c) == L.size(b)
    assert [c(i) for i in range(L.size(b))] == [a(b(i)) for i in range(L.size(b))]


@FEW
@given(layouts(nested=False), st.lists(pow2, min_size=1, max_size=3))
def test_composition_with_a_tiler_is_by_mode(a, tiles):
    tiles = tuple(min(t, L.size(L.get(a, k))) for k, t in enumerate(tiles[:L.rank(a)]))
    c = L.composition(a, tiles)
    for k, t in enumerate(tiles):
        mode = L.get(a, k)
        assert [L.get(c, k)(i) for i in range(t)] == [mode(i) for i in range(t)]


@FEW
@given(injective_layouts(), st.sampled_from([1, 2, 4]))
def test_complement_is_disjoint_ordered_and_covers(a, k):
    extent = max(s * d for s, d in zip(a.shape, a.stride))     # the span of the largest mode
    cot = extent * k
    c = L.complement(a, cot)
    flat = L.flatten(c)
    strides = flat.stride if isinstance(flat.stride, tuple) else (flat.stride,)
    assert list(strides) == sorted(strides)
    ia, ic = set(images(a)), set(images(c))
    assert ia & ic == {0}
    full = L.make_layout_from_modes(a, c)
    assert sorted(images(full)) == list(range(cot))


@FEW
@given(layouts())
def test_right_inverse_composes_to_identity(a):
    r = L.right_inverse(a)
    assert [a(r(i)) for i in range(L.size(r))] == list(range(L.size(r)))


@FEW
@given(injective_layouts())
def test_left_inverse_inverts_an_injective_layout(a):
    li = L.left_inverse(a)
    assert [li(a(i)) for i in range(L.size(a))] == list(range(L.size(a)))


@FEW
@given(compact_layouts(), injective_layouts(max_modes=2))
def test_logical_divide_is_composition_with_tile_and_complement(a, t):
    from hypothesis import assume
    assume(L.cosize(t) <= L.size(a) and L.size(a) % L.cosize(t) == 0)
    d = L.logical_divide(a, t)
    bc = L.make_layout_from_modes(t, L.complement(t, L.size(a)))
    assert L.size(L.get(d, 0)) == L.size(t)
    assert [d(i) for i in range(L.size(d))] == [a(bc(i)) for i in range(L.size(d))]


@FEW
@given(st.sampled_from([4, 8, 16]), st.sampled_from([4, 8, 16]), pow2, pow2,
       st.sampled_from([(1, 0), (0, 1)]))
def test_zipped_tiled_flat_divide_rearrange_logical_divide(m, n, tm, tn, order):
    a = L.make_ordered_layout((m, n), order)
    d = L.logical_divide(a, (tm, tn))
    z, t, f = L.zipped_divide(a, (tm, tn)), L.tiled_divide(a, (tm, tn)), L.flat_divide(a, (tm, tn))
    for i in range(tm):
        for j in range(tn):
            for r in range(m // tm):
                for s in range(n // tn):
                    want = d((i, r), (j, s))
                    assert z((i, j), (r, s)) == t((i, j), r, s) == f(i, j, r, s) == want


@FEW
@given(injective_layouts(max_modes=2), injective_layouts(max_modes=2))
def test_logical_product_is_block_then_complement_of_tiler(a, b):
    p = L.logical_product(a, b)
    comp = L.complement(a, L.size(a) * L.cosize(b))
    for i in range(L.size(a)):
        for j in range(L.size(b)):
            assert p(i, j) == a(i) + comp(b(j))


@FEW
@given(st.sampled_from([(2, 2), (2, 4), (4, 2)]), st.sampled_from([(1, 0), (0, 1)]),
       st.sampled_from([(2, 3), (3, 2), (1, 2)]))
def test_blocked_and_raked_products_zip_the_logical_product(bshape, order, tshape):
    a = L.make_ordered_layout(bshape, order)
    b = L.make_layout(tshape)
    p = L.logical_product(a, b)
    bp, rp = L.blocked_product(a, b), L.raked_product(a, b)
    for a0 in range(bshape[0]):
        for a1 in range(bshape[1]):
            for b0 in range(tshape[0]):
                for b1 in range(tshape[1]):
                    want = p((a0, a1), (b0, b1))
                    assert bp((a0, b0), (a1, b1)) == want == rp((b0, a0), (b1, a1))
    # blocked: each block is contiguous in the first mode; raked: interleaved
    assert L.size(bp) == L.size(a) * L.size(b)


# -- errors ---------------------------------------------------------------------------------
def test_composition_divisibility_error_names_both_layouts():
    with pytest.raises(ws.OperandError, match=r"composition \(6,2\):\(1,7\) o 4:1.*divisib"):
        L.composition(lay((6, 2), (1, 7)), lay(4, 1))


def test_complement_of_overlapping_modes_is_an_error():
    with pytest.raises(ws.OperandError, match="do not overlap"):
        L.complement(lay((2, 2), (1, 1)))


def test_composition_needing_a_dynamic_decision_says_so():
    a = L.make_layout((ws.Int32(6), 4))
    with pytest.raises(ws.BindingTimeError, match="static"):
        L.composition(a, lay(4, 2))
