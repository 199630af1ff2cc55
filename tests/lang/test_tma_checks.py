"""The simulator's checks of TMA misuse that the GPU does not report: a store's shared source
overwritten before the wait that retires its read, a store never waited for, more TMA bytes
completed on an mbarrier than announced (every thread issuing the copy), and, with the race
detector, an mbarrier used by other warps before its init is ordered before them."""
import inspect

import numpy as np
import pytest

import warpstage as ws
from tma_kit import Tile32 as Tile, desc32 as desc_of, init_barrier

pytestmark = pytest.mark.filterwarnings("ignore::warpstage.RecompileWarning")


def line_of(marker: str) -> int:
    lines = inspect.getsource(inspect.getmodule(line_of)).splitlines()
    return next(i + 1 for i, ln in enumerate(lines) if marker in ln and "line_of(" not in ln)


HERE = __file__


# -- stores: the source stays unchanged until the wait that retires the read -----------------------
@ws.kernel
def store_then_overwrite(desc, mode: ws.Static[str]):
    s = ws.smem.allocate(Tile)
    tid = ws.arch.thread_idx()[0]
    for i in range(tid, 32 * 32, 128):
        s.tile[i // 32, i % 32] = 1.0
    ws.arch.fence_proxy_async()
    ws.arch.sync_threads()
    if tid == 0:
        ws.tma.store(desc, s.tile, (0, 0))                  # THE-STORE
        ws.tma.commit_group()
        if ws.static(mode == "wait_first"):
            ws.tma.wait_group(0, read=True)
    ws.arch.sync_threads()
    for i in range(tid, 32 * 32, 128):
        s.tile[i // 32, i % 32] = 2.0
    ws.arch.sync_threads()
    if ws.static(mode == "wait_after"):
        if tid == 0:
            ws.tma.wait_group(0, read=True)                 # THE-READ-WAIT
    if ws.static(mode == "full_wait_after"):
        if tid == 0:
            ws.tma.wait_group(0)                            # THE-FULL-WAIT


def test_a_store_waited_for_before_the_source_is_reused_stores_the_old_bytes():
    y = np.zeros((32, 32), np.float32)
    store_then_overwrite[1, 128](desc_of(y), "wait_first")
    np.testing.assert_array_equal(y, np.ones((32, 32), np.float32))


@pytest.mark.parametrize("mode, marker", [("wait_after", "THE-READ-WAIT"),
                                          ("full_wait_after", "THE-FULL-WAIT")])
def test_a_store_source_overwritten_before_its_wait_is_an_error(mode, marker):
    y = np.zeros((32, 32), np.float32)
    with pytest.raises(ws.SimulatorError) as ei:
        store_then_overwrite[1, 128](desc_of(y), mode)
    msg = str(ei.value)
    assert f"tma.store at {HERE}:{line_of('THE-STORE')}" in msg
    assert f"overwritten before ws.tma.wait_group(read=True) at {HERE}:{line_of(marker)}" in msg
    assert "Fix: ws.tma.commit_group(), then ws.tma.wait_group(0, read=True)" in msg


def test_a_store_never_waited_for_is_an_error():
    y = np.zeros((32, 32), np.float32)
    with pytest.raises(ws.SimulatorError) as ei:
        store_then_overwrite[1, 128](desc_of(y), "never")
    msg = str(ei.value)
    assert f"tma.store at {HERE}:{line_of('THE-STORE')}" in msg
    assert "was never waited for: the CTA exited" in msg and "overwritten meanwhile" in msg


# -- mbarrier init ordered before other warps' use (race detector) ------------------------------
@ws.kernel
def init_then_load(desc, out: ws.Tensor, synced: ws.Static[bool], init_tid: ws.Static[int]):
    s = ws.smem.allocate(Tile)
    tid = ws.arch.thread_idx()[0]
    if tid == init_tid:
        s.bar[0].init(1)                                    # THE-INIT
        if ws.static(synced):
            ws.arch.fence_mbarrier_init()
    if ws.static(synced):
        ws.arch.sync_threads()
    if tid == init_tid:
        s.bar[0].arrive_expect_tx(desc.smem_bytes)
        ws.tma.load(desc, s.tile, (0, 0), s.bar[0])
    s.bar[0].wait(0)                                        # THE-WAIT
    out[tid // 32, tid % 32] = s.tile[tid // 32, tid % 32]


@pytest.fixture
def races():
    ws.set_target("sim", races=True)
    yield
    ws.set_target("sim", races=None)


def test_an_init_ordered_by_fence_and_barrier_is_not_a_race(races):
    x = np.arange(32 * 32, dtype=np.float32).reshape(32, 32)
    out = np.zeros((32, 32), np.float32)
    init_then_load[1, 128](desc_of(x), out, True, 0)
    np.testing.assert_array_equal(out[:4], x[:4])


def test_an_init_not_ordered_before_another_warps_wait_is_a_race(races):
    x = np.zeros((32, 32), np.float32)
    with pytest.raises(ws.RaceError) as ei:
        init_then_load[1, 128](desc_of(x), np.zeros((32, 32), np.float32), False, 0)
    msg = str(ei.value)
    assert f"write by warp 0, lane 0 (thread (0,0,0)) at {HERE}:{line_of('THE-INIT')}" in msg
    assert f"atomic by warp 1, lane 0 (thread (32,0,0)) at {HERE}:{line_of('THE-WAIT')}" in msg
    assert "ws.arch.fence_mbarrier_init() and ws.arch.sync_threads()" in msg


def test_an_init_by_a_later_warp_is_reported_at_the_first_use():
    x = np.zeros((32, 32), np.float32)
    with pytest.raises(ws.SimulatorError, match=r"(?s)mbarrier.wait_parity at .*:%d \(warp 0\).*"
                       r"no mbarrier.init ran there" % line_of("THE-WAIT")):
        init_then_load[1, 128](desc_of(x), np.zeros((32, 32), np.float32), False, 127)


# -- copies issued by every thread: more bytes completed than announced -------------------------
class Buf:
    buf: ws.smem.Array[ws.Float32, (64,), 16]
    bar: ws.smem.MbarrierArray[1]


@ws.kernel
def tile_by(desc, out: ws.Tensor, who: ws.Static[str]):
    s = ws.smem.allocate(Tile)
    tid = ws.arch.thread_idx()[0]
    init_barrier(s.bar[0], tid)
    if tid == 0:
        s.bar[0].arrive_expect_tx(desc.smem_bytes)
    if ws.static(who == "all"):
        ws.tma.load(desc, s.tile, (0, 0), s.bar[0])            # ALL-LOAD
    else:
        if tid % 32 == 0:
            ws.tma.load(desc, s.tile, (0, 0), s.bar[0])        # LANE0-LOAD
    s.bar[0].wait(0)
    out[tid // 32, tid % 32] = s.tile[tid // 32, tid % 32]


def test_a_tma_load_issued_by_every_thread_is_an_error():
    x = np.zeros((32, 32), np.float32)
    with pytest.raises(ws.SimulatorError) as ei:
        tile_by[1, 128](desc_of(x), np.zeros((32, 32), np.float32), "all")
    msg = str(ei.value)
    assert f"tma.load at {HERE}:{line_of('ALL-LOAD')} (warp 0): 32 threads execute it, each " \
           "issuing a copy of 4096 bytes" in msg
    assert "31 more TMA loads than announced" in msg
    assert "tx-count of phase 1 would reach -126976" in msg
    assert "issue TMA from one elected thread: if ws.arch.elect_one(): ..." in msg


def test_one_load_per_warp_is_reported_at_exit_or_as_a_race():
    x = np.arange(1024, dtype=np.float32).reshape(32, 32)
    ws.set_target("sim", races=False)
    try:
        with pytest.raises(ws.SimulatorError) as ei:
            tile_by[1, 128](desc_of(x), np.zeros((32, 32), np.float32), "lane0")
    finally:
        ws.set_target("sim", races=None)
    msg = str(ei.value)
    assert f"tma.load at {HERE}:{line_of('LANE0-LOAD')}: when the CTA exited" in msg
    assert "tx-count -12288 (12288 bytes of TMA/bulk copies completed beyond what expect_tx " \
           "announced" in msg
    ws.set_target("sim", races=True)
    try:
        with pytest.raises(ws.RaceError) as ei:
            tile_by[1, 128](desc_of(x), np.zeros((32, 32), np.float32), "lane0")
    finally:
        ws.set_target("sim", races=None)
    msg = str(ei.value)
    assert "Both are TMA/bulk copies into the same bytes" in msg
    assert "Fix: issue the copy from one thread" in msg and "sync_threads" not in msg


@ws.kernel
def bulk(x: ws.Tensor, out: ws.Tensor, nbytes: ws.Int32, expect: ws.Int32):
    s = ws.smem.allocate(Buf)
    tid = ws.arch.thread_idx()[0]
    init_barrier(s.bar[0], tid)
    if tid == 0:
        s.bar[0].arrive_expect_tx(expect)
        ws.tma.bulk_copy(s.buf, x.ptr, nbytes, s.bar[0])      # THE-BULK
    s.bar[0].wait(0)
    out[tid] = s.buf[tid]


@pytest.mark.parametrize("nbytes, expect, text", [
    (256, 128, "tx-count -128 (128 bytes of TMA/bulk copies completed beyond what expect_tx "
               "announced, the last by the tma.bulk_copy at {where}"),
    (128, 256, "tx-count 128 (waiting for 128 more bytes of TMA/bulk copies: announced with "
               "expect_tx but not completed")])
def test_a_phase_stuck_on_transaction_bytes_names_the_byte_count(nbytes, expect, text):
    x = np.arange(64, dtype=np.float32)
    with pytest.raises(ws.DeadlockError) as ei:
        bulk[1, 64](x, np.zeros(64, np.float32), nbytes, expect)
    assert text.format(where=f"{HERE}:{line_of('THE-BULK')}") in str(ei.value)


def test_a_bulk_copy_of_the_announced_bytes_lands():
    x = np.arange(64, dtype=np.float32)
    out = np.zeros(64, np.float32)
    bulk[1, 64](x, out, 256, 256)
    np.testing.assert_array_equal(out, x)


@ws.kernel
def inval_after_unordered_arrive(flag: ws.Tensor):
    s = ws.smem.allocate(Tile)
    tid = ws.arch.thread_idx()[0]
    init_barrier(s.bar[0], tid)
    if tid == 32:
        s.bar[0].arrive()                                   # THE-ARRIVE
        ws.atomic_add(flag.ptr, 1)
    if tid == 0:
        while ws.atomic_add(flag.ptr, 0) == 0:              # a flag: no happens-before here
            pass
        s.bar[0].invalidate()                               # THE-INVAL


def test_an_inval_not_ordered_after_another_warps_arrive_is_a_race(races):
    with pytest.raises(ws.RaceError) as ei:
        inval_after_unordered_arrive[1, 64](np.zeros(1, np.int32))
    msg = str(ei.value)
    assert f"atomic by warp 1, lane 0 (thread (32,0,0)) at {HERE}:{line_of('THE-ARRIVE')}" in msg
    assert f"write by warp 0, lane 0 (thread (0,0,0)) at {HERE}:{line_of('THE-INVAL')}" in msg
    assert "invalidate only after every warp is done with it" in msg
