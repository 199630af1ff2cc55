"""ws.pipeline.PipelineTmaMulticast in the simulator: in 2-CTA clusters (2 x 1 and 1 x 2) each
CTA's producer loads half of a shared tile and multicasts it to both CTAs, plus a tile of its
own; the consumers of each CTA read both, over more tiles than stages (the ring wraps, so a
producer must wait for its peer's consumers before reusing a stage), and release each stage to
both CTAs; a cluster of one behaves as the one-CTA pipeline. Also: the mbarrier counts, the
masks, and the trace-time errors. ``run_cluster_ring`` takes ``make``/``back`` so the GPU test
(test_cluster_gpu.py) runs the same kernel."""
import numpy as np
import pytest

import warpstage as ws

pytestmark = pytest.mark.filterwarnings("ignore::warpstage.RecompileWarning")

ROWS, COLS = 16, 32                 # the shared f32 tile (two 8-row halves) and the own tile


def host(a):
    return a


class ClusterRing:
    """Static config: ``stages`` stages of a shared and an own tile; ``cluster`` (cx, cy), one
    of them 2: the axis the shared tile is multicast along."""

    def __init__(self, stages, cluster):
        self.stages, self.cluster = stages, cluster
        self.along_x = cluster[0] == 2
        self.Storage = ws.smem.make_storage(
            "ClusterRingStorage",
            shared=ws.smem.Array(ws.Float32, (stages, 2, ROWS // 2, COLS), swizzle=128),
            own=ws.smem.Array(ws.Float32, (stages, ROWS, COLS), swizzle=128),
            barriers=ws.pipeline.BarrierStorage[stages])


@ws.kernel
def cluster_ring(cfg: ws.Static[ClusterRing], half_desc, own_desc, out: ws.Tensor,
                 n_tiles: ws.Int32):
    s = ws.smem.allocate(cfg.Storage)
    pipe = ws.pipeline.PipelineTmaMulticast.create(
        s.barriers, num_stages=cfg.stages, consumer_warps=4,
        transaction_bytes=2 * half_desc.smem_bytes + own_desc.smem_bytes,
        cluster_shape=cfg.cluster)
    warp = ws.arch.make_warp_uniform(ws.arch.warp_idx())
    cx, cy, _ = ws.arch.block_idx_in_cluster()
    part = cx if ws.static(cfg.along_x) else cy        # which half this CTA loads
    group = ws.arch.cluster_idx()[0] + ws.arch.cluster_idx()[1]   # one of them is 0
    cta = group * 2 + part
    mask = pipe.mask_row() if ws.static(cfg.along_x) else pipe.mask_col()
    if warp == 0:
        state = pipe.producer_start_state()
        for i in range(n_tiles):
            pipe.producer_acquire(state)
            if ws.arch.elect_one():
                bar = pipe.producer_get_barrier(state)
                row = (group * n_tiles + i) * ROWS + part * (ROWS // 2)
                ws.tma.load(half_desc, s.shared[state.index, part], (row, 0), bar,
                            multicast=mask)
                ws.tma.load(own_desc, s.own[state.index], ((cta * n_tiles + i) * ROWS, 0), bar)
            pipe.producer_commit(state)
            state = state.advance()
        pipe.producer_tail(state)
    elif warp <= 4:
        state = pipe.consumer_start_state()
        t = ws.arch.thread_idx()[0] - 32
        for i in range(n_tiles):
            pipe.consumer_wait(state)
            for k in range(t, ROWS * COLS, 128):
                r, c = k // COLS, k % COLS
                out[(cta * n_tiles + i) * ROWS + r, c] = (
                    s.shared[state.index, r // (ROWS // 2), r % (ROWS // 2), c] * 1000.0
                    + s.own[state.index, r, c])
            pipe.consumer_release(state)
            state = state.advance()
    ws.arch.cluster_sync()


def run_cluster_ring(stages, cluster, groups, n_tiles, make=host, back=host):
    rng = np.random.default_rng(stages * 10 + groups)
    shared = rng.integers(0, 100, (groups * n_tiles * ROWS, COLS)).astype(np.float32)
    own = rng.integers(0, 100, (2 * groups * n_tiles * ROWS, COLS)).astype(np.float32)
    out = make(np.zeros_like(own))
    half = ws.tma.TensorDescriptor(make(shared), (ROWS // 2, COLS), 128)
    mine = ws.tma.TensorDescriptor(make(own), (ROWS, COLS), 128)
    grid = (2 * groups, 1) if cluster[0] == 2 else (groups, 2)
    cluster_ring(ClusterRing(stages, cluster), half, mine, out, n_tiles, grid=grid,
                 block=32 * 6, cluster=cluster)
    want = own.copy()
    for cta in range(2 * groups):
        g = cta // 2
        rows = slice(cta * n_tiles * ROWS, (cta + 1) * n_tiles * ROWS)
        want[rows] += 1000.0 * shared[g * n_tiles * ROWS:(g + 1) * n_tiles * ROWS]
    return back(out), want


@pytest.mark.parametrize("stages,cluster,groups,n_tiles", [
    (2, (2, 1), 1, 5), (3, (1, 2), 2, 7), (1, (2, 1), 2, 3), (4, (1, 2), 1, 9)])
def test_multicast_ring(stages, cluster, groups, n_tiles):
    out, want = run_cluster_ring(stages, cluster, groups, n_tiles)
    np.testing.assert_array_equal(out, want)


class Probe:
    def __init__(self, cluster):
        self.cluster = cluster
        self.Storage = ws.smem.make_storage("ProbeStorage",
                                            barriers=ws.pipeline.BarrierStorage[2])


@ws.kernel
def masks(cfg: ws.Static[Probe], out: ws.Tensor):
    s = ws.smem.allocate(cfg.Storage)
    pipe = ws.pipeline.PipelineTmaMulticast.create(s.barriers, num_stages=2, consumer_warps=1,
                                                   transaction_bytes=16,
                                                   cluster_shape=cfg.cluster)
    if ws.arch.thread_idx()[0] == 0:
        r = ws.arch.cluster_ctarank() + ws.arch.cluster_idx()[0] * ws.arch.cluster_size()
        out[r, 0] = pipe.mask_row()
        out[r, 1] = pipe.mask_col()
        out[r, 2] = pipe.consumer_count
    ws.arch.cluster_sync()


def test_masks_and_the_empty_barrier_count_for_a_2x2_cluster():
    out = np.zeros((4, 3), np.int32)
    masks(Probe((2, 2)), out, grid=(2, 2), block=32, cluster=(2, 2))
    # ranks 0 1 / 2 3: rows {0,1} {2,3}, columns {0,2} {1,3}; 1 warp x (2 + 2 - 1) CTAs
    np.testing.assert_array_equal(out, [[0b0011, 0b0101, 3], [0b0011, 0b1010, 3],
                                        [0b1100, 0b0101, 3], [0b1100, 0b1010, 3]])


def test_a_bad_cluster_shape_is_rejected_while_tracing():
    with pytest.raises(ws.OperandError, match="cluster_shape"):
        masks(Probe((2, 1, 1)), np.zeros((4, 3), np.int32), grid=2, block=32, cluster=2)
