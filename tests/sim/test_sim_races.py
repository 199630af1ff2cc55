"""The simulator's shared-memory race detector (sim/races.py): racy kernels are reported with both
accesses' file:line, correct ones (the examples, the pipeline rings, FlashAttention at a small
size) run clean with it on, and the switches (ws.set_target(..., races=), WARPSTAGE_SIM_RACES,
sim.run(races=)) turn it on and off."""
import os
import re

import numpy as np
import pytest

import warpstage as ws
from warpstage import sim
from warpstage.errors import ArgumentError, RaceError
from warpstage.ir import i32
from warpstage.sim import races
from warpstage.sim.memory import SharedMemory
from warpstage.sim.run import set_races
from warpstage.sim.warp import CTA, Warp

from example_loader import load_example, load_file
from simkit import KernelBuilder, gptr, launch, sptr

pytestmark = pytest.mark.filterwarnings("ignore::warpstage.RecompileWarning")
HERE = os.path.abspath(__file__)      # locations name the kernel's file as Python gave it
# "# @name" markers -> their line numbers, for the file:line the reports must name
LINE = {m: n for n, text in enumerate(open(__file__), 1) for m in re.findall(r"# @(\w+)", text)}


def at(marker: str) -> str:
    return f"{HERE}:{LINE[marker]}"


@pytest.fixture(autouse=True)
def races_on():
    ws.set_target("sim", races=True)
    yield
    ws.set_target(None, races=False)
    set_races(None)


class Exchange:
    buf: ws.smem.Array[ws.Int32, (64,)]


@ws.kernel
def exchange(out: ws.Tensor, sync: ws.Static[bool]):
    storage = ws.smem.allocate(Exchange)
    t = ws.arch.thread_idx()[0]
    storage.buf[t] = t * 10                     # @exchange_store
    if ws.static(sync):
        ws.arch.sync_threads()
    out[t] = storage.buf[63 - t]                # @exchange_load


def test_missing_sync_threads_between_a_store_and_another_warps_load():
    out = np.zeros(64, np.int32)
    with pytest.raises(RaceError) as ei:
        exchange[1, 64](out, False)
    text = str(ei.value)
    # warp 0 read buf[32..63] before warp 1 wrote it: the write races with that read
    assert f"read by warp 0, lane 31 (thread (31,0,0)) at {at('exchange_load')}" in text
    assert f"write by warp 1, lane 0 (thread (32,0,0)) at {at('exchange_store')}" in text
    assert "bytes [0x80, 0x84)" in text and "block (0,0,0)" in text
    assert "No barrier, mbarrier wait or other synchronization orders them" in text
    assert "Fix:" in text and ei.value.where == at("exchange_store")
    first, second = ei.value.accesses
    assert first[:4] == ("read", 0, 31, (0x80, 0x84)) and second[:3] == ("write", 1, 0)


def test_with_sync_threads_the_exchange_is_clean():
    out = np.zeros(64, np.int32)
    exchange[1, 64](out, True)
    np.testing.assert_array_equal(out, (63 - np.arange(64)) * 10)


def test_the_detector_is_off_by_default_and_with_races_false(monkeypatch):
    monkeypatch.delenv("WARPSTAGE_SIM_RACES", raising=False)
    set_races(None)
    out = np.zeros(64, np.int32)
    exchange[1, 64](out, False)                 # the racy kernel runs (warp order decides)
    ws.set_target("sim", races=True)
    with pytest.raises(RaceError):
        exchange[1, 64](out, False)
    ws.set_target("sim", races=False)
    exchange[1, 64](out, False)


def test_environment_variable_turns_it_on(monkeypatch):
    set_races(None)
    monkeypatch.setenv("WARPSTAGE_SIM_RACES", "1")
    with pytest.raises(RaceError):
        exchange[1, 64](np.zeros(64, np.int32), False)
    monkeypatch.setenv("WARPSTAGE_SIM_RACES", "0")
    exchange[1, 64](np.zeros(64, np.int32), False)


def test_sim_run_argument_overrides_the_setting():
    # the IR-level exchange of test_sim_sync without its barrier
    k = KernelBuilder("exchange", [sptr(i32), gptr(i32)])
    smem, out = k.args
    t = k.b.sreg("tid.x", i32)
    k.store_at(smem, t, t)
    k.line(9)
    k.store_at(out, t, k.load_at(smem, k.b.binary("sub", k.const(i32, 63), t)))
    m = k.finish()
    launch(m, (1,), (64,), [0, np.zeros(64, np.int32)], smem_bytes=256, races=False)
    with pytest.raises(RaceError, match=r"(?s)read by warp 0.*at kern.py:9.*write by warp 1.*"
                                        r"at kern.py:1"):
        launch(m, (1,), (64,), [0, np.zeros(64, np.int32)], smem_bytes=256)


def test_races_on_the_gpu_target_is_an_argument_error():
    with pytest.raises(ArgumentError, match=r"(?s)race detector runs in the CPU simulator only.*"
                                            r"ws.set_target\('sim', races=True\)"):
        ws.set_target("cuda", races=True)


@ws.kernel
def one_slot(out: ws.Tensor, distinct: ws.Static[bool]):
    storage = ws.smem.allocate(Exchange)
    t = ws.arch.thread_idx()[0]
    if ws.static(distinct):
        storage.buf[0] = t                      # @lanes_store
    else:
        storage.buf[0] = 7
    ws.arch.sync_threads()
    out[t] = storage.buf[0]


def test_two_lanes_storing_different_values_to_one_address():
    with pytest.raises(RaceError) as ei:
        one_slot[1, 32](np.zeros(32, np.int32), True)
    text = str(ei.value)
    assert ("bytes [0x0, 0x4): lanes 0 and 1 of warp 0 store different values (0x0 and 0x1) "
            f"there in one instruction at {at('lanes_store')}") in text
    assert "unspecified which" in text and "Fix:" in text


def test_lanes_storing_the_same_value_is_not_a_race():
    out = np.zeros(32, np.int32)
    one_slot[1, 32](out, False)
    assert (out == 7).all()


@ws.kernel
def count(out: ws.Tensor, sync: ws.Static[bool]):
    storage = ws.smem.allocate(Exchange)
    t = ws.arch.thread_idx()[0]
    if t == 0:
        storage.buf[0] = 0
    ws.arch.sync_threads()
    ws.atomic_add(storage.buf.ptr, 1)           # @atomic
    if ws.static(sync):
        ws.arch.sync_threads()
    if t == 0:
        out[0] = storage.buf[0]                 # @count_read


def test_shared_atomics_of_different_warps_do_not_race():
    out = np.zeros(1, np.int32)
    count[1, 128](out, True)
    assert out[0] == 128


def test_a_plain_read_racing_with_atomics_is_reported():
    with pytest.raises(RaceError) as ei:
        count[1, 128](np.zeros(1, np.int32), False)
    text = str(ei.value)
    assert f"read by warp 0, lane 0 (thread (0,0,0)) at {at('count_read')}" in text
    assert f"atomic by warp 1, lane 0 (thread (32,0,0)) at {at('atomic')}" in text


class Handoff:
    buf: ws.smem.Array[ws.Float32, (32,), 16]
    full: ws.smem.MbarrierArray[1]


@ws.kernel
def handoff(x: ws.Tensor, out: ws.Tensor, wait: ws.Static[bool], cp_async: ws.Static[bool]):
    st = ws.smem.allocate(Handoff)
    t = ws.arch.thread_idx()[0]
    lane = t % 32
    if t == 0:
        st.full[0].init(32 if ws.static(not cp_async) else 8)
        ws.arch.fence_mbarrier_init()
    ws.arch.sync_threads()
    warp = ws.arch.make_warp_uniform(ws.arch.warp_idx())
    # the consumer is warp 0, so that it runs first and really waits for warp 1
    if warp == 1:
        if ws.static(cp_async):
            if lane < 8:
                ws.copy.cp_async(st.buf.ptr + lane * 4, x.ptr + lane * 4, 16)
                ws.copy.cp_async_mbarrier_arrive(st.full[0])   # @produce_cp
        else:
            st.buf[lane] = x[lane]              # @produce
            st.full[0].arrive()
    else:
        if ws.static(wait):
            st.full[0].wait(0)
        out[lane] = st.buf[31 - lane]           # @consume


@pytest.mark.parametrize("cp_async", [False, True])
def test_producer_consumer_through_an_mbarrier_is_clean(cp_async):
    x = np.arange(32, dtype=np.float32)
    out = np.zeros(32, np.float32)
    handoff[1, 64](x, out, True, cp_async)
    np.testing.assert_array_equal(out, x[::-1])


@pytest.mark.parametrize("cp_async", [False, True])
def test_consumer_without_its_mbarrier_wait_is_reported(cp_async):
    # warp 0 reads first (stale data), then warp 1 writes: the write races with the read
    with pytest.raises(RaceError) as ei:
        handoff[1, 64](np.arange(32, dtype=np.float32), np.zeros(32, np.float32), False,
                       cp_async)
    text = str(ei.value)
    assert f"read by warp 0, lane " in text and at("consume") in text
    assert at("produce_cp" if cp_async else "produce") in text
    assert re.search(r"write by warp 1, lane \d+ \(thread \(\d+,0,0\)\)", text)


@ws.kernel
def arrive_only(out: ws.Tensor, producer_reads_back: ws.Static[bool]):
    storage = ws.smem.allocate(Exchange)
    lane = ws.arch.lane_idx()
    warp = ws.arch.make_warp_uniform(ws.arch.warp_idx())
    if warp == 0:                               # producer: arrives, never waits
        storage.buf[lane] = lane + 100
        ws.arch.barrier_arrive(1, 64)
        if ws.static(producer_reads_back):
            out[32 + lane] = storage.buf[32 + lane]   # @read_back
    else:                                       # consumer: waits for the producer
        storage.buf[32 + lane] = lane           # @consumer_store
        ws.arch.barrier_sync(1, 64)
        out[lane] = storage.buf[lane]


def test_bar_arrive_releases_and_bar_sync_acquires():
    out = np.zeros(64, np.int32)
    arrive_only[1, 64](out, False)
    np.testing.assert_array_equal(out[:32], np.arange(32) + 100)


def test_bar_arrive_does_not_acquire():
    # the producer's read-back is not ordered after the consumer's store: bar.arrive only
    # releases (the consumer runs after the producer here, so its store is the second access)
    with pytest.raises(RaceError) as ei:
        arrive_only[1, 64](np.zeros(64, np.int32), True)
    text = str(ei.value)
    assert f"read by warp 0, lane 0 (thread (0,0,0)) at {at('read_back')}" in text
    assert f"write by warp 1, lane 0 (thread (32,0,0)) at {at('consumer_store')}" in text


def test_hooks_for_other_op_families():
    cta = CTA((0, 0, 0), (1, 1, 1), (64, 1, 1), sim.Memory(), SharedMemory(256), [], False)
    cta.warps = [Warp(0, cta), Warp(1, cta)]
    w0, w1 = cta.warps
    races.note_write(cta, [0, 64], 16, w0, None)   # the detector is off: nothing happens
    cta.races = races.RaceState(cta, 256)
    races.note_write(cta, [0, 64], 16, w0, None)   # e.g. two TMA box rows landing
    with pytest.raises(RaceError, match=r"bytes \[0x48, 0x4c\).*\n  write by warp 0, lane 0.*"
                                        r"\n  read by warp 1, lane 0"):
        races.note_read(cta, 72, 4, w1, None)
    cta.races.mbarrier_release(w0.index, 8, completed=True)   # w0 arrives, the phase completes
    cta.races.mbarrier_acquire(w1.index, [8])                  # w1's wait observes it
    races.note_read(cta, [64, 72], 8, w1, None, lanes=[3, 4])  # e.g. a wgmma operand read


# -- correct kernels run clean with the detector on ---------------------------------------------
examples = load_file("tests/examples/test_examples_sim.py", "races_examples")
rings = load_file("tests/lang/test_pipeline.py", "races_rings")


@pytest.mark.parametrize("stages", [1, 3])
def test_example_mbarrier_pipeline_is_race_free(stages):
    examples.test_mbarrier_pipeline(stages)
    cfg = examples.pipeline.Pipeline(stages=stages, copy="ld/st")
    x = np.random.default_rng(1).standard_normal(2 * 3 * cfg.tile).astype(np.float32)
    out = np.full_like(x, np.nan)
    examples.pipeline.launch(cfg, x, out, 2)
    np.testing.assert_array_equal(out, x * 2 + 1)


def test_examples_vector_add_and_softmax_are_race_free():
    examples.test_vector_add(1000, np.float32)
    examples.test_softmax((37, 50), np.float32)


@pytest.mark.parametrize("cp_async", [True, False])
@pytest.mark.parametrize("stages", [1, 2, 4])
def test_pipeline_rings_are_race_free(stages, cp_async):
    rings.test_pipeline_async_ring_matches_numpy(stages, cp_async)


def test_pipeline_state_walk_and_flat_barriers_are_race_free():
    rings.test_one_flat_mbarrier_array_holds_full_then_empty()
    rings.test_pipeline_state_advances_through_loops_branches_and_calls(3)


def test_flash_attention_small_is_race_free():
    fa = load_file("tests/examples/test_flash_attention_sim.py", "races_flash_attention")
    fa.test_head_dim_64(100, True, "bfloat16")           # K/V tails, causal, two stages
    fa.test_strided_bshd_view_and_ld_st_copies()
    fa.test_more_keys_than_queries_with_three_stages()


def test_flash_attention_example_main_is_race_free():
    ex = load_example("flash_attention", "races_flash_attention_example")
    assert ex.main(batch=1, heads=1, seq=33, head_dim=64, causal=True) < 1e-2


class TmaTile:
    tile: ws.smem.Array[ws.Float32, (8, 32), 128]
    bar: ws.smem.MbarrierArray[1]


@ws.kernel
def tma_consume(desc, out: ws.Tensor, wait: ws.Static[bool]):
    s = ws.smem.allocate(TmaTile)
    t = ws.arch.thread_idx()[0]
    if t == 0:
        s.bar[0].init(1)
    ws.arch.sync_threads()
    if t == 0:
        s.bar[0].arrive_expect_tx(8 * 32 * 4)
        ws.tma.load(desc, s.tile, (0, 0), s.bar[0])           # @tma_issue
    if ws.static(wait):
        s.bar[0].wait(0)
    if t >= 32:
        for i in range(8):
            out[i * 32 + t - 32] = s.tile[i, t - 32]           # @tma_read


def test_a_tma_load_read_by_another_warp_without_the_mbarrier_wait_races():
    x = np.arange(8 * 32, dtype=np.float32).reshape(8, 32)
    desc = ws.tma.TensorDescriptor(x, (8, 32), swizzle=0)
    out = np.zeros(8 * 32, np.float32)
    tma_consume[1, 64](desc, out, True)
    np.testing.assert_array_equal(out, x.ravel())
    with pytest.raises(RaceError) as ei:
        tma_consume[1, 64](desc, out, False)
    text = str(ei.value)
    assert at("tma_issue") in text and at("tma_read") in text
