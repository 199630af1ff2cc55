"""Spin loops on memory in the simulator: a while loop that reads memory yields to the scheduler
every SPIN_ITERATIONS iterations, so flag passing between warps and between CTAs completes; a
spin that nothing can end is reported as a LivelockError with each warp's spin loop or wait
point; loops that read no memory stay plain Python loops."""
import os
import re
import signal

import numpy as np
import pytest

import warpstage as ws
from warpstage import sim
from warpstage.errors import DeadlockError, LivelockError
from warpstage.ir import i32
from warpstage.sim.scheduler import SPIN_ITERATIONS, SPIN_ROUNDS

from simkit import KernelBuilder, gptr, launch

pytestmark = [pytest.mark.filterwarnings("ignore::warpstage.RecompileWarning"),
              pytest.mark.usefixtures("sim_target")]
HERE = os.path.abspath(__file__)
LINE = {m: n for n, text in enumerate(open(__file__), 1) for m in re.findall(r"# @(\w+)", text)}


def at(marker: str) -> str:
    return f"{HERE}:{LINE[marker]}"


@pytest.fixture(autouse=True)
def no_hang():
    """A spin the simulator cannot preempt would hang: fail after 60 s instead."""
    def expire(signum, frame):
        raise TimeoutError("the simulated kernel still runs after 60 s: a spin was not preempted")
    if not hasattr(signal, "SIGALRM"):
        yield
        return
    old = signal.signal(signal.SIGALRM, expire)
    signal.alarm(60)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


@ws.kernel
def flag_between_warps(data: ws.Tensor, flag: ws.Tensor, out: ws.Tensor):
    lane = ws.arch.lane_idx()
    warp = ws.arch.make_warp_uniform(ws.arch.warp_idx())
    if warp == 1:                               # the writer runs second: warp 0 must yield
        data[lane] = lane * 3 + 1
        ws.arch.fence_acq_rel()
        if lane == 0:
            ws.atomic_exch(flag.ptr, 1)
    else:
        while ws.atomic_add(flag.ptr, 0) == 0:  # @spin_warp
            pass
        ws.arch.fence_acq_rel()
        out[lane] = data[lane]


def test_a_warp_spinning_on_a_flag_set_by_a_later_warp_completes():
    data, flag, out = np.zeros(32, np.int32), np.zeros(1, np.int32), np.zeros(32, np.int32)
    flag_between_warps[1, 64](data, flag, out)
    np.testing.assert_array_equal(out, np.arange(32) * 3 + 1)
    assert flag[0] == 1


@ws.kernel
def flag_between_ctas(data: ws.Tensor, flag: ws.Tensor, out: ws.Tensor):
    lane = ws.arch.lane_idx()
    cta = ws.arch.block_idx()[0]
    if cta == 0:                                # CTA 0 waits for the last CTA of the grid
        while ws.atomic_add(flag.ptr, 0) == 0:  # @spin_cta
            pass
        ws.arch.fence_acq_rel()
        out[lane] = data[lane]
    else:
        ws.atomic_add(flag.ptr + 1, 1)          # count the CTAs that ran
        if cta == ws.arch.grid_dim()[0] - 1:
            data[lane] = lane + 7
            ws.arch.fence_acq_rel()
            if lane == 0:
                ws.atomic_exch(flag.ptr, 1)


def test_a_cta_spinning_on_a_flag_set_by_a_later_cta_completes():
    # CTAs run one at a time until every warp spins: then the next CTAs are started beside them
    data, flag, out = np.zeros(32, np.int32), np.zeros(2, np.int32), np.zeros(32, np.int32)
    flag_between_ctas[4, 32](data, flag, out)
    np.testing.assert_array_equal(out, np.arange(32) + 7)
    assert flag.tolist() == [1, 3 * 32]


@ws.kernel
def ping_pong(flags: ws.Tensor, out: ws.Tensor, rounds: ws.Int32):
    # warp 0 posts i on flags[0] and waits for warp 1 to echo it on flags[1], `rounds` times
    lane = ws.arch.lane_idx()
    warp = ws.arch.make_warp_uniform(ws.arch.warp_idx())
    for i in range(rounds):
        if warp == 0:
            if lane == 0:
                ws.atomic_exch(flags.ptr, i + 1)
            while ws.atomic_add(flags.ptr + 1, 0) != i + 1:
                pass
        else:
            while ws.atomic_add(flags.ptr, 0) != i + 1:
                pass
            if lane == 0:
                ws.atomic_exch(flags.ptr + 1, i + 1)
                out[i] = i * 10


def test_ping_pong_between_two_spinning_warps():
    flags, out = np.zeros(2, np.int32), np.full(5, -1, np.int32)
    ping_pong[1, 64](flags, out, 5)
    assert out.tolist() == [0, 10, 20, 30, 40] and flags.tolist() == [5, 5]


@ws.kernel
def never_set(flag: ws.Tensor, with_barrier: ws.Static[bool]):
    warp = ws.arch.make_warp_uniform(ws.arch.warp_idx())
    if warp == 0:
        while ws.atomic_add(flag.ptr, 0) == 0:  # @spin_forever
            pass
    if ws.static(with_barrier):
        ws.arch.sync_threads()                  # @never_barrier
        if warp == 1:
            ws.atomic_exch(flag.ptr, 1)         # after the barrier warp 0 never reaches


def test_a_spin_on_a_flag_nobody_sets_is_reported():
    with pytest.raises(LivelockError) as ei:
        never_set[1, 64](np.zeros(1, np.int32), False)
    text = str(ei.value)
    assert text.startswith("livelock in block (0,0,0): every live warp spins")
    assert re.search(rf"warp 0: spinning in the while loop at {re.escape(at('spin_forever'))} "
                     rf"\(\d+ iterations, the last {SPIN_ROUNDS * SPIN_ITERATIONS} without a "
                     r"change of its loop state\)", text)
    assert "warp 1: exited" in text and "read with an atomic" in text
    assert isinstance(ei.value, DeadlockError) and ei.value.where == at("spin_forever")


def test_a_spin_waiting_for_a_warp_blocked_behind_it_is_reported():
    with pytest.raises(LivelockError) as ei:
        never_set[1, 64](np.zeros(1, np.int32), True)
    text = str(ei.value)
    assert f"warp 0: spinning in the while loop at {at('spin_forever')}" in text
    assert re.search(rf"warp 1: waiting at nvvm.barrier id=0 .*1 of 2 warps arrived: \[1\]\) at "
                     rf"{re.escape(at('never_barrier'))}", text)


@ws.kernel
def spin_everywhere(flag: ws.Tensor):
    while ws.atomic_add(flag.ptr, 0) == 0:
        pass


def test_a_grid_where_every_cta_spins_starts_them_all_then_reports():
    with pytest.raises(LivelockError, match=r"(?s)livelock in blocks \(0,0,0\), \(1,0,0\): "
                                            r".*no other CTA of the grid is left to start\n"
                                            r"  block \(0,0,0\):\n    warp 0: spinning.*"
                                            r"  block \(1,0,0\):\n    warp 0: spinning"):
        spin_everywhere[2, 32](np.zeros(1, np.int32))


@ws.kernel
def long_search(values: ws.Tensor, out: ws.Tensor):
    # warp 0 walks a long chain in memory (many SPIN_ITERATIONS) while warp 1 waits at the
    # barrier: the loop's state changes every iteration, so this is no livelock
    warp = ws.arch.make_warp_uniform(ws.arch.warp_idx())
    if warp == 0:
        i = ws.Int32(0)
        steps = ws.Int32(0)
        while values[i] >= 0:
            i = values[i]
            steps += 1
        out[ws.arch.lane_idx()] = steps
    ws.arch.sync_threads()


def test_a_long_memory_reading_loop_is_not_a_livelock():
    n = SPIN_ROUNDS * SPIN_ITERATIONS * 2
    values = np.arange(1, n + 1, dtype=np.int32)
    values[-1] = -1
    out = np.zeros(32, np.int32)
    long_search[1, 64](values, out)
    assert (out == n - 1).all()


def test_only_while_loops_that_read_memory_become_preemptible():
    def module(read_memory):
        k = KernelBuilder("loop", [gptr(i32), gptr(i32)])
        src, out = k.args
        b = k.b
        t = b.sreg("tid.x", i32)

        def before(i):
            bound = k.load_at(src, t) if read_memory else k.const(i32, 100)
            return b.cmp("lt", i, bound), [i]

        res, = k.while_([k.const(i32, 0)], before,
                        lambda i: [b.binary("add", i, k.const(i32, 1))])
        k.store_at(out, t, res)
        return k.finish()

    for read_memory in (False, True):
        m = module(read_memory)
        assert sim.compile_module(m).function("loop").blocking is read_memory
        src, out = np.full(32, 100, np.int32), np.zeros(32, np.int32)
        launch(m, (1,), (32,), [src, out])
        assert (out == 100).all()


@ws.kernel
def counted_spin(flag: ws.Tensor, out: ws.Tensor, writer: ws.Static[bool], store: ws.Static[bool]):
    # warp 0 polls with a plain load and counts its tries, a value the condition never reads
    warp = ws.arch.make_warp_uniform(ws.arch.warp_idx())
    if warp == 0:
        tries = ws.Int32(0)
        while flag[0] == 0:                     # @counted_spin
            tries += 1
            if ws.static(store):
                out[1] = tries                  # a write: the condition's slice is not enough
        out[0] = tries
    elif ws.static(writer):
        ws.atomic_exch(flag.ptr, 1)


def test_a_spin_with_a_counter_the_condition_ignores_is_reported_at_once():
    # its carried counter changes every iteration, but the condition depends only on memory
    # no running warp writes (sim/ops_control.condition_slice): idle, not unbounded
    with pytest.raises(LivelockError) as ei:
        counted_spin[1, 64](np.zeros(1, np.int32), np.zeros(2, np.int32), False, False)
    text = str(ei.value)
    assert text.startswith("livelock in block (0,0,0): every live warp spins"), text
    assert f"warp 0: spinning in the while loop at {at('counted_spin')}" in text


def test_a_counted_spin_ends_when_another_warp_sets_the_flag():
    out = np.zeros(2, np.int32)
    counted_spin[1, 64](np.zeros(1, np.int32), out, True, False)
    assert out[0] > 0


def test_a_counted_spin_that_writes_memory_compares_its_whole_state(monkeypatch):
    monkeypatch.setenv("WARPSTAGE_SIM_MAX_LOOP", "8192")
    with pytest.raises(LivelockError, match=r"unbounded loop in warp 0 .* ran 8192 iterations"):
        counted_spin[1, 64](np.zeros(1, np.int32), np.zeros(2, np.int32), False, True)
