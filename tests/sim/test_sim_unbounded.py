"""A while loop whose state changes every iteration but never ends (a spin loop with a retry
counter on a flag nobody sets, a counter that never meets its bound) is stopped after
WARPSTAGE_SIM_MAX_LOOP iterations with a LivelockError naming the loop, instead of running
forever (docs/simulator.md, "Spin loops")."""

import warnings

import numpy as np
import pytest

import source_lines
import warpstage as ws
from warpstage.options import SIM_MAX_LOOP, env_sim_max_loop

pytestmark = [pytest.mark.usefixtures("sim_target"),
              pytest.mark.filterwarnings("ignore::warpstage.RecompileWarning")]

HERE = __file__


def line_of(marker: str) -> int:
    return source_lines.line_of(__file__, marker)


@ws.kernel
def retry_forever(flag: ws.Tensor, out: ws.Tensor):
    tries = 0
    while ws.atomic_add(flag.ptr, 0) == 0:          # RETRY
        tries = tries + 1
    out[0] = tries


@ws.kernel
def count_forever(out: ws.Tensor, n: ws.Int32):
    i = n
    while i != -1:                                  # COUNT
        i = i + 2
    out[0] = i


@pytest.mark.parametrize("kernel, args, marker", [
    (retry_forever, lambda: (np.zeros(1, np.int32), np.zeros(1, np.int32)), "RETRY"),
    (count_forever, lambda: (np.zeros(1, np.int32), 0), "COUNT")], ids=["spin", "register"])
def test_an_unbounded_loop_is_stopped_and_named(kernel, args, marker, monkeypatch):
    monkeypatch.setenv("WARPSTAGE_SIM_MAX_LOOP", "8192")
    with pytest.raises(ws.LivelockError) as info:
        kernel[1, 32](*args())
    msg = str(info.value)
    at = f"{HERE}:{line_of(marker)}"
    assert f"unbounded loop in warp 0 of block (0,0,0): the while loop at {at} ran 8192 " \
           "iterations without exiting (WARPSTAGE_SIM_MAX_LOOP = 8192)" in msg, msg
    assert "Fix: bound the loop" in msg and info.value.where == at


def test_a_loop_under_the_bound_runs_to_its_end(monkeypatch):
    monkeypatch.setenv("WARPSTAGE_SIM_MAX_LOOP", "8192")
    out = np.zeros(1, np.int32)
    count_forever[1, 32](out, -8001)                # 4000 iterations
    assert out[0] == -1


def test_zero_means_no_bound_and_the_default(monkeypatch):
    monkeypatch.setenv("WARPSTAGE_SIM_MAX_LOOP", "0")
    assert env_sim_max_loop() == 0
    out = np.zeros(1, np.int32)
    count_forever[1, 32](out, -20001)               # 10000 iterations, past 8192
    assert out[0] == -1
    monkeypatch.delenv("WARPSTAGE_SIM_MAX_LOOP")
    assert env_sim_max_loop() == SIM_MAX_LOOP == 2 ** 24
    monkeypatch.setenv("WARPSTAGE_SIM_MAX_LOOP", "lots")
    with pytest.warns(UserWarning, match=r"WARPSTAGE_SIM_MAX_LOOP='lots' is not a non-negative "
                                         r"int; using 16777216 \(2\^24\)\. Fix: set it"):
        assert env_sim_max_loop() == SIM_MAX_LOOP
    with warnings.catch_warnings():
        warnings.simplefilter("error")                  # once per process and value
        assert env_sim_max_loop() == SIM_MAX_LOOP
