"""ws.pipeline in the simulator: PipelineAsync producer/consumer rings of 1..6 stages over many
more tiles than stages (cp.async and ld/st producers), PipelineState through dynamic loops,
branches and device functions, PipelineTmaAsync's transaction bytes, and the compile-time
errors (stage-count mismatch, dynamic counts)."""
import numpy as np
import pytest

import warpstage as ws

pytestmark = pytest.mark.filterwarnings("ignore::warpstage.RecompileWarning")

TILE = 128          # floats per stage: 32 producer threads x 16 bytes


class Ring:
    """Static config of the test kernel: a ring of ``stages`` buffers of TILE floats."""

    def __init__(self, stages, cp_async=True, barrier_stages=None, flat=False):
        self.stages = stages
        self.cp_async = cp_async
        # part of the static key: storage classes from make_storage are keyed by name only
        self.barrier_stages = barrier_stages or stages
        self.flat = flat
        barriers = (ws.smem.MbarrierArray[2 * self.barrier_stages] if flat
                    else ws.pipeline.BarrierStorage[self.barrier_stages])
        self.Storage = ws.smem.make_storage(
            "RingStorage", buf=ws.smem.Array[ws.Float32, (stages, TILE), 128], barriers=barriers)


@ws.kernel
def ring(cfg: ws.Static[Ring], x: ws.Tensor, out: ws.Tensor, n_tiles: ws.Int32):
    storage = ws.smem.allocate(cfg.Storage)
    pipe = ws.pipeline.PipelineAsync.create(storage.barriers, num_stages=cfg.stages,
                                            producer_count=32, consumer_count=64)
    lane = ws.arch.lane_idx()
    warp = ws.arch.make_warp_uniform(ws.arch.warp_idx())
    if warp == 0:                                   # producer: one warp
        state = pipe.producer_start_state()
        for i in range(n_tiles):
            pipe.producer_acquire(state)
            e = lane * 4
            if ws.static(cfg.cp_async):
                ws.copy.cp_async(storage.buf[state.index].ptr + e, x.ptr + (i * TILE + e), 16)
            else:
                for c in ws.static_range(4):
                    storage.buf[state.index, e + c] = x[i * TILE + e + c]
            pipe.producer_commit(state, cp_async=cfg.cp_async)
            state = state.advance()
        pipe.producer_tail(state)
    else:                                           # consumers: two warps, half a tile each
        state = ws.pipeline.make_consumer_start_state(cfg.stages)
        half = (warp - 1) * 64
        for i in range(n_tiles):
            pipe.consumer_wait(state)
            for j in ws.static_range(2):
                e = half + j * 32 + lane
                out[i * TILE + e] = storage.buf[state.index, e] * 2.0 + ws.Float32(state.count)
            pipe.consumer_release(state)
            state = state.advance()


def expected(x, n_tiles):
    return x * np.float32(2) + np.repeat(np.arange(n_tiles, dtype=np.float32), TILE)


@pytest.mark.parametrize("cp_async", [True, False])
@pytest.mark.parametrize("stages", [1, 2, 3, 4, 5, 6])
def test_pipeline_async_ring_matches_numpy(stages, cp_async):
    n_tiles = 4 * stages + 3                        # many more tiles than stages, not a multiple
    x = np.random.default_rng(stages).standard_normal(n_tiles * TILE).astype(np.float32)
    out = np.full_like(x, np.nan)
    ring[1, 96](Ring(stages, cp_async), x, out, n_tiles)
    np.testing.assert_array_equal(out, expected(x, n_tiles))


def test_one_flat_mbarrier_array_holds_full_then_empty():
    x = np.arange(7 * TILE, dtype=np.float32)
    out = np.full_like(x, np.nan)
    ring[1, 96](Ring(2, flat=True), x, out, 7)
    np.testing.assert_array_equal(out, expected(x, 7))


def test_ring_ptx_uses_mbarriers_and_cp_async_arrive():
    ck = ws.compile(ring, Ring(3), ws.Tensor[ws.Float32, 1], ws.Tensor[ws.Float32, 1], ws.Int32,
                    block=(96, 1, 1))
    ptx = ck.ptx
    assert ptx.count("mbarrier.init.shared") >= 1 and "fence.mbarrier_init" in ptx
    assert "cp.async.mbarrier.arrive.noinc.shared" in ptx
    assert "mbarrier.try_wait.parity" in ptx and "elect.sync" in ptx
    assert "mbarrier.init" in ck.ir and "scf.for" in ck.ir


def test_stage_count_mismatch_is_a_compile_time_error():
    x = np.zeros(TILE, np.float32)
    out = np.full(TILE, 7.0, np.float32)
    with pytest.raises(ws.OperandError) as ei:
        ring[1, 96](Ring(2, barrier_stages=3), x, out, 1)
    msg = str(ei.value)
    assert "stage count mismatch" in msg and "`full`" in msg
    assert "expected num_stages = 2 (one per stage), got 3" in msg
    assert "ws.pipeline.PipelineAsync.create(storage.barriers" in msg and "^" in msg
    assert "Fix: declare the field as ws.pipeline.BarrierStorage[2]" in msg
    assert "test_pipeline.py:" in ei.value.where
    assert (out == 7.0).all()                       # nothing ran
    with pytest.raises(ws.OperandError, match="stage count mismatch"):
        ws.compile(ring, Ring(4, barrier_stages=2), ws.Tensor[ws.Float32, 1],
                   ws.Tensor[ws.Float32, 1], ws.Int32, block=(96, 1, 1))


class Flat:
    bars: ws.smem.MbarrierArray[5]


@ws.kernel
def flat_array(out: ws.Tensor, stages: ws.Static[int]):
    storage = ws.smem.allocate(Flat)
    ws.pipeline.PipelineAsync.create(storage.bars, num_stages=stages, producer_count=1,
                                     consumer_count=1)
    out[0] = 1


def test_flat_mbarrier_array_needs_two_per_stage():
    with pytest.raises(ws.OperandError, match=r"(?s)expected 2 \* num_stages = 4.*got 5"):
        flat_array[1, 32](np.zeros(1, np.int32), 2)


@ws.kernel
def dynamic_count(out: ws.Tensor, n: ws.Int32):
    storage = ws.smem.allocate(Ring(2).Storage)
    ws.pipeline.PipelineAsync.create(storage.barriers, num_stages=2, producer_count=n,
                                     consumer_count=32)


def test_dynamic_count_is_a_binding_time_error():
    with pytest.raises(ws.BindingTimeError, match=r"(?s)producer_count.*parameter 'n'"):
        dynamic_count[1, 32](np.zeros(1, np.int32), 32)


@ws.jit
def advance_twice(state):
    return state.advance().advance()


@ws.kernel
def walk(out: ws.Tensor, n: ws.Int32, stages: ws.Static[int]):
    state = ws.pipeline.make_producer_start_state(stages)
    for i in range(n):                              # loop-carried struct
        out[i, 0] = state.index
        out[i, 1] = state.phase
        out[i, 2] = state.count
        if i % 3 == 1:                              # merged after a dynamic branch
            state = advance_twice(state)            # through a device function
        else:
            state = state.advance()


def python_walk(n, stages):
    rows, index, phase, count = [], 0, 1, 0
    for i in range(n):
        rows.append((index, phase, count))
        for _ in range(2 if i % 3 == 1 else 1):
            index, count = index + 1, count + 1
            if index == stages:
                index, phase = 0, phase ^ 1
    return rows


@pytest.mark.parametrize("stages", [1, 2, 3, 5])
def test_pipeline_state_advances_through_loops_branches_and_calls(stages):
    n = 17
    out = np.full((n, 3), -1, np.int32)
    walk[1, 32](out, n, stages)
    assert out.tolist() == [list(r) for r in python_walk(n, stages)]


def test_pipeline_state_on_the_host():
    s = ws.pipeline.PipelineState(3, 2, 0, 5).advance()
    assert (s.num_stages, s.index, s.phase, s.count) == (3, 0, 1, 6)


@ws.kernel
def state_mismatch(out: ws.Tensor):
    storage = ws.smem.allocate(Ring(2).Storage)
    pipe = ws.pipeline.PipelineAsync.create(storage.barriers, num_stages=2, producer_count=32,
                                            consumer_count=32)
    pipe.consumer_wait(ws.pipeline.make_consumer_start_state(3))


def test_state_with_other_stage_count_is_an_error():
    with pytest.raises(ws.OperandError, match=r"(?s)consumer_wait\(\): stage count mismatch.*"
                                              r"num_stages=3"):
        state_mismatch[1, 32](np.zeros(1, np.int32))


class TmaStorage:
    buf: ws.smem.Array[ws.Float32, (2, 32), 128]
    barriers: ws.pipeline.BarrierStorage[2]


@ws.kernel
def tma_pipe(out: ws.Tensor):
    storage = ws.smem.allocate(TmaStorage)
    pipe = ws.pipeline.PipelineTmaAsync.create(storage.barriers, num_stages=2, consumer_count=32,
                                               transaction_bytes=128)
    warp = ws.arch.make_warp_uniform(ws.arch.warp_idx())
    if warp == 0:
        state = pipe.producer_start_state()
        pipe.producer_acquire(state)        # elected arrive.expect_tx(128); no copy delivers it
        pipe.producer_commit(state)
    else:
        state = pipe.consumer_start_state()
        pipe.consumer_wait(state)
        out[ws.arch.lane_idx()] = 1


def test_tma_pipeline_full_phase_waits_for_its_bytes():
    # the one producer arrival is not enough: the phase completes only when the copy engine
    # delivers the 128 announced bytes, so without a copy the consumer waits forever
    with pytest.raises(ws.DeadlockError, match=r"(?s)mbarrier.wait_parity.*tx-count 128"):
        tma_pipe[1, 64](np.zeros(32, np.int32))


def test_tma_pipeline_ptx():
    ptx = ws.compile(tma_pipe, ws.Tensor[ws.Int32, 1], block=(64, 1, 1)).ptx
    assert "mbarrier.arrive.expect_tx.shared::cta.b64" in ptx and "elect.sync" in ptx


def test_barrier_storage_is_one_class_per_stage_count():
    assert ws.pipeline.BarrierStorage[3] is ws.pipeline.BarrierStorage[3]
    assert ws.smem.size_of(ws.pipeline.BarrierStorage[3]) == 48
    with pytest.raises(ws.OperandError, match="an int >= 1"):
        ws.pipeline.BarrierStorage[0]
