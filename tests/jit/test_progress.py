"""The progress line of long compiles (warpstage/jit/progress.py): shown on a terminal once a compile
has run for DELAY seconds, naming kernel and stage, erased at the end; silent otherwise."""
import io
import time

import pytest

from warpstage.jit import progress


class _Terminal(io.StringIO):
    def __init__(self, tty=True):
        super().__init__()
        self.tty = tty

    def isatty(self):
        return self.tty


@pytest.fixture
def fast_line(monkeypatch):
    monkeypatch.setattr(progress, "DELAY", 0.06)
    monkeypatch.setattr(progress, "_TICK", 0.02)
    monkeypatch.setattr(progress, "_GAP", 0.1)
    monkeypatch.setattr(progress, "_forced", None)
    monkeypatch.delenv("WARPSTAGE_PROGRESS", raising=False)


def _compile(monkeypatch, stream, stages=(("trace", 0.12), ("ptxas", 0.12))):
    monkeypatch.setattr("sys.stderr", stream)
    for name, seconds in stages:
        with progress.stage("my_kernel", name):
            time.sleep(seconds)
    time.sleep(progress._GAP + 3 * progress._TICK)         # the line is erased after the gap
    return stream.getvalue()


def test_a_long_compile_shows_kernel_and_stage_then_erases_the_line(fast_line, monkeypatch):
    out = _compile(monkeypatch, _Terminal())
    assert "[warpstage] compiling my_kernel: trace (" in out
    assert "[warpstage] compiling my_kernel: ptxas (" in out    # one compile across stages
    assert out.endswith("\r\x1b[K")


def test_a_short_compile_shows_nothing(fast_line, monkeypatch):
    assert _compile(monkeypatch, _Terminal(), (("trace", 0.005),)) == ""


@pytest.mark.parametrize("how", ["not a tty", "env", "set_enabled"])
def test_silent_when_asked_or_not_a_terminal(fast_line, monkeypatch, how):
    stream = _Terminal(tty=how != "not a tty")
    if how == "env":
        monkeypatch.setenv("WARPSTAGE_PROGRESS", "0")
    if how == "set_enabled":
        progress.set_enabled(False)
    try:
        assert _compile(monkeypatch, stream) == ""
    finally:
        progress.set_enabled(None)


def test_env_forces_the_line_on_any_stream(fast_line, monkeypatch):
    monkeypatch.setenv("WARPSTAGE_PROGRESS", "1")
    assert "compiling my_kernel" in _compile(monkeypatch, _Terminal(tty=False))
