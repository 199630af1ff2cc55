"""ws.layout.Swizzle and composed layouts: bijections, the hardware's 32/64/128-byte smem
swizzles (ir/swizzle.py, which TMA, wgmma and the simulator use), slicing under a swizzle, and
tile_to_shape."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import warpstage as ws
from warpstage.ir.swizzle import swizzle_offset

L = ws.layout


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 3), st.integers(0, 4), st.integers(0, 4))
def test_swizzle_is_a_bijection_and_an_involution(b, m, extra):
    s = b + extra
    sw = L.Swizzle(b, m, s)
    n = 1 << (m + s + b)
    image = [sw(x) for x in range(n)]
    assert sorted(image) == list(range(n))
    assert all(sw(sw(x)) == x for x in range(n))


@pytest.mark.parametrize("span", [0, 32, 64, 128])
@pytest.mark.parametrize("dtype", [ws.Int8, ws.BFloat16, ws.Float32, ws.Float64])
def test_make_swizzle_matches_the_hardware_swizzle(span, dtype):
    sw = L.make_swizzle(span, dtype)
    e = dtype.ir_type.nbytes
    x = np.arange(4 * 8 * max(span, 16) // e)
    want = swizzle_offset(x * e, span) // e
    assert [sw(int(i)) for i in x] == list(want)


def test_the_128_byte_atom_is_cutes_sw128_and_tiles_to_a_row_major_tile():
    atom = L.smem_layout_atom(128, ws.BFloat16)
    assert repr(atom) == "Sw<3,3,3> o (8,64):(64,1)"
    tile = L.tile_to_shape(atom, (128, 64))
    assert repr(tile) == "Sw<3,3,3> o (128,64):(64,1)"
    for r, c in [(0, 0), (1, 0), (3, 17), (127, 63)]:
        assert tile(r, c) == swizzle_offset((r * 64 + c) * 2, 128) // 2


def test_slicing_a_swizzled_layout_moves_the_offset_inside_the_swizzle():
    tile = L.tile_to_shape(L.smem_layout_atom(128, ws.BFloat16), (64, 64))
    row = tile(5, None)                        # the offset 5*64 is swizzled with the column
    assert repr(row) == "Sw<3,3,3> o 320 o (64):(1)"
    assert [row(c) for c in range(64)] == [tile(5, c) for c in range(64)]
    assert sorted(tile(r, c) for r in range(64) for c in range(64)) == list(range(64 * 64))


def test_swizzle_errors():
    with pytest.raises(ws.OperandError, match=r"\|S\| >= B"):
        L.Swizzle(3, 4, 2)
    with pytest.raises(ws.OperandError, match="0, 32, 64 or 128"):
        L.make_swizzle(16, ws.BFloat16)
