"""The accumulator thread-value layouts of ws.layout: the mma.sync one against an independent
definition of the same PTX ISA fragment table (ws.mma.c_coords, ir/ops_mma.py); the wgmma one,
defined once in ir/ops_wgmma.py (accumulator_tv, checked against the PTX ISA formula in
tests/ir/test_ir_wgmma.py), as ws.layout evaluates it against the simulator's numpy evaluation
(sim/wgmma_layout.py). ws.wgmma.accumulator_coords is computed from the TV layout."""
import pytest

import warpstage as ws
from warpstage.sim.wgmma_layout import fragment_coords as sim_wgmma_fragment

L = ws.layout


def test_mma_sync_accumulator_tv_layout_matches_c_coords():
    tv = L.mma_accumulator_tv()
    for lane in range(32):
        got = [L.idx2crd(tv(lane, v), L.MMA_TILE) for v in range(4)]
        assert got == [tuple(c) for c in ws.mma.c_coords(lane=lane)]


@pytest.mark.parametrize("n", [8, 64, 256])
def test_wgmma_accumulator_tv_layout_matches_the_simulators_fragment(n):
    tv = L.wgmma_accumulator_tv(n)
    assert L.size(tv) == 64 * n
    rows, cols = sim_wgmma_fragment(n)                  # (warp, register, lane)
    for tid in range(0, 128, 5):
        want = [(int(rows[tid // 32, v, tid % 32]), int(cols[tid // 32, v, tid % 32]))
                for v in range(n // 2)]
        assert [L.idx2crd(tv(tid, v), L.wgmma_tile(n)) for v in range(n // 2)] == want
        assert ws.wgmma.accumulator_coords(n, tid) == want
        assert L.thread_coords(tv, 64, tid) == want


def test_coordinate_layouts_split_a_tv_layout_into_rows_and_columns():
    row, col = L.coordinate_layouts(L.mma_accumulator_tv(), 16)
    assert repr(row) == "((4,8),(2,2)):((0,1),(0,8))" and repr(col) == "((4,8),(2,2)):((2,0),(1,0))"
    with pytest.raises(ws.OperandError, match="within 16 rows"):
        L.coordinate_layouts(L.make_layout((4, 8), (3, 12)), 16)
    with pytest.raises(ws.OperandError, match="multiples of 16"):
        L.coordinate_layouts(L.make_layout((4, 8), (1, 20)), 16)


def test_tv_layouts_are_bijections_onto_the_tile():
    for tv, size in [(L.mma_accumulator_tv(), 128), (L.wgmma_accumulator_tv(32), 64 * 32)]:
        assert sorted(tv(i) for i in range(L.size(tv))) == list(range(size))
        li = L.left_inverse(tv)
        assert all(li(tv(i)) == i for i in range(L.size(tv)))
