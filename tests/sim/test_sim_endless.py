"""Loops that can never end and read no memory are reported (LivelockError naming the loop)
instead of hanging the simulator; Ctrl-C during a launch says where each warp is."""
import signal

import numpy as np
import pytest

import source_lines
import warpstage as ws
from warpstage.sim import SimulationInterrupted

pytestmark = pytest.mark.filterwarnings("ignore::warpstage.RecompileWarning")

HERE = __file__


def line_of(marker: str) -> int:
    return source_lines.line_of(__file__, marker)


@ws.kernel
def frozen(out: ws.Tensor, n: ws.Int32):
    i = n
    while i != 7:                                   # FROZEN
        i = i * 1
    out[0] = i


@ws.kernel
def toggling(out: ws.Tensor, n: ws.Int32):
    i = n
    k = 0
    while i < 100:                                  # TOGGLING
        i = 1 - i
        k = k ^ 1
    out[0] = i + k


@ws.kernel
def counting(out: ws.Tensor, n: ws.Int32):
    """A long loop whose state changes: it ends, and is not reported."""
    tid = ws.arch.thread_idx()[0]
    i = 0
    acc = ws.Float32(0.0)
    while i < n + tid:
        acc = acc + 1.0
        i = i + 1
    out[tid] = acc


@pytest.mark.parametrize("kernel, marker", [(frozen, "FROZEN"), (toggling, "TOGGLING")])
def test_a_loop_that_repeats_its_state_is_reported(kernel, marker):
    with pytest.raises(ws.LivelockError) as ei:
        kernel[1, 32](np.zeros(1, np.int32), 3)
    msg = str(ei.value)
    assert f"endless loop in warp 0 of block (0,0,0): the while loop at {HERE}:{line_of(marker)}" \
           in msg
    assert "as 4096 iterations earlier, and its body reads no memory" in msg
    assert ei.value.where == f"{HERE}:{line_of(marker)}"


def test_long_loops_whose_state_changes_run_to_the_end():
    out = np.zeros(32, np.float32)
    counting[1, 32](out, 10000)
    np.testing.assert_array_equal(out, 10000 + np.arange(32, dtype=np.float32))


@ws.kernel
def one_warp_busy(out: ws.Tensor, n: ws.Int32):
    tid = ws.arch.thread_idx()[0]
    acc = ws.Float32(0.0)
    if tid // 32 == 1:
        i = 0
        while i < n:                                # BUSY
            acc = acc + 1.0
            i = i + 1
    ws.arch.sync_threads()                          # BARRIER
    out[tid] = acc


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="needs POSIX interval timers")
def test_ctrl_c_names_where_each_warp_is():
    def interrupt(*_):
        raise KeyboardInterrupt
    old = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 0.5)
    try:
        with pytest.raises(SimulationInterrupted) as ei:
            one_warp_busy[1, 64](np.zeros(64, np.float32), 10 ** 9)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    assert isinstance(ei.value, KeyboardInterrupt)
    msg = str(ei.value)
    assert "simulation interrupted (KeyboardInterrupt); where each warp was:" in msg
    assert f"warp 0: waiting at nvvm.barrier id=0 (all warps; 1 of 2 warps arrived: [0]) at " \
           f"{HERE}:{line_of('BARRIER')}" in msg
    assert f"warp 1: running in the while loop at {HERE}:{line_of('BUSY')}" in msg
