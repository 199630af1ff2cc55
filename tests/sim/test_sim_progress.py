"""The progress line of long simulator runs (sim/run.py ``_Progress``): on a terminal only."""
import importlib
import io

import numpy as np
import pytest

import warpstage as ws

sim_run = importlib.import_module("warpstage.sim.run")   # the module, not ws.sim.run()

pytestmark = pytest.mark.usefixtures("sim_target")


@ws.kernel
def _touch(x: ws.Tensor):
    if ws.arch.thread_idx()[0] == 0:
        x[ws.arch.block_idx()[0]] = 1.0


class _Terminal(io.StringIO):
    def __init__(self, tty):
        super().__init__()
        self.tty = tty

    def isatty(self):
        return self.tty


@pytest.mark.parametrize("tty", [True, False])
def test_progress_line_only_on_a_terminal(monkeypatch, tty):
    stream = _Terminal(tty)
    monkeypatch.setattr(sim_run.sys, "stderr", stream)
    monkeypatch.setattr(sim_run, "PROGRESS_AFTER", 0.0)
    monkeypatch.setattr(sim_run, "PROGRESS_EVERY", 0.0)
    x = np.zeros(256, np.float32)
    _touch[256, 32](x)
    assert x.sum() == 256
    text = stream.getvalue()
    if tty:
        assert "warpstage sim: _touch: 64/256 CTAs (25.0%" in text
        assert text.endswith("\r")           # the line is cleared at the end
    else:
        assert text == ""
