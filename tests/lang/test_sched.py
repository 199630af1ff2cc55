"""ws.sched: the static persistent tile scheduler's order (a bijection onto the tiles, the
grouped raster, batches), its errors, and the same mapping traced into a kernel in the
simulator (each CTA records the tiles it walks)."""
import numpy as np
import pytest

import warpstage as ws
from warpstage.lang.sched import grid_size, tile_coords


@pytest.mark.parametrize("tiles_m, tiles_n, batches", [(1, 1, 1), (5, 3, 1), (7, 9, 2),
                                                       (16, 4, 3)])
@pytest.mark.parametrize("raster, group", [("M", 1), ("M", 4), ("N", 3), ("N", 8)])
def test_order_is_a_bijection(tiles_m, tiles_n, batches, raster, group):
    seen = [tile_coords(t, tiles_m, tiles_n, raster, group)
            for t in range(tiles_m * tiles_n * batches)]
    assert sorted(seen) == sorted((m, n, b) for m in range(tiles_m) for n in range(tiles_n)
                                  for b in range(batches))
    assert len(set(seen)) == len(seen)
    assert [s[2] for s in seen] == sorted(s[2] for s in seen)      # batch-major


def test_grouped_raster_walks_a_band_first():
    # raster M, group 4: tiles 0..3 go down M in column 0, then column 1 of the same band
    order = [tile_coords(t, 10, 6, "M", 4)[:2] for t in range(10 * 6)]
    assert order[:6] == [(0, 0), (1, 0), (2, 0), (3, 0), (0, 1), (1, 1)]
    assert order[4 * 6] == (4, 0)                                   # the second band
    assert order[-2:] == [(8, 5), (9, 5)]                           # a narrower last band
    plain = [tile_coords(t, 3, 4, "M", 1)[:2] for t in range(12)]  # row-major, no swizzle
    assert plain == [(m, n) for m in range(3) for n in range(4)]
    column = [tile_coords(t, 3, 4, "N", 1)[:2] for t in range(12)]
    assert column == [(m, n) for n in range(4) for m in range(3)]


def test_grid_size():
    assert grid_size(512, 132) == 132 and grid_size(5, 132) == 5 and grid_size(0, 132) == 1


@pytest.mark.parametrize("kwargs, match", [(dict(raster="K"), "raster"),
                                           (dict(group=0), "group"),
                                           (dict(group=2.0), "group")])
def test_errors(kwargs, match):
    @ws.kernel
    def k(out: ws.Tensor):
        ws.sched.PersistentTileScheduler.create(2, 2, **kwargs)
    with pytest.raises(ws.OperandError, match=match):
        ws.compile(k, ws.Tensor[ws.Int32, 2], block=(32, 1, 1))


@ws.kernel
def walk(out: ws.Tensor, tiles_m: ws.Int32, tiles_n: ws.Int32, batches: ws.Int32):
    sched = ws.sched.PersistentTileScheduler.create(tiles_m, tiles_n, batches, raster="N",
                                                    group=2)
    if ws.arch.thread_idx()[0] == 0:
        for t in range(sched.first(), sched.num_tiles(), sched.stride()):
            m, n, b = sched.tile(t)
            out[t, 0] = m
            out[t, 1] = n
            out[t, 2] = b
            out[t, 3] = ws.arch.block_idx()[0]


def test_kernel_walk_matches_host_order(sim_target):
    tm, tn, nb, ctas = 5, 3, 2, 4
    out = np.full((tm * tn * nb, 4), -1, np.int32)
    walk[ctas, 32](out, tm, tn, nb)
    want = [tile_coords(t, tm, tn, "N", 2) + (t % ctas,) for t in range(tm * tn * nb)]
    assert [tuple(r) for r in out.tolist()] == want


@pytest.mark.parametrize("stages", [1, 3, 4])
@pytest.mark.parametrize("start, n", [(0, 0), (0, 5), (2, 7), (5, 12)])
def test_skip_stages_is_n_advances(stages, start, n):
    state = ws.pipeline.make_consumer_start_state(stages)
    for _ in range(start):
        state = state.advance()
    want = state
    for _ in range(n):
        want = want.advance()
    got = ws.sched.skip_stages(state, n)
    assert (got.index, got.phase, got.count) == (want.index, want.phase, want.count)


# -- ClusterTileScheduler ------------------------------------------------------------------------
class ClusterWalk:
    def __init__(self, cluster):
        self.cluster = cluster


@ws.kernel
def cluster_walk(cfg: ws.Static[ClusterWalk], out: ws.Tensor, tiles_m: ws.Int32,
                 tiles_n: ws.Int32, batches: ws.Int32):
    sched = ws.sched.ClusterTileScheduler.create(tiles_m, tiles_n, batches, raster="M",
                                                 group=2, cluster=cfg.cluster)
    if ws.arch.thread_idx()[0] == 0:
        for t in range(sched.first(), sched.num_tiles(), sched.stride()):
            m, n, b = sched.tile(t)
            out[ws.arch.block_idx()[0], t, 0] = m
            out[ws.arch.block_idx()[0], t, 1] = n
            out[ws.arch.block_idx()[0], t, 2] = b


@pytest.mark.parametrize("cluster, tiles", [((2, 1), (5, 3, 2)), ((1, 2), (4, 5, 1)),
                                            ((2, 2), (3, 3, 1))])
def test_cluster_scheduler_hands_a_cluster_adjacent_tiles(cluster, tiles):
    cm, cn = cluster
    tm, tn, nb = tiles
    sm, sn = -(-tm // cm), -(-tn // cn)
    ctas = 2 * cm * cn                                   # two clusters
    out = np.full((ctas, sm * sn * nb, 3), -1, np.int32)
    cluster_walk(ClusterWalk(cluster), out, tm, tn, nb, grid=ctas, block=32,
                 cluster=cm * cn)
    covered = set()
    for cta in range(ctas):
        cid, rank = divmod(cta, cm * cn)
        for t in range(sm * sn * nb):
            if t % 2 != cid:
                assert (out[cta, t] == -1).all()          # the other cluster's cluster tile
                continue
            m0, n0, b = tile_coords(t, sm, sn, "M", 2)
            want = (m0 * cm + rank % cm, n0 * cn + rank // cm, b)
            assert tuple(out[cta, t]) == want
            covered.add(want)
    # every tile of the grid once (plus the ones past its edge the cluster tiles round up to)
    inside = {(m, n, b) for m, n, b in covered if m < tm and n < tn}
    assert len(inside) == tm * tn * nb


# -- StreamKScheduler ----------------------------------------------------------------------------
@ws.kernel
def stream_k_walk(out: ws.Tensor, tiles_m: ws.Int32, tiles_n: ws.Int32, k_tiles: ws.Int32,
                  sk_tiles: ws.Int32):
    sched = ws.sched.StreamKScheduler.create(tiles_m, tiles_n, 1, k_tiles, sk_tiles,
                                             raster="M", group=2)
    if ws.arch.thread_idx()[0] == 0:
        c = ws.arch.block_idx()[0]
        for j in range(sched.units()):
            m, n, _, t, k0, count = sched.unit(j)
            first, last = sched.contributors(t)
            for i, v in enumerate((m, n, t, k0, count, first, last, sched.slot(t))):
                out[c, j, i] = v


@pytest.mark.parametrize("tiles, ctas, k_tiles, sk", [((3, 1), 5, 6, 3), ((2, 3), 4, 7, 2),
                                                     ((1, 7), 3, 4, 4)])
def test_stream_k_scheduler_in_a_kernel_matches_the_host(sim_target, tiles, ctas, k_tiles, sk):
    """Each CTA's units, traced into a kernel: the host functions' tiles, K ranges,
    contributors and slots (tests/ops/test_matmul_stream_k.py checks those cover every K step
    once)."""
    from warpstage.lang.sched import (stream_k_contributors, stream_k_slot, stream_k_unit,
                                      stream_k_units)
    tm, tn = tiles
    total = tm * tn
    out = np.full((ctas, 8, 8), -1, np.int32)
    stream_k_walk[ctas, 32](out, tm, tn, k_tiles, sk)
    for c in range(ctas):
        units = stream_k_units(c, ctas, total, k_tiles, sk)
        assert (out[c, units:] == -1).all()
        for j in range(units):
            t, k0, count = stream_k_unit(c, j, ctas, total, k_tiles, sk)
            want = tile_coords(t, tm, tn, "M", 2)[:2] + (t, k0, count)
            assert tuple(out[c, j, :5]) == want
            if count < k_tiles:
                assert tuple(out[c, j, 5:]) == stream_k_contributors(t, ctas, k_tiles, sk) + (
                    stream_k_slot(c, t, ctas, k_tiles, sk),)
