"""The 8-bit floats in the simulator (sim/fp8.py, sim/dtypes.py, the cast and bitcast rules):
conversions in a kernel from f32, f16, bf16, f64 and ints to e4m3/e5m2 and back are bit-exact with
``ir.fp8`` (cvt.rn.satfinite), loads and stores keep the 8 bits, arithmetic computes in Float32,
and a kernel parameter of an fp8 type rounds like the cast."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import warpstage as ws
from warpstage.ir.fp8 import FORMATS
from warpstage.sim.fp8 import fp8_bits, fp8_values, round_fp8

ml_dtypes = pytest.importorskip("ml_dtypes")
pytestmark = [pytest.mark.usefixtures("sim_target"),
              pytest.mark.filterwarnings("ignore::warpstage.RecompileWarning")]
NP = {"e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2}
WS = {"e4m3": ws.Float8E4M3FN, "e5m2": ws.Float8E5M2}
SPECIAL = np.array([0.0, -0.0, 1.0, -1.5, 0.1, 448.0, 460.0, 464.0, 500.0, 57344.0, 61440.0,
                    1e6, -1e30, np.inf, -np.inf, np.nan, 2.0 ** -9, 2.0 ** -10, 3 * 2.0 ** -11,
                    2.0 ** -16, 2.0 ** -17, 1e-30], np.float32)


@settings(max_examples=50, deadline=None)
@given(st.sampled_from(sorted(FORMATS)),
       st.lists(st.floats(width=32, allow_nan=True), min_size=1, max_size=64))
def test_vector_rounding_is_the_scalar_definition(name, xs):
    x = np.array(xs, np.float32)
    want = np.array([FORMATS[name].encode(float(v)) for v in x], np.uint8)
    np.testing.assert_array_equal(fp8_bits(name, round_fp8(name, x)), want)
    np.testing.assert_array_equal(fp8_values(name, want),
                                  np.array([FORMATS[name].decode(b) for b in want], np.float32))


@ws.kernel
def round_trip(x: ws.Tensor, q: ws.Tensor, y: ws.Tensor, n: ws.Int32):
    i = ws.arch.thread_idx()[0]
    if i < n:
        q[i] = x[i]                          # the store converts (cvt.rn.satfinite)
        y[i] = ws.Float32(q[i]) * 1.0        # arithmetic on the loaded value: Float32


@pytest.mark.parametrize("name", sorted(FORMATS))
@pytest.mark.parametrize("src", [np.float32, np.float16, np.float64, "bfloat16", np.int32])
def test_kernel_conversions_are_bit_exact(name, src):
    vals = SPECIAL if src is not np.int32 else np.array([0, 1, -3, 17, 300, 999, -70000], float)
    with np.errstate(all="ignore"):
        x = vals.astype(ml_dtypes.bfloat16 if src == "bfloat16" else src)
    if src is np.int32:
        x = vals.astype(np.int32)
    q = np.zeros(len(x), NP[name])
    y = np.zeros(len(x), np.float32)
    round_trip[(1, 1, 1), 32](x, q, y, len(x))
    # the backend goes through f32 (f64 rounds there first; ints and f16/bf16 are exact in f32)
    want = np.array([FORMATS[name].encode(float(v)) for v in x.astype(np.float32)], np.uint8)
    np.testing.assert_array_equal(q.view(np.uint8), want)
    np.testing.assert_array_equal(y, fp8_values(name, want))


@ws.kernel
def scalar_param(v: ws.Float8E4M3FN, out: ws.Tensor):
    if ws.arch.thread_idx()[0] == 0:
        out[0] = v
        out[1] = ws.Float8E5M2(v) + 0.25      # e4m3 -> e5m2 cast, then f32 arithmetic


def test_fp8_parameter_and_cross_cast():
    out = np.zeros(2, np.float32)
    scalar_param[(1, 1, 1), 32](ws.Float8E4M3FN(1000.0), out)   # saturates to 448
    assert out[0] == 448.0 and out[1] == 448.0 + 0.25


@ws.kernel
def fp8_bits_kernel(x: ws.Tensor, bits: ws.Tensor, back: ws.Tensor):
    i = ws.arch.thread_idx()[0]
    bits[i] = _bitcast(x[i])
    back[i] = x[i]


def _bitcast(v):
    from warpstage.core.trace import builder
    return ws.Uint8._wrap(builder().bitcast(v.value, ws.Uint8.ir_type))


def test_bitcast_keeps_the_bits():
    x = (np.arange(32, dtype=np.uint8) * 8 + 3).astype(np.uint8).view(ml_dtypes.float8_e5m2)
    bits = np.zeros(32, np.uint8)
    back = np.zeros(32, ml_dtypes.float8_e5m2)
    fp8_bits_kernel[(1, 1, 1), 32](x, bits, back)
    keep = ~np.isnan(x.astype(np.float32))       # NaN patterns are canonicalized by the store
    np.testing.assert_array_equal(bits[keep], x.view(np.uint8)[keep])
    np.testing.assert_array_equal(back.view(np.uint8)[keep], x.view(np.uint8)[keep])


@ws.kernel
def takes_e4m3(x: ws.Tensor[ws.Float8E4M3FN, 1]):
    pass


def test_wrong_tensor_dtype_names_the_fp8_conversion():
    with pytest.raises(ws.ArgumentError) as e:
        takes_e4m3[(1, 1, 1), 32](np.zeros(4, np.float32))
    assert "x.astype(ml_dtypes.float8_e4m3fn)" in str(e.value)
    assert "x.to(torch.float8_e4m3fn)" in str(e.value)
