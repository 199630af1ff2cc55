"""setmaxnreg in the simulator: warpgroups whose counts need more than an SM's 65536 registers
together are a DeadlockError at the setmaxnreg that crosses the bound (on the GPU it waits
for registers forever); a split that fits runs."""
import numpy as np
import pytest

import warpstage as ws


@ws.kernel
def split(regs: ws.Static[tuple], out: ws.Tensor):
    t = ws.arch.thread_idx()[0]
    if t < 128:
        ws.arch.setmaxnreg_decrease(regs[0])
    else:
        ws.arch.setmaxnreg_increase(regs[1])              # SPLIT
    out[t] = t


@pytest.fixture(autouse=True)
def sim():
    ws.set_target("sim")
    yield
    ws.set_target(None)


@pytest.mark.parametrize("regs", [(40, 232), (24, 240), (56, 224)])
def test_a_split_that_fits_runs(regs):
    out = np.zeros(384, np.int32)
    split[1, 384](regs, out)
    assert (out == np.arange(384)).all()


def test_a_split_beyond_the_register_file_is_a_deadlock_naming_the_counts():
    out = np.zeros(384, np.int32)
    with pytest.raises(ws.DeadlockError) as ei:
        split[1, 384]((40, 256), out)
    text = str(ei.value)
    assert "setmaxnreg.inc 256" in text and "test_sim_register_pool.py" in text
    assert "128 x (40 (warpgroup 0) + 256 (warpgroup 1) + 256 (warpgroup 2)) = 70656" in text
    assert "Fix:" in text
