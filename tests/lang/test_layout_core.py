"""ws.layout's Layout: construction (CuTe's column-major default), queries, crd2idx/idx2crd
(inverse of each other, hierarchical coordinates), slicing, errors, and the value protocol."""
import pytest
from hypothesis import given, settings

import warpstage as ws
from layout_strategies import layouts, shapes

L = ws.layout


def test_make_layout_defaults_to_column_major_like_cute():
    assert repr(L.make_layout((4, 8))) == "(4,8):(1,4)"
    assert repr(L.make_layout((2, (3, 4)))) == "(2,(3,4)):(1,(2,6))"
    assert repr(L.make_layout((1, 4))) == "(1,4):(0,1)"       # a size-1 mode gets stride 0
    assert repr(L.make_ordered_layout((4, 8), (1, 0))) == "(4,8):(8,1)"
    assert repr(L.make_ordered_layout((2, 3, 4), (2, 0, 1))) == "(2,3,4):(12,1,3)"


def test_queries():
    a = L.make_layout((4, (2, 3)), (6, (1, 2)))
    assert (L.size(a), L.cosize(a), L.rank(a), L.depth(a)) == (24, 24, 2, 2)
    assert L.size(a, 1) == 6 and repr(L.get(a, 1)) == "(2,3):(1,2)" and repr(L.get(a, 1, 0)) == "2:1"
    assert repr(L.select(a, 1, 0)) == "((2,3),4):((1,2),6)"
    assert repr(L.flatten(a)) == "(4,2,3):(6,1,2)"
    assert repr(L.group(L.flatten(a), 1, 3)) == "(4,(2,3)):(6,(1,2))"
    assert L.shape(a) == (4, (2, 3)) and L.stride(a) == (6, (1, 2))


def test_coordinates_int_tuple_and_hierarchical():
    a = L.make_layout((4, (2, 3)), (6, (1, 2)))
    # (1, (1, 2)): 1*6 + 1*1 + 2*2
    assert a(1, (1, 2)) == 11 == a((1, (1, 2)))
    assert a(1, 5) == 11                           # an int for the nested mode, column-major
    assert a(21) == a(1, 5)                        # 21 = 1 + 4*5
    assert L.idx2crd(21, a.shape) == (1, (1, 2))
    assert L.crd2idx((1, (1, 2)), a.shape) == 21


@settings(max_examples=30, deadline=None)
@given(shapes())
def test_idx2crd_and_crd2idx_are_inverse(shape):
    n = L.size(shape)
    coords = [L.idx2crd(i, shape) for i in range(n)]
    assert [L.crd2idx(c, shape) for c in coords] == list(range(n))
    assert len(set(coords)) == n


@settings(max_examples=30, deadline=None)
@given(layouts())
def test_a_layout_is_the_sum_of_coordinate_times_stride(a):
    fs, fd = L.flatten(a).shape, L.flatten(a).stride
    fs, fd = (fs if isinstance(fs, tuple) else (fs,)), (fd if isinstance(fd, tuple) else (fd,))
    for i in range(L.size(a)):
        c = L.idx2crd(i, fs)
        assert a(i) == sum(x * d for x, d in zip(c, fd))


def test_slicing_keeps_the_none_modes_and_returns_the_offset():
    a = L.make_layout((4, 8), (8, 1))
    assert repr(a(None, 3)) == "(4):(8)"
    sub, off = L.slice_and_offset((2, None), a)
    assert (repr(sub), off) == ("(8):(1)", 16)
    z = L.zipped_divide(a, (2, 4))             # ((2,4),(2,2))
    tile = z((None, None), (1, 1))
    assert repr(tile) == "(2,4):(8,1)"
    # a None for a nested mode keeps it whole; tuple coordinates flatten one level
    sub, off = L.slice_and_offset(((None, None), (1, None)), z)
    assert repr(sub) == "(2,4,2):(8,1,4)" and off == 16


def test_get_hier_coord_inverts_a_thread_layout():
    thr = L.make_layout((8, 4), (4, 1))
    assert [thr(thr.get_hier_coord(t)) for t in range(32)] == list(range(32))


@pytest.mark.parametrize("make, message", [
    (lambda: L.make_layout((4, 8), (1,)), "a stride congruent with the shape"),
    (lambda: L.make_layout([4, 8]), "pass a tuple, e.g. (4, 8)"),
    (lambda: L.make_layout((4, 2.0)), "an int, a dynamic integer"),
    (lambda: L.make_layout((4, 8))(1, 2, 3), "a coordinate of rank 2"),
    (lambda: L.make_ordered_layout((4, 8), (0,)), "one per leaf of shape"),
    (lambda: L.get(L.make_layout((4, 8)), 2), "a mode index in [0, 2)"),
])
def test_errors_say_what_was_expected_and_the_fix(make, message):
    with pytest.raises(ws.OperandError) as ei:
        make()
    assert message in str(ei.value) and "Fix:" in str(ei.value)


def test_value_protocol_splits_static_skeleton_and_dynamic_leaves():
    n = ws.Int32(100)                              # on the host: a dynamic leaf
    a = L.make_layout((n, 64), (64, 1))
    assert a.__extract_values__() == [n]
    assert a.__static_key__() == ("Layout", ("?", 64), (64, 1))
    b = a.__new_from_values__([ws.Int32(7)])
    assert b.shape[1] == 64 and b.shape[0].value == 7
    assert L.make_layout((4, 8)).__extract_values__() == []
    assert repr(a) == "(?100,64):(64,1)"
    desc, key = a.__ws_describe__()
    assert "?100" in desc and key == "static (?,64):(64,1); 1 dynamic"


@pytest.mark.parametrize("shape", [(-4, 8), (0, 8), ((2, 0), 3)])
def test_extents_below_one_are_refused(shape):
    with pytest.raises(ws.OperandError, match="extents of at least 1"):
        ws.layout.make_layout(shape)
    with pytest.raises(ws.OperandError, match="extents of at least 1"):
        ws.layout.make_ordered_layout(shape, tuple(range(len(shape))))
