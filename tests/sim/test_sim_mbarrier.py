"""mbarriers in the simulator: phase and transaction tracking, blocking waits, polling, deadlock
reports and misuse."""
import numpy as np
import pytest

from warpstage.errors import DeadlockError, OutOfBoundsError, SimulatorError
from warpstage.ir import i1, i32, u64

from simkit import KernelBuilder, gptr, launch

MBAR_LINE = 3


def mbar_at(k, byte_offset=0):
    b = k.b
    base = b.ptr_cast(b.smem_base(), u64)
    return base if byte_offset == 0 else b.ptr_offset(base, k.const(i32, byte_offset // 8))


def single_thread(k, body):
    """Run ``body()`` in lane 0 of warp 0 only."""
    b = k.b
    k.if_(b.cmp("eq", b.sreg("tid.x", i32), k.const(i32, 0)), then=body)


def test_phase_tracking_and_parity():
    k = KernelBuilder("phases", [gptr(i32)])
    (out,) = k.args
    b = k.b
    slots = iter(range(100))

    def record(v):
        k.store_at(out, k.const(i32, next(slots)), b.cast(v, i32))

    def body():
        bar = mbar_at(k)
        c = k.const
        b.mbarrier("init", bar, c(i32, 2))
        record(b.mbarrier("try_wait_parity", bar, c(i32, 0)))    # phase 0 pending: 0
        record(b.mbarrier("try_wait_parity", bar, c(i32, 1)))    # "phase -1" complete: 1
        record(b.mbarrier("arrive", bar))                        # token: phase 0
        record(b.mbarrier("try_wait_parity", bar, c(i32, 0)))    # 1 of 2 arrived: 0
        record(b.mbarrier("arrive", bar))                        # completes phase 0 -> token 0
        record(b.mbarrier("try_wait_parity", bar, c(i32, 0)))    # 1
        record(b.mbarrier("try_wait_parity", bar, c(i32, 1)))    # phase 1 pending: 0
        record(b.mbarrier("arrive", bar, c(i32, 2)))             # two arrivals: token 1
        record(b.mbarrier("try_wait_parity", bar, c(i32, 1)))    # 1 (phase 2 now)
        b.mbarrier("expect_tx", bar, c(i32, 64))
        record(b.mbarrier("arrive", bar, c(i32, 2)))             # token 2; waits for 64 bytes
        record(b.mbarrier("try_wait_parity", bar, c(i32, 0)))    # phase 2 parity 0: not done: 0
        b.mbarrier("inval", bar)
        return []
    single_thread(k, body)
    res = np.full(16, -1, np.int32)
    launch(k.finish(), (1,), (32,), [res], smem_bytes=64)
    assert res[:11].tolist() == [0, 1, 0, 0, 0, 1, 0, 1, 1, 2, 0]


def test_every_executing_lane_arrives():
    # init(32): one warp's arrive completes the phase; a second warp waits on it
    k = KernelBuilder("lanes", [gptr(i32)])
    (out,) = k.args
    b = k.b
    tid = b.sreg("tid.x", i32)
    bar = mbar_at(k)
    single_thread(k, lambda: b.mbarrier("init", bar, k.const(i32, 32)))
    b.barrier()
    warp = b.binary("div", tid, k.const(i32, 32))

    def producer():
        k.store_at(out, tid, k.const(i32, 7))
        b.mbarrier("arrive", bar)

    def consumer():
        b.mbarrier("wait_parity", bar, k.const(i32, 0))
        k.store_at(out, tid, k.load_at(out, b.binary("add", tid, k.const(i32, 32))))
    k.if_(b.cmp("eq", warp, k.const(i32, 1)), then=producer, else_=consumer)
    res = np.zeros(64, np.int32)
    launch(k.finish(), (1,), (64,), [res], smem_bytes=8)
    assert res.tolist() == [7] * 64


def pipeline_module(stages, producer_parity_bug=False):
    """Warp 0 produces ``n`` items through a ``stages``-deep ring in shared memory guarded by
    full/empty mbarriers (init 32: every lane arrives); warp 1 consumes: out[i*32+lane] =
    buf * 2 + 1 where the producer wrote x[i*32+lane]."""
    k = KernelBuilder("pipeline", [gptr(i32), gptr(i32), i32])
    x, out, n = k.args
    b = k.b
    c = k.const
    lane = b.sreg("laneid", i32)
    warp = b.binary("div", b.sreg("tid.x", i32), c(i32, 32))
    mbar_base = b.ptr_cast(b.ptr_offset(b.smem_base(), c(i32, stages * 128)), u64)
    buf = b.ptr_cast(b.smem_base(), i32)

    def full(s):
        return b.ptr_offset(mbar_base, s)

    def empty(s):
        return b.ptr_offset(mbar_base, b.binary("add", s, c(i32, stages)))

    def init():
        for s in range(stages):
            b.mbarrier("init", full(c(i32, s)), c(i32, 32))
            b.mbarrier("init", empty(c(i32, s)), c(i32, 32))
        b.op("nvvm.fence", (), (), {"kind": "mbarrier_init.release.cluster"})
    single_thread(k, init)
    b.barrier()

    def stage_phase(i):
        return b.binary("mod", i, c(i32, stages)), b.binary("and", b.binary("div", i, c(i32, stages)), c(i32, 1))

    def producer():
        def body(i):
            s, ph = stage_phase(i)
            k.line(MBAR_LINE)
            b.mbarrier("wait_parity", empty(s),
                       ph if producer_parity_bug else b.binary("xor", ph, c(i32, 1)))
            k.line(10)
            idx = b.binary("add", b.binary("mul", i, c(i32, 32)), lane)
            k.store_at(buf, b.binary("add", b.binary("mul", s, c(i32, 32)), lane), k.load_at(x, idx))
            b.mbarrier("arrive", full(s))
        k.for_(c(i32, 0), n, c(i32, 1), [], body)

    def consumer():
        def body(i):
            s, ph = stage_phase(i)
            k.line(MBAR_LINE + 20)
            b.mbarrier("wait_parity", full(s), ph)
            k.line(30)
            v = k.load_at(buf, b.binary("add", b.binary("mul", s, c(i32, 32)), lane))
            idx = b.binary("add", b.binary("mul", i, c(i32, 32)), lane)
            k.store_at(out, idx, b.binary("add", b.binary("mul", v, c(i32, 2)), c(i32, 1)))
            b.mbarrier("arrive", empty(s))
        k.for_(c(i32, 0), n, c(i32, 1), [], body)
    k.if_(b.cmp("eq", warp, c(i32, 0)), then=producer, else_=consumer)
    return k.finish(), stages * 128 + stages * 16


@pytest.mark.parametrize("stages", [1, 2, 3, 4])
def test_producer_consumer_ring_matches_numpy(stages):
    n = 37
    m, smem = pipeline_module(stages)
    x = np.random.default_rng(stages).integers(-1000, 1000, n * 32).astype(np.int32)
    out = np.zeros_like(x)
    launch(m, (2,), (64,), [x, out, n], smem_bytes=smem)
    assert out.tolist() == (x * 2 + 1).tolist()


def test_deadlock_on_an_mbarrier_reports_each_warp_and_the_barrier_state():
    m, smem = pipeline_module(2, producer_parity_bug=True)
    with pytest.raises(DeadlockError) as ei:
        launch(m, (1,), (64,), [np.zeros(64, np.int32), np.zeros(64, np.int32), 2],
               smem_bytes=smem)
    msg = str(ei.value)
    assert "warp 0: waiting at mbarrier.wait_parity at kern.py:3" in msg
    assert "warp 1: waiting at mbarrier.wait_parity at kern.py:23" in msg
    assert "waiting for the phase with parity 0 to complete" in msg
    assert "is in phase 0 (parity 0) with 32 of 32 arrivals pending and tx-count 0" in msg
    assert "Check each mbarrier wait's parity" in msg


def test_uninitialized_mbarrier_is_reported():
    k = KernelBuilder("noinit", [gptr(i32)])
    k.line(4)
    k.b.mbarrier("arrive", mbar_at(k, 8))
    with pytest.raises(SimulatorError) as ei:
        launch(k.finish(), (1,), (32,), [np.zeros(1, np.int32)], smem_bytes=64)
    msg = str(ei.value)
    assert "mbarrier.arrive at kern.py:4 (warp 0): no mbarrier at shared offset 0x8" in msg
    assert "no mbarrier.init ran there" in msg and "bar.init(count)" in msg


def test_use_after_inval_names_the_inval():
    k = KernelBuilder("inval", [gptr(i32)])
    bar = mbar_at(k)

    def body():
        k.b.mbarrier("init", bar, k.const(i32, 1))
        k.line(6)
        k.b.mbarrier("inval", bar)
        k.line(7)
        k.b.mbarrier("wait_parity", bar, k.const(i32, 0))
    single_thread(k, body)
    with pytest.raises(SimulatorError, match="mbarrier.wait_parity at kern.py:7 .* it was "
                                             "invalidated at kern.py:6"):
        launch(k.finish(), (1,), (32,), [np.zeros(1, np.int32)], smem_bytes=64)


def test_misaligned_and_out_of_bounds_mbarriers():
    k = KernelBuilder("misaligned", [gptr(i32)])
    b = k.b
    p = b.ptr_cast(b.ptr_offset(b.smem_base(), k.const(i32, 4)), u64)
    single_thread(k, lambda: b.mbarrier("init", p, k.const(i32, 1)))
    with pytest.raises(SimulatorError, match="mbarrier address 0x4 is not 8-byte aligned"):
        launch(k.finish(), (1,), (32,), [np.zeros(1, np.int32)], smem_bytes=64)
    k = KernelBuilder("oob", [gptr(i32)])
    single_thread(k, lambda: k.b.mbarrier("init", mbar_at(k, 64), k.const(i32, 1)))
    with pytest.raises(OutOfBoundsError, match="outside the CTA's 64-byte shared memory"):
        launch(k.finish(), (1,), (32,), [np.zeros(1, np.int32)], smem_bytes=64)


def test_reinit_of_an_mbarrier_in_use_is_reported():
    k = KernelBuilder("reinit", [gptr(i32)])
    bar = mbar_at(k)

    def body():
        k.b.mbarrier("init", bar, k.const(i32, 2))
        k.b.mbarrier("arrive", bar)
        k.b.mbarrier("init", bar, k.const(i32, 2))
    single_thread(k, body)
    with pytest.raises(SimulatorError, match="re-initializing an mbarrier in use: .* 1 of 2 "
                                             "arrivals pending"):
        launch(k.finish(), (1,), (32,), [np.zeros(1, np.int32)], smem_bytes=64)


def test_too_many_arrivals_while_waiting_for_transactions():
    k = KernelBuilder("overarrive", [gptr(i32)])
    bar = mbar_at(k)

    def body():
        k.b.mbarrier("init", bar, k.const(i32, 1))
        k.b.mbarrier("arrive_expect_tx", bar, k.const(i32, 128))
        k.b.mbarrier("arrive", bar)
    single_thread(k, body)
    with pytest.raises(SimulatorError, match="arrival on a phase with no arrival pending \\(it "
                                             "waits for 128 transaction bytes\\)"):
        launch(k.finish(), (1,), (32,), [np.zeros(1, np.int32)], smem_bytes=64)


def bar_arrive(b, bar_id, count):
    b.op("nvvm.barrier_arrive", (), (), {"id": bar_id, "count": count})


def poll_module(spin_forever=False):
    """Warp 1 spins on try_wait(parity 0) until warp 0 arrives (after a named-barrier wait that
    warp 1 releases by arriving from inside its polling loop)."""
    k = KernelBuilder("poll", [gptr(i32)])
    (out,) = k.args
    b = k.b
    c = k.const
    tid = b.sreg("tid.x", i32)
    warp = b.binary("div", tid, c(i32, 32))
    bar = mbar_at(k)
    single_thread(k, lambda: b.mbarrier("init", bar, c(i32, 32)))
    b.barrier()

    def warp0():
        if not spin_forever:
            b.barrier(1, 64)
            b.mbarrier("arrive", bar)

    def warp1():
        def before(done, count):
            k.line(9)
            ok = b.mbarrier("try_wait_parity", bar, c(i32, 0))
            return b.cmp("eq", ok, b.constant(ok.type, False)), [ok, count]

        def after(ok, count):
            first = b.cmp("eq", count, c(i32, 0))
            if not spin_forever:
                k.if_(first, then=lambda: bar_arrive(b, 1, 64))
            return [ok, b.binary("add", count, c(i32, 1))]
        _, polls = k.while_([b.constant(i1, False), c(i32, 0)], before, after)
        k.store_at(out, tid, polls)
    k.if_(b.cmp("eq", warp, c(i32, 0)), then=warp0, else_=warp1)
    return k.finish()


def test_polling_loop_that_does_work_between_polls():
    out = np.full(64, -1, np.int32)
    launch(poll_module(), (1,), (64,), [out], smem_bytes=8)
    assert (out[32:] >= 1).all()


def test_a_spin_loop_that_can_never_succeed_is_a_deadlock():
    with pytest.raises(DeadlockError) as ei:
        launch(poll_module(spin_forever=True), (1,), (64,), [np.zeros(64, np.int32)],
               smem_bytes=8)
    msg = str(ei.value)
    assert "warp 0: exited" in msg
    assert "warp 1: waiting at mbarrier.try_wait_parity (a polling loop" in msg
    assert "kern.py:9" in msg


def test_two_failing_polls_in_a_row_are_not_a_deadlock():
    k = KernelBuilder("twice", [gptr(i32)])
    (out,) = k.args
    b = k.b
    bar = mbar_at(k)

    def body():
        b.mbarrier("init", bar, k.const(i32, 1))
        r1 = b.mbarrier("try_wait_parity", bar, k.const(i32, 0))
        r2 = b.mbarrier("try_wait_parity", bar, k.const(i32, 0))
        k.store_at(out, k.const(i32, 0), b.binary("add", b.cast(r1, i32), b.cast(r2, i32)))
    single_thread(k, body)
    res = np.full(1, -1, np.int32)
    launch(k.finish(), (1,), (32,), [res], smem_bytes=8)
    assert res.tolist() == [0]


def test_arrive_tokens_are_u64_phases():
    k = KernelBuilder("tokens", [gptr(u64)])
    (out,) = k.args
    bar = mbar_at(k)

    def body():
        k.b.mbarrier("init", bar, k.const(i32, 1))
        for j in range(3):
            k.store_at(out, k.const(i32, j), k.b.mbarrier("arrive", bar))
    single_thread(k, body)
    res = np.zeros(3, np.uint64)
    launch(k.finish(), (1,), (32,), [res], smem_bytes=8)
    assert res.tolist() == [0, 1, 2]
