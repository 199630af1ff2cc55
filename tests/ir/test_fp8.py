"""ir/fp8.py, the two OCP FP8 formats: the decoded table against ml_dtypes (an independent
implementation of OCP OFP8), the format facts, and ``encode`` (cvt.rn.satfinite) against
ml_dtypes for every in-range value hypothesis draws, with saturation and NaN checked against the
format definition."""
import math
import struct

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from warpstage.ir.fp8 import E4M3, E5M2, FORMATS, is_fp8
from warpstage.ir.types import bf16, e4m3, e5m2, f32, u8

ml_dtypes = pytest.importorskip("ml_dtypes")
NP = {"e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2}


@pytest.mark.parametrize("name", FORMATS)
def test_decode_table_matches_ml_dtypes(name):
    mine = np.array(FORMATS[name].values, np.float32)
    ref = np.arange(256, dtype=np.uint8).view(NP[name]).astype(np.float32)
    np.testing.assert_array_equal(mine, ref)


def test_format_facts():
    assert (E4M3.max, E5M2.max) == (448.0, 57344.0)
    assert E4M3.decode(0x01) == 2.0 ** -9 and E5M2.decode(0x01) == 2.0 ** -16
    assert E4M3.decode(0x08) == 2.0 ** -6 and E5M2.decode(0x04) == 2.0 ** -14
    assert math.isnan(E4M3.decode(0x7F)) and math.isnan(E4M3.decode(0xFF))
    assert E4M3.decode(0x7E) == 448.0 and E4M3.decode(0x78) == 256.0    # S.1111.xxx finite
    assert E5M2.decode(0x7C) == math.inf and E5M2.decode(0xFC) == -math.inf
    assert all(math.isnan(E5M2.decode(c)) for c in (0x7D, 0x7E, 0x7F, 0xFD, 0xFE, 0xFF))
    assert is_fp8(e4m3) and is_fp8(e5m2) and not is_fp8(bf16) and not is_fp8(u8)
    assert e4m3.is_float and e4m3.nbytes == 1 and str(e5m2) == "e5m2"


@pytest.mark.parametrize("fmt, value, bits", [
    (E4M3, 460.0, 0x7E), (E4M3, 464.0, 0x7E), (E4M3, 1e30, 0x7E), (E4M3, -math.inf, 0xFE),
    (E4M3, math.nan, 0x7F), (E4M3, -0.0, 0x80), (E4M3, 2.0 ** -10, 0x00),    # tie to even: 0
    (E4M3, 3 * 2.0 ** -11, 0x01), (E4M3, 1.0625, 0x38), (E4M3, 1.1875, 0x3A),  # ties to even
    (E5M2, 61440.0, 0x7B), (E5M2, math.inf, 0x7B), (E5M2, -1e9, 0xFB), (E5M2, math.nan, 0x7F),
    (E5M2, 2.0 ** -17, 0x00), (E5M2, 1.125, 0x3C), (E5M2, 1.375, 0x3E),
], ids=lambda v: getattr(v, "name", repr(v)))
def test_encode_rounds_and_saturates(fmt, value, bits):
    assert fmt.encode(value) == bits


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(sorted(FORMATS)), st.floats(allow_nan=False, allow_infinity=False,
                                                   width=32))
def test_encode_matches_ml_dtypes_in_range(name, x):
    fmt = FORMATS[name]
    if abs(x) >= fmt.max:                         # ml_dtypes overflows to NaN / inf there
        assert fmt.encode(x) & 0x7F == fmt.max_code
        return
    ref = int(np.array([x], np.float32).astype(NP[name]).view(np.uint8)[0])
    assert fmt.encode(x) == ref, (x, hex(ref))


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(sorted(FORMATS)), st.integers(0, 255))
def test_encode_inverts_decode(name, bits):
    fmt = FORMATS[name]
    v = fmt.decode(bits)
    if math.isnan(v):
        assert fmt.encode(v) == 0x7F
    elif math.isinf(v):
        assert fmt.encode(v) == (bits & 0x80) | fmt.max_code
    else:
        assert fmt.encode(v) == bits


def test_types_parse_and_print():
    from warpstage.ir.types import parse_type, PointerType
    assert parse_type("e4m3") is e4m3 and parse_type("!ptr<e5m2, shared>") == \
        PointerType(e5m2, "shared")
    assert struct.calcsize("B") == e4m3.nbytes and f32.bits == 4 * e4m3.bits
