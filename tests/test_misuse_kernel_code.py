"""Misuse inside kernel code and around kernels, as a new user meets it (the second round of
the error audit, issue 11): each is a warpstage error naming the construct, the user's line and
the fix — the Python error it used to be had no position and no fix, or named the wrong line."""
import numpy as np
import pytest

import misuse_kit
import source_lines
import warpstage as ws

pytestmark = pytest.mark.usefixtures("sim_target")

F = ws.Tensor[ws.Float32, 1]


def line_of(marker: str) -> int:
    return source_lines.line_of(__file__, "# " + marker)    # the comment, not a mention


def out(n=4, dtype=np.float32):
    return np.zeros(n, dtype)


def raised(exc, marker, call, *words) -> str:
    return misuse_kit.raised(exc, __file__, marker, call, *words)


@ws.jit
def add2(a, b):
    return a + b


def test_a_device_function_called_with_the_wrong_arguments():
    @ws.kernel
    def k(x: F):
        x[0] = add2(x[0])  # marker: jit arity

    @ws.kernel
    def k2(x: F):
        x[0] = add2(x[0], c=1.0)  # marker: jit keyword

    raised(ws.ArgumentError, "marker: jit arity", lambda: k[1, 32](out()),
           "@ws.jit function add2(a, b) was called with no value for 'b'", "Fix: add2(a, b)")
    raised(ws.ArgumentError, "marker: jit keyword", lambda: k2[1, 32](out()),
           "an unexpected keyword argument 'c'", "got 2 (a, c=)")


def test_a_kernel_returning_a_value_names_its_return_line():
    @ws.kernel
    def k(x: F, n: ws.Int32):
        x[0] = 1.0
        return x[0] * 2.0  # marker: kernel return

    raised(ws.CompilationError, "marker: kernel return", lambda: k[1, 32](out(), 1),
           "kernel k returns a value (a Float32)", "store the value into an output tensor")


def test_a_helper_returning_a_value_inside_a_kernel_is_fine():
    @ws.kernel
    def k(x: F):
        def twice(v):
            return v * 2.0
        x[0] = twice(x[1])

    o = np.arange(4, dtype=np.float32)
    k[1, 32](o)
    assert o[0] == 2.0


def test_len_or_unpacking_of_a_dynamic_scalar():
    @ws.kernel
    def k(x: F, n: ws.Int32):
        x[0] = ws.Float32(len(n))  # marker: len scalar

    @ws.kernel
    def k2(x: F):
        a, b = x[0]  # marker: unpack scalar
        x[1] = a + b

    raised(ws.UnsupportedError, "marker: len scalar", lambda: k[1, 32](out(), 3),
           "len() of a dynamic Int32, which is one scalar value")
    raised(ws.UnsupportedError, "marker: unpack scalar", lambda: k2[1, 32](out()),
           "iterating over (or unpacking) a dynamic Float32")


def test_a_string_where_a_number_is_converted():
    @ws.kernel
    def k(x: F):
        x[0] = ws.Float32("1.5")  # marker: Float32 of str

    @ws.kernel
    def k2(x: F):
        x[0] = "a"  # marker: store str

    raised(ws.OperandError, "marker: Float32 of str", lambda: k[1, 32](out()),
           "ws.Float32(...): expected a number or a dynamic scalar to make a Float32 of, got "
           "str '1.5'", "ws.Float32(float(s))")
    raised(ws.OperandError, "marker: store str", lambda: k2[1, 32](out()),
           "converting to Float32 (a store into a Float32 tensor", "got str 'a'")


def test_a_constant_that_does_not_fit_its_type():
    @ws.kernel
    def k(x: ws.Tensor[ws.Int32, 1]):
        x[0] = ws.Int32(2 ** 40)  # marker: constant overflow

    raised(ws.OperandError, "marker: constant overflow", lambda: k[1, 32](out(4, np.int32)),
           "the constant 1099511627776 as a Int32: expected an int in [-2147483648, 2147483647]",
           "ws.Int64")


@pytest.mark.parametrize("marker, words", [
    ("marker: two indices", "expected 1 index(es), one per dimension, got 2"),
    ("marker: float index", "tensor index 0: expected an integer, got float 0.5"),
    ("marker: slice", "slicing a global tensor: expected one integer per dimension, got the "
                      "slice 1:3"),
    ("marker: whole tensor", "the operator + on a whole tensor, on a dynamic "
                             "ws.Tensor[Float32, 1]"),
])
def test_tensor_misuse(marker, words):
    @ws.kernel
    def k(x: F, case: ws.Static[str]):
        if ws.static(case == "marker: two indices"):
            x[0, 1] = 1.0  # marker: two indices
        if ws.static(case == "marker: float index"):
            x[0.5] = 1.0  # marker: float index
        if ws.static(case == "marker: slice"):
            x[1:3] = 1.0  # marker: slice
        if ws.static(case == "marker: whole tensor"):
            x[0] = x + 1  # marker: whole tensor

    raised(ws.WarpstageError, marker, lambda: k[1, 32](out(), marker), words)


def test_device_function_called_on_the_host():
    raised(ws.CompilationError, "marker: jit on host", lambda: add2(1, 2),  # marker: jit on host
           "@ws.jit function add2 was called from host code", "kern[grid, block]")


def test_a_kernel_called_inside_a_kernel():
    @ws.kernel
    def inner(x: F):
        x[0] = 1.0

    @ws.kernel
    def k(x: F):
        inner(x)  # marker: kernel in kernel

    raised(ws.CompilationError, "marker: kernel in kernel", lambda: k[1, 32](out()),
           "kernels cannot launch kernels", "@ws.jit device function")


def test_explain_and_kernel_given_the_wrong_thing():
    def plain(x):
        return x

    raised(ws.ArgumentError, "marker: explain plain",
           lambda: ws.explain(plain, out()),  # marker: explain plain
           "expected a @ws.kernel as kern (or an op that explains itself", "got the plain function", "ws.explain(kern, x, y)")
    raised(ws.ArgumentError, "marker: kernel of int", lambda: ws.kernel(3),  # marker: kernel of int
           "@ws.kernel decorates a Python function (a `def`), got the int 3")


def test_explain_with_a_missing_argument_says_how_to_call_explain():
    @ws.kernel
    def k(x: F, n: ws.Int32):
        pass

    raised(ws.ArgumentError, "marker: explain short",
           lambda: ws.explain(k, out()),  # marker: explain short
           "no value for 'n'", "Fix: ws.explain(k, x, n), a value or a type per parameter")


def test_simulator_faults_show_the_line_and_a_fix():
    @ws.kernel
    def k(x: F, y: F):
        y[10] = x[0]  # marker: oob store

    @ws.kernel
    def k2(x: F, y: F):
        y[0] = x[0]  # marker: read-only store

    ro = out()
    ro.setflags(write=False)
    msg = raised(ws.OutOfBoundsError, "marker: oob store", lambda: k[1, 32](out(), out()),
                 "out-of-bounds global store", "if i < x.shape[0]:")
    assert "        y[10] = x[0]" in msg
    raised(ws.SimulatorError, "marker: read-only store", lambda: k2[1, 32](out(), ro),
           "store into read-only buffer", "np.array(a) copies a read-only one")
