"""The positions of the calls the control-flow rewrite makes (rewrite_passes.fix_locations,
at_header): an error raised under the call made for a ``for``/``if``/``while``/``assert``
statement — a protocol method of a value in its header — names the header's line, in the
message and as the traceback's last frame, never a line of the body."""
import traceback

import numpy as np
import pytest

import source_lines
import warpstage as ws

pytestmark = pytest.mark.usefixtures("sim_target")

T = ws.Tensor[ws.Float32, 1]


def line_of(marker: str) -> int:
    return source_lines.line_of(__file__, marker)


def check_header(kern, marker: str, exc, *args):
    with pytest.raises(exc) as ei:
        kern[1, 32](np.zeros(4, np.float32), *args)
    line = line_of(marker)
    assert f"line {line}\n" in str(ei.value), str(ei.value)
    last = traceback.extract_tb(ei.value.__traceback__)[-1]
    assert (last.filename, last.lineno) == (__file__, line), last


def test_for_over_a_tensor_names_the_for_line():
    @ws.kernel
    def k(x: T):
        s = ws.Float32(0.0)
        for v in x:  # marker: for tensor
            s = s + v
            s = s * 2.0
        x[0] = s

    check_header(k, "marker: for tensor", ws.UnsupportedError)


def test_if_on_a_tensor_names_the_if_line():
    @ws.kernel
    def k(x: T):
        if x:  # marker: if tensor
            x[0] = 1.0
            x[1] = 2.0
        else:
            x[2] = 3.0

    check_header(k, "marker: if tensor", ws.UnsupportedError)


def test_while_on_len_of_a_tensor_names_the_while_line():
    @ws.kernel
    def k(x: T):
        while len(x) > 3:  # marker: while len
            x[0] = 1.0
            x[1] = 2.0

    check_header(k, "marker: while len", ws.UnsupportedError)


def test_in_on_a_tensor_names_the_if_line():
    @ws.kernel
    def k(x: T):
        if 3.0 in x:  # marker: if in
            x[0] = 1.0
            x[1] = 2.0

    check_header(k, "marker: if in", ws.UnsupportedError)


def test_index_of_a_dynamic_value_in_a_for_header_names_the_for_line():
    @ws.kernel
    def k(x: T, n: ws.Int32):
        for i in (1, 2, 3)[n:]:  # marker: for index
            x[0] = 1.0
            x[1] = 2.0

    check_header(k, "marker: for index", ws.BindingTimeError, 1)


def test_bool_of_a_dynamic_value_in_a_multiline_assert_names_its_first_line():
    @ws.kernel
    def k(x: T, n: ws.Int32):
        assert all([n > 0, n < 9]), (  # marker: assert bool
            "n out of range")
        x[0] = 1.0

    check_header(k, "marker: assert bool", ws.BindingTimeError, 1)


def test_a_for_header_over_two_lines_names_its_first_line():
    @ws.kernel
    def k(x: T):
        for v in (  # marker: two-line header
                x):
            x[0] = v

    check_header(k, "marker: two-line header", ws.UnsupportedError)
