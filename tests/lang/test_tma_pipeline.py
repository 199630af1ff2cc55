"""ws.pipeline.PipelineTmaAsync fed by ws.tma.load: one producer warp streams tiles into a ring
of swizzled shared-memory stages, a warpgroup of consumers reads them, for 1..4 stages over many
more tiles than stages, several CTAs, in the simulator. ``run_ring`` takes ``make``/``back`` so
tests/lang/test_tma_gpu.py runs the same kernel on the GPU."""
import numpy as np
import pytest

import warpstage as ws

pytestmark = pytest.mark.filterwarnings("ignore::warpstage.RecompileWarning")

ROWS, COLS = 16, 32                 # one f32 tile: 2 KiB, two 128-byte-swizzle periods


def host(a):
    return a


class TmaRing:
    """Static config: ``stages`` tile buffers (swizzled like the descriptor) and their
    full/empty mbarriers; one producer warp and ``consumers`` consumer threads."""

    def __init__(self, stages, consumers=128):
        self.stages = stages
        self.consumers = consumers
        self.Storage = ws.smem.make_storage(
            "TmaRingStorage",
            tiles=ws.smem.Array(ws.Float32, (stages, ROWS, COLS), swizzle=128),
            barriers=ws.pipeline.BarrierStorage[stages])


@ws.kernel
def tma_ring(cfg: ws.Static[TmaRing], desc, out: ws.Tensor, n_tiles: ws.Int32):
    s = ws.smem.allocate(cfg.Storage)
    pipe = ws.pipeline.PipelineTmaAsync.create(s.barriers, num_stages=cfg.stages,
                                               consumer_count=cfg.consumers,
                                               transaction_bytes=desc.smem_bytes)
    warp = ws.arch.make_warp_uniform(ws.arch.warp_idx())
    first = ws.arch.block_idx()[0] * n_tiles           # this CTA's first tile
    if warp == 0:                                       # producer: one warp, one elected thread
        state = pipe.producer_start_state()
        for i in range(n_tiles):
            pipe.producer_acquire(state)                # wait empty; elected arrive.expect_tx
            if ws.arch.elect_one():
                ws.tma.load(desc, s.tiles[state.index], ((first + i) * ROWS, 0),
                            pipe.producer_get_barrier(state))
            pipe.producer_commit(state)
            state = state.advance()
        pipe.producer_tail(state)
    else:                                               # consumers: the other warps
        state = pipe.consumer_start_state()
        t = ws.arch.thread_idx()[0] - 32
        for i in range(n_tiles):
            pipe.consumer_wait(state)
            for k in range(t, ROWS * COLS, cfg.consumers):
                r = k // COLS
                out[(first + i) * ROWS + r, k % COLS] = (
                    s.tiles[state.index, r, k % COLS] * 2.0 + ws.Float32(state.count))
            pipe.consumer_release(state)
            state = state.advance()


def run_ring(stages, ctas=2, n_tiles=7, make=host, back=host):
    rows = ctas * n_tiles * ROWS
    x = np.random.default_rng(stages).standard_normal((rows, COLS)).astype(np.float32)
    out = make(np.full((rows, COLS), np.nan, np.float32))
    cfg = TmaRing(stages)
    tma_ring[ctas, 32 + cfg.consumers](cfg, ws.tma.TensorDescriptor(make(x), (ROWS, COLS)), out,
                                       n_tiles)
    counts = np.repeat(np.tile(np.arange(n_tiles), ctas), ROWS).astype(np.float32)
    return back(out), x * np.float32(2) + counts[:, None]


@pytest.mark.parametrize("stages", [1, 2, 3, 4])
def test_tma_pipeline_ring_matches_numpy(stages):
    got, want = run_ring(stages)
    np.testing.assert_array_equal(got, want)


def test_tma_pipeline_ptx():
    x = np.zeros((64, COLS), np.float32)
    ck = ws.compile(tma_ring, TmaRing(2), ws.tma.TensorDescriptor(x, (ROWS, COLS)),
                    ws.Tensor[ws.Float32, 2], ws.Int32, block=(160, 1, 1))
    ptx = ck.ptx
    assert "mbarrier.arrive.expect_tx.shared::cta.b64" in ptx
    assert "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx" in ptx
