"""Warp collectives, bar.arrive, setmaxnreg, fences and the shared memory base in the simulator:
exact results under the active mask, and the errors for misuse in divergent code."""
import numpy as np
import pytest

from warpstage.errors import BarrierError
from warpstage.ir import f32, i1, i32, u32, u64

from simkit import KernelBuilder, gptr, launch, sptr

LANE = np.arange(32)


def shfl_module(mode, width=32, mask=0xFFFFFFFF, t=i32):
    """out[tid] = shfl(mode, value = tid * 10 (+0.5 for f32), b = bvals[tid])."""
    k = KernelBuilder("shfl", [gptr(t), gptr(i32)])
    out, bvals = k.args
    b = k.b
    tid = b.sreg("tid.x", i32)
    x = b.binary("mul", tid, k.const(i32, 10))
    if t == f32:
        x = b.binary("add", b.cast(x, f32), k.const(f32, 0.5))
    k.store_at(out, tid, b.shfl(mode, x, k.load_at(bvals, tid), width, mask))
    return k.finish()


def run_shfl(mode, bval, width=32, t=i32, threads=32):
    out = np.zeros(threads, np.float32 if t == f32 else np.int32)
    launch(shfl_module(mode, width, t=t), (1,), (threads,), [out, np.full(threads, bval, np.int32)])
    return out


def src(lanes):
    return np.asarray(lanes) * 10


@pytest.mark.parametrize("mode,b,width,expected_src", [
    ("down", 1, 32, np.where(LANE < 31, LANE + 1, LANE)),
    ("down", 3, 8, np.where(LANE % 8 < 5, LANE + 3, LANE)),
    ("up", 1, 32, np.where(LANE >= 1, LANE - 1, LANE)),
    ("up", 2, 8, np.where(LANE % 8 >= 2, LANE - 2, LANE)),
    ("bfly", 1, 32, LANE ^ 1),
    ("bfly", 16, 32, LANE ^ 16),
    # width 16: a lane may read an earlier segment but not a later one (keeps its own value)
    ("bfly", 16, 16, np.where(LANE < 16, LANE, LANE ^ 16)),
    ("bfly", 4, 16, LANE ^ 4),
    ("idx", 0, 32, np.zeros(32, int)),
    ("idx", 35, 32, np.full(32, 3)),   # the lane index is taken modulo 32
    ("idx", 3, 8, (LANE // 8) * 8 + 3),
])
def test_shfl_follows_cuda_semantics(mode, b, width, expected_src):
    assert run_shfl(mode, b, width).tolist() == src(expected_src).tolist()


def test_shfl_f32_and_per_lane_source():
    k = KernelBuilder("rot", [gptr(f32)])
    (out,) = k.args
    b = k.b
    tid = b.sreg("tid.x", i32)
    x = b.cast(tid, f32)
    srcl = b.binary("mod", b.binary("add", tid, k.const(i32, 5)), k.const(i32, 32))
    k.store_at(out, tid, b.shfl("idx", x, srcl))
    res = np.zeros(32, np.float32)
    launch(k.finish(), (1,), (32,), [res])
    assert res.tolist() == [float((t + 5) % 32) for t in range(32)]


def test_butterfly_reduction_sums_the_warp():
    k = KernelBuilder("reduce", [gptr(f32), gptr(f32)])
    x, out = k.args
    b = k.b
    tid = b.sreg("tid.x", i32)
    v = k.load_at(x, tid)
    for m in (16, 8, 4, 2, 1):
        v = b.binary("add", v, b.shfl("bfly", v, k.const(i32, m)))
    k.store_at(out, tid, v)
    data = np.random.default_rng(1).random(64).astype(np.float32)
    res = np.zeros(64, np.float32)
    launch(k.finish(), (1,), (64,), [data, res])
    for w in range(2):
        np.testing.assert_allclose(res[w * 32:(w + 1) * 32], data[w * 32:(w + 1) * 32].sum(),
                                   rtol=1e-6)


def vote_module(mode, mask=0xFFFFFFFF, divergent_below=None):
    """out[tid] = vote(mode, pred[tid] != 0) (inside `if tid < divergent_below` if given)."""
    k = KernelBuilder("vote", [gptr(i32), gptr(u32)])
    pred, out = k.args
    b = k.b
    tid = b.sreg("tid.x", i32)
    k.line(5)

    def body():
        p = b.cmp("ne", k.load_at(pred, tid), k.const(i32, 0))
        k.store_at(out, tid, b.cast(b.vote(mode, p, mask), u32))
    if divergent_below is None:
        body()
    else:
        k.if_(b.cmp("lt", tid, k.const(i32, divergent_below)), then=body)
    return k.finish()


def run_vote(mode, pred, **kw):
    out = np.zeros(len(pred), np.uint32)
    launch(vote_module(mode, **kw), (1,), (len(pred),), [np.asarray(pred, np.int32), out])
    return out


def test_votes_over_the_whole_warp():
    pred = np.zeros(32, np.int32)
    pred[[3, 17]] = 1
    assert set(run_vote("any", pred)) == {1}
    assert set(run_vote("all", pred)) == {0}
    assert set(run_vote("uni", pred)) == {0}
    assert set(run_vote("ballot", pred)) == {(1 << 3) | (1 << 17)}
    assert set(run_vote("all", np.ones(32))) == {1}
    assert set(run_vote("uni", np.zeros(32))) == {1}
    assert set(run_vote("ballot", np.ones(32))) == {0xFFFFFFFF}


def test_vote_with_a_partial_mask_in_matching_divergent_code():
    pred = np.ones(32, np.int32)
    pred[20] = 0
    out = run_vote("ballot", pred, mask=0xFFFF, divergent_below=16)
    assert out[:16].tolist() == [0xFFFF] * 16 and out[16:].tolist() == [0] * 16


def test_partial_last_warp_ignores_missing_lanes():
    pred = np.ones(40, np.int32)       # warp 1 has 8 lanes
    out = run_vote("ballot", pred)
    assert out[:32].tolist() == [0xFFFFFFFF] * 32 and out[32:].tolist() == [0xFF] * 8


def test_sync_collective_in_divergent_code_is_reported():
    with pytest.raises(BarrierError) as ei:
        run_vote("any", np.ones(32), divergent_below=10)
    msg = str(ei.value)
    assert "vote.sync.any at kern.py:5 in divergent code" in msg
    assert "names lanes 10, 11" in msg and "only lanes 0, 1" in msg
    assert ei.value.where == "kern.py:5"


def warp_sync(b, mask):
    b.op("nvvm.warp_sync", (), (), {"mask": mask})


def test_warp_sync_checks_its_mask():
    k = KernelBuilder("ws", [gptr(i32)])
    (out,) = k.args
    b = k.b
    lane = b.sreg("laneid", i32)
    k.line(3)

    def body():
        warp_sync(b, 0xFF)
        k.store_at(out, lane, lane)
    k.if_(b.cmp("lt", lane, k.const(i32, 8)), then=body)
    res = np.full(32, -1, np.int32)
    launch(k.finish(), (1,), (32,), [res])
    assert res[:8].tolist() == list(range(8)) and res[8:].tolist() == [-1] * 24
    k2 = KernelBuilder("ws2", [gptr(i32)])
    k2.line(3)
    k2.if_(k2.b.cmp("lt", k2.b.sreg("laneid", i32), k2.const(i32, 4)),
           then=lambda: warp_sync(k2.b, 0xFF))
    with pytest.raises(BarrierError, match="bar.warp.sync at kern.py:3 in divergent code"):
        launch(k2.finish(), (1,), (32,), [res])


def test_lane_outside_the_membermask_is_reported():
    with pytest.raises(BarrierError, match=r"lanes 16, 17, .* execute it but are not in its "
                                           r"membermask 0x0000ffff"):
        run_vote("all", np.ones(32), mask=0xFFFF)


def elect_module(divergent_from=None):
    k = KernelBuilder("elect", [gptr(i32)])
    (out,) = k.args
    b = k.b
    tid = b.sreg("tid.x", i32)

    def body():
        k.store_at(out, tid, b.cast(b.elect(mask=0xFFFFFFFF if divergent_from is None
                                             else (0xFFFFFFFF << divergent_from) & 0xFFFFFFFF),
                                    i32))
    if divergent_from is None:
        body()
    else:
        k.if_(b.cmp("ge", b.sreg("laneid", i32), k.const(i32, divergent_from)), then=body)
    return k.finish()


def test_elect_picks_exactly_one_lane_per_warp():
    out = np.full(96, -1, np.int32)
    launch(elect_module(), (1,), (96,), [out])
    assert [np.flatnonzero(out[w * 32:(w + 1) * 32] == 1).tolist() for w in range(3)] == [[0]] * 3
    assert set(out.tolist()) == {0, 1}


def test_elect_picks_the_lowest_active_lane():
    out = np.full(32, -1, np.int32)
    launch(elect_module(divergent_from=5), (1,), (32,), [out])
    assert out.tolist() == [-1] * 5 + [1] + [0] * 26


def bar_arrive(b, bar_id, count):
    b.op("nvvm.barrier_arrive", (), (), {"id": bar_id, "count": count})


def setmaxnreg(b, action, count):
    b.op("nvvm.setmaxnreg", (), (), {"action": action, "count": count})


def test_bar_arrive_counts_towards_bar_sync_without_waiting():
    # warp 0 writes smem then bar.arrive(1, 64); warp 1 bar.sync(1, 64) then reads; warp 0 goes
    # on and writes flag2 without waiting for warp 1.
    k = KernelBuilder("arrive", [sptr(i32), gptr(i32)])
    smem, out = k.args
    b = k.b
    tid = b.sreg("tid.x", i32)
    lane = b.sreg("laneid", i32)
    warp = b.binary("div", tid, k.const(i32, 32))

    def producer():
        k.store_at(smem, lane, b.binary("add", lane, k.const(i32, 100)))
        bar_arrive(b, 1, 64)

    def consumer():
        b.barrier(1, 64)
        k.store_at(out, lane, k.load_at(smem, lane))
    k.if_(b.cmp("eq", warp, k.const(i32, 0)), then=producer, else_=consumer)
    res = np.zeros(32, np.int32)
    launch(k.finish(), (1,), (64,), [0, res], smem_bytes=128)
    assert res.tolist() == [100 + i for i in range(32)]


def arrive_loop_module(back_pressure=True):
    """3 producer warps write smem[warp] = 10 * i + warp and arrive at barrier 2 (full); the
    consumer warp syncs on it and accumulates; with back-pressure the consumer arrives at barrier
    3 (empty), which the producers sync on before the next round."""
    k = KernelBuilder("rounds", [sptr(i32), gptr(i32)])
    smem, out = k.args
    b = k.b
    tid = b.sreg("tid.x", i32)
    warp = b.binary("div", tid, k.const(i32, 32))
    k.line(4)

    def body(i, acc):
        def producer():
            k.store_at(smem, warp, b.binary("add", b.binary("mul", i, k.const(i32, 10)), warp))
            bar_arrive(b, 2, 128)
            if back_pressure:
                b.barrier(3, 128)
            return [acc]

        def consumer():
            b.barrier(2, 128)
            total = acc
            for w in range(3):
                total = b.binary("add", total, k.load_at(smem, k.const(i32, w)))
            if back_pressure:
                bar_arrive(b, 3, 128)
            return [total]
        return k.if_(b.cmp("lt", warp, k.const(i32, 3)), [i32], producer, consumer)
    (acc,) = k.for_(k.const(i32, 0), k.const(i32, 5), k.const(i32, 1), [k.const(i32, 0)], body)
    k.store_at(out, tid, acc)
    return k.finish()


def test_bar_arrive_and_sync_hand_off_rounds_with_back_pressure():
    res = np.zeros(128, np.int32)
    launch(arrive_loop_module(), (1,), (128,), [0, res], smem_bytes=64)
    assert res[96:].tolist() == [sum(10 * i + w for i in range(5) for w in range(3))] * 32


def test_a_producer_lapping_its_consumer_is_reported():
    with pytest.raises(BarrierError) as ei:
        launch(arrive_loop_module(back_pressure=False), (1,), (128,), [0, np.zeros(128, np.int32)],
               smem_bytes=64)
    assert "warp 0 arrives at kern.py:4 a second time in one phase" in str(ei.value)
    assert "back-pressure" in str(ei.value)


def setmaxnreg_module(by_warpgroup=True):
    k = KernelBuilder("regs", [gptr(i32)])
    (out,) = k.args
    b = k.b
    tid = b.sreg("tid.x", i32)
    unit = 128 if by_warpgroup else 32
    role = b.binary("div", tid, k.const(i32, unit))
    k.line(8)
    k.if_(b.cmp("eq", role, k.const(i32, 0)), then=lambda: setmaxnreg(b, "dec", 40),
          else_=lambda: setmaxnreg(b, "inc", 232))
    b.op("nvvm.fence", (), (), {"kind": "acq_rel.cta"})
    k.store_at(out, tid, tid)
    return k.finish()


def test_setmaxnreg_per_warpgroup_is_a_no_op():
    res = np.zeros(384, np.int32)
    launch(setmaxnreg_module(), (1,), (384,), [res])
    assert res.tolist() == list(range(384))


def test_setmaxnreg_differing_within_a_warpgroup_is_reported():
    with pytest.raises(BarrierError) as ei:
        launch(setmaxnreg_module(by_warpgroup=False), (1,), (128,), [np.zeros(128, np.int32)])
    msg = str(ei.value)
    assert "warp 1 executes setmaxnreg.inc 232 but warp 0 of the same warpgroup 0" in msg
    assert "setmaxnreg.dec 40 at kern.py:8" in msg and "warpgroup index" in msg


def test_setmaxnreg_executed_by_only_some_warps_of_a_warpgroup_is_reported():
    k = KernelBuilder("regs", [gptr(i32)])
    (out,) = k.args
    b = k.b
    tid = b.sreg("tid.x", i32)
    k.line(9)
    k.if_(b.cmp("lt", tid, k.const(i32, 64)), then=lambda: setmaxnreg(b, "inc", 232))
    k.store_at(out, tid, tid)
    with pytest.raises(BarrierError) as ei:
        launch(k.finish(), (1,), (128,), [np.zeros(128, np.int32)])
    msg = str(ei.value)
    assert "warp(s) [2, 3] of warpgroup 0 never executed this setmaxnreg.inc 232" in msg
    assert "kern.py:9" in msg and "warpgroup index" in msg


def test_smem_base_is_offset_zero_and_ptr_cast_keeps_the_address():
    k = KernelBuilder("base", [sptr(i32), gptr(i32)])
    smem, out = k.args
    b = k.b
    tid = b.sreg("tid.x", i32)
    k.store_at(smem, tid, b.binary("mul", tid, k.const(i32, 3)))
    as_u64 = b.ptr_cast(b.smem_base(), u64)
    back = b.ptr_cast(b.ptr_offset(as_u64, k.const(i32, 1)), i32)    # 8 bytes in
    k.store_at(out, tid, k.load_at(back, tid))
    res = np.zeros(8, np.int32)
    launch(k.finish(), (1,), (8,), [0, res], smem_bytes=64)
    assert res.tolist() == [3 * (t + 2) if t < 6 else 0 for t in range(8)]


def test_vote_on_predicate_type():
    k = KernelBuilder("v", [gptr(i32)])
    (out,) = k.args
    b = k.b
    tid = b.sreg("tid.x", i32)
    v = b.vote("any", b.constant(i1, False))
    k.store_at(out, tid, b.cast(v, i32))
    res = np.ones(32, np.int32)
    launch(k.finish(), (1,), (32,), [res])
    assert res.tolist() == [0] * 32
