"""Mbarrier.try_wait's suspend-time hint (the op mbarrier.try_wait_parity_hint): traced, run in
the simulator and on the GPU (``target``), lowered to PTX's 4-operand try_wait, and its operand checked."""
import re

import numpy as np
import pytest

import warpstage as ws

pytestmark = pytest.mark.usefixtures("sim_target")


@ws.kernel
def hinted_poll(out: ws.Tensor, hint: ws.Int32):
    bars = ws.smem.allocate(ws.smem.MbarrierArray[1])
    t = ws.arch.thread_idx()[0]
    if t == 0:
        bars[0].init(1)
        ws.arch.fence_mbarrier_init()
    ws.arch.sync_threads()
    before = bars[0].try_wait(0, suspend_time_ns=hint)     # phase 0 pending: False
    ws.arch.sync_threads()
    if t == 0:
        bars[0].arrive()
    ws.arch.sync_threads()
    after = bars[0].try_wait(0, suspend_time_ns=1000)      # phase 0 complete: True
    out[t] = ws.Int32(before) * 10 + ws.Int32(after)


@pytest.mark.parametrize("hint", [1, 500, 100000])
def test_the_hinted_try_wait_polls_like_try_wait(target, hint):
    out = target.array(np.full(32, -1, np.int32))
    hinted_poll[1, 32](out, hint)
    assert target.numpy(out).tolist() == [1] * 32


def test_the_hint_is_the_fourth_operand_of_ptx_try_wait(ptxas_path):
    ck = ws.compile(hinted_poll, ws.Tensor[ws.Int32, 1], ws.Int32, block=(32, 1, 1))
    assert ck.ir.count("mbarrier.try_wait_parity_hint") == 2
    waits = re.findall(r"mbarrier\.try_wait\.parity\.shared::cta\.b64 [^;]*;", ck.ptx)
    assert len(waits) == 2 and all(w.count(",") == 3 for w in waits), waits
    assert ck.cubin[:4] == b"\x7fELF"


@ws.kernel
def bad_hint(out: ws.Tensor):
    bars = ws.smem.allocate(ws.smem.MbarrierArray[1])
    out[0] = ws.Int32(bars[0].try_wait(0, suspend_time_ns=0))


def test_a_static_hint_outside_the_range_names_the_operand():
    with pytest.raises(ws.OperandError, match=r"suspend_time_ns.*nanoseconds"):
        bad_hint[1, 32](np.zeros(1, np.int32))
