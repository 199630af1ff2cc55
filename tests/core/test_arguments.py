"""A kernel called with arguments that do not fit its parameters, or without a launch grid
(core/arguments.py, Kernel.__call__; a @ws.jit function's call in a kernel): each error names the kernel with its signature, says what is
wrong, the expected and the given arguments, the caller's line, and the call to write."""
import numpy as np
import pytest

import source_lines
import warpstage as ws

pytestmark = pytest.mark.usefixtures("sim_target")


@ws.kernel
def copy(x: ws.Tensor[ws.Float32, 1], y: ws.Tensor[ws.Float32, 1], scale=1.0):
    y[0] = x[0] * scale


X = np.zeros(4, np.float32)
SIG = "copy(x: ws.Tensor[Float32, 1], y: ws.Tensor[Float32, 1], scale=1.0)"


def line_of(marker):
    return source_lines.line_of(__file__, marker)


def message(exc, marker, call) -> str:
    with pytest.raises(exc) as ei:
        call()
    msg = str(ei.value)
    assert f'File "{__file__}", line {line_of(marker)}\n' in msg, msg
    return msg


@pytest.mark.parametrize("marker, call, problem, given", [
    ("marker: missing", lambda: copy[1, 32](X),  # marker: missing
     "was called with no value for 'y'", "got 1 (x)"),
    ("marker: extra", lambda: copy[1, 32](X, X, 2.0, X),  # marker: extra
     "was called with 1 positional argument(s) too many", "got 4 (x, y, scale, extra #4)"),
    ("marker: unknown", lambda: copy[1, 32](X, X, scal=2.0),  # marker: unknown
     "was called with an unexpected keyword argument 'scal' (did you mean 'scale'?)",
     "got 3 (x, y, scal=)"),
    ("marker: twice", lambda: copy[1, 32](X, X, y=X),  # marker: twice
     "was called with two values for 'y' (positional and keyword)", "got 3 (x, y, y=)"),
])
def test_arguments_that_do_not_bind(marker, call, problem, given):
    msg = message(ws.ArgumentError, marker, call)
    assert msg.startswith(f"kernel {SIG} {problem}.\n"), msg
    assert f"Expected: 3 argument(s) (x, y, scale); {given}." in msg
    assert msg.splitlines()[-1] == ("Fix: copy[grid, block](x, y, scale), one value per "
                                    "parameter, by position or by name.")


def test_a_default_is_not_missing_and_the_call_binds():
    out = np.zeros(4, np.float32)
    copy[1, 32](np.full(4, 3.0, np.float32), out)
    assert out[0] == 3.0


@pytest.mark.parametrize("marker, call, lacks", [
    ("marker: no grid", lambda: copy(X, X),  # marker: no grid
     "grid and block"),
    ("marker: no block", lambda: copy(X, X, grid=1),  # marker: no block
     "block"),
])
def test_a_call_without_a_launch_configuration(marker, call, lacks):
    msg = message(ws.LaunchError, marker, call)
    assert msg.startswith(f"kernel copy was called without a launch {lacks}.\nExpected: a grid"), msg
    assert msg.splitlines()[-1].startswith("Fix: copy[grid, block](...), e.g. copy[n_ctas, 128]")


def test_a_launch_configuration_of_one_value():
    msg = message(ws.LaunchError, "marker: one value", lambda: copy[1](X, X))  # marker: one value
    assert "got kern[1]." in msg and msg.splitlines()[-1].startswith("Fix: copy[grid, block](...)")
