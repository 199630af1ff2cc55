"""The accumulator thread-value layouts of ws.layout against the fragment coordinates of
ws.mma and ws.wgmma (each defined from the PTX ISA's fragment tables)."""
import pytest

import warpstage as ws

L = ws.layout


def test_mma_sync_accumulator_tv_layout_matches_c_coords():
    tv = L.mma_accumulator_tv()
    for lane in range(32):
        got = [L.idx2crd(tv(lane, v), L.MMA_TILE) for v in range(4)]
        assert got == [tuple(c) for c in ws.mma.c_coords(lane=lane)]


@pytest.mark.parametrize("n", [8, 64, 256])
def test_wgmma_accumulator_tv_layout_matches_accumulator_coords(n):
    tv = L.wgmma_accumulator_tv(n)
    assert L.size(tv) == 64 * n
    for tid in range(0, 128, 5):
        got = [L.idx2crd(tv(tid, v), L.wgmma_tile(n)) for v in range(n // 2)]
        assert got == ws.wgmma.accumulator_coords(n, tid)


def test_tv_layouts_are_bijections_onto_the_tile():
    for tv, size in [(L.mma_accumulator_tv(), 128), (L.wgmma_accumulator_tv(32), 64 * 32)]:
        assert sorted(tv(i) for i in range(L.size(tv))) == list(range(size))
        li = L.left_inverse(tv)
        assert all(li(tv(i)) == i for i in range(L.size(tv)))
