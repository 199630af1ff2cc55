"""Constant folding of static scalars matches what the same conversion or operator computes at
run time (lang/scalars.py, docs/binding-time.md): float -> int saturates as cvt.rzi.sat does,
NaN/inf refuse with a warpstage error, float // and % follow Python (floor) and agree with each
other, static negative indices are refused while dynamic ones are never wrapped."""
import math

import numpy as np
import pytest

import warpstage as ws


@ws.kernel
def convert(out: ws.Tensor, dyn: ws.Float32):
    out[0] = ws.Int32(3e9)              # folded while compiling
    out[1] = ws.Int32(dyn)              # converted on the device (the simulator)
    out[2] = ws.Int32(-3e9)
    out[3] = ws.Int32(-dyn)


def test_a_static_float_to_int_saturates_as_at_run_time():
    out = np.zeros(4, np.int32)
    convert[1, 32](out, 3e9)
    assert out.tolist() == [2 ** 31 - 1, 2 ** 31 - 1, -2 ** 31, -2 ** 31]


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
def test_a_static_nan_or_inf_to_int_is_a_warpstage_error(value):
    @ws.kernel
    def k(out: ws.Tensor):
        out[0] = ws.Int32(value)

    with pytest.raises(ws.WarpstageError, match=r"(?s)static float .* to Int32.*Fix"):
        k[1, 32](np.zeros(1, np.int32))


@ws.kernel
def floor_ops(out: ws.Tensor, a: ws.Float32, b: ws.Float32):
    out[0] = 1.0 // 0.1                 # folded
    out[1] = 1.0 % 0.1
    out[2] = a // b                     # on the device
    out[3] = a % b


def test_float_floordiv_and_mod_follow_python_folded_and_at_run_time():
    out = np.zeros(4, np.float32)
    floor_ops[1, 32](out, 1.0, 0.1)
    assert out[0] == 1.0 // 0.1 == 9.0
    assert math.isclose(out[1], 1.0 % 0.1, rel_tol=1e-6)
    a, b = np.float32(1.0), np.float32(0.1)          # the device's operands are f32
    assert out[2] == np.floor_divide(a, b) and math.isclose(out[3], np.mod(a, b), rel_tol=1e-5)
    assert math.isclose(out[0] * 0.1 + out[1], 1.0, rel_tol=1e-6)    # // and % agree


def test_a_static_negative_index_is_refused_and_a_dynamic_one_is_not_wrapped():
    @ws.kernel
    def last(x: ws.Tensor, y: ws.Tensor):
        y[0] = x[-1]

    @ws.kernel
    def at(x: ws.Tensor, y: ws.Tensor, i: ws.Int32):
        y[0] = x[i]

    x, y = np.arange(4, dtype=np.float32), np.zeros(1, np.float32)
    with pytest.raises(ws.OperandError, match=r"(?s)static negative -1.*Fix"):
        last[1, 32](x, y)
    with pytest.raises(ws.OutOfBoundsError, match="4 bytes before the start of buffer"):
        at[1, 32](x, y, -1)


@pytest.mark.parametrize("fn, fix", [(np.exp, "ws.math.exp(...)"), (np.sqrt, "ws.math.sqrt(...)")])
def test_a_numpy_function_of_a_dynamic_value_says_what_expected_and_the_fix(fn, fix):
    @ws.kernel
    def k(out: ws.Tensor, v: ws.Float32):
        w = v * 2.0
        out[0] = fn(w)

    with pytest.raises(ws.BindingTimeError) as ei:
        k[1, 32](np.zeros(1, np.float32), 1.0)
    msg = str(ei.value)
    lines = msg.splitlines()
    # the first line is whole: the function, the value's type, and where it became dynamic
    assert lines[0].startswith(f"np.{fn.__name__}() was given a dynamic Float32 (a value known "
                               "only on the GPU at run time; it became dynamic at: parameter "
                               "'v'"), msg
    assert lines[0].endswith(")"), msg
    assert lines[1].startswith(f'  File "{__file__}", line ') and "fn(w)" in lines[2], msg
    assert "Expected: static numbers (Python or numpy) as numpy's arguments; got a dynamic " \
           "Float32." in msg
    assert lines[-1].startswith("Fix: " + fix), msg
