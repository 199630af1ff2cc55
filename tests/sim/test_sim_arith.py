"""arith/math ops in the simulator against independent Python references (ir.ops contract)."""
import itertools
import math
import struct

import numpy as np
import pytest

from warpstage.ir import (bf16, f16, f32, f64, i1, i8, i16, i32, i64, u8, u16, u32, u64)
from warpstage.ir.ops import BINARY

from simkit import KernelBuilder, gptr, launch

HOST = {"i1": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
        "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
        "f16": np.float16, "bf16": np.uint16, "f32": np.float32, "f64": np.float64}


# -- independent references -------------------------------------------------------------------
def round_float(x: float, mant_bits: int) -> float:
    """x rounded to nearest even with ``mant_bits`` significant bits (normal range only)."""
    if x == 0 or math.isinf(x) or math.isnan(x):
        return x
    m, e = math.frexp(x)
    return math.ldexp(round(m * 2.0 ** mant_bits), e - mant_bits)


BF16_MAX = (2 - 2.0 ** -7) * 2.0 ** 127


def round_to(t, x: float) -> float:
    if t.name == "bf16":
        r = round_float(x, 8)
        return math.copysign(math.inf, r) if abs(r) > BF16_MAX else r
    with np.errstate(over="ignore"):
        return float({"f16": np.float16, "f32": np.float32, "f64": np.float64}[t.name](x))


def bf16_bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", round_float(x, 8)))[0] >> 16


def bf16_value(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", int(bits) << 16))[0]


def to_host(t, values):
    if t.name == "bf16":
        return np.array([bf16_bits(v) for v in values], np.uint16)
    return np.array(values, HOST[t.name])


def from_host(t, arr):
    if t.name == "bf16":
        return [bf16_value(v) for v in arr]
    return [v.item() for v in arr]


def wrap(t, v: int) -> int:
    v &= (1 << t.bits) - 1
    return v - (1 << t.bits) if t.is_signed and v >> (t.bits - 1) else v


def c_div(a, b):
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def int_ref(kind, t, a, b):
    amount = b & ((1 << t.bits) - 1)
    return wrap(t, {
        "add": lambda: a + b, "sub": lambda: a - b, "mul": lambda: a * b,
        "div": lambda: c_div(a, b), "rem": lambda: a - b * c_div(a, b),
        "floordiv": lambda: a // b, "mod": lambda: a % b,
        "and": lambda: a & b, "or": lambda: a | b, "xor": lambda: a ^ b,
        "shl": lambda: 0 if amount >= t.bits else a << amount,
        "shr": lambda: (a >> min(amount, t.bits)) if t.is_signed else
        (0 if amount >= t.bits else a >> amount),
        "min": lambda: min(a, b), "max": lambda: max(a, b),
    }[kind]())


def _floor(x: float) -> float:
    return x if math.isinf(x) else float(math.floor(x))


def float_ref(kind, t, a, b):
    r = {
        "add": lambda: round_to(t, a + b), "sub": lambda: round_to(t, a - b),
        "mul": lambda: round_to(t, a * b), "div": lambda: round_to(t, a / b),
        "rem": lambda: round_to(t, math.fmod(a, b)),
        "floordiv": lambda: round_to(t, a // b),           # Python's //, consistent with %
        "mod": lambda: round_to(t, a % b), "min": lambda: min(a, b), "max": lambda: max(a, b),
    }[kind]()
    return float(r)


# -- harness ----------------------------------------------------------------------------------
def run_elementwise(arg_types, result_type, build, columns):
    """out[t] = build(k, *loaded args) for each row of ``columns`` (lists of Python values)."""
    n = len(columns[0])
    k = KernelBuilder("ew", [gptr(t) for t in arg_types] + [gptr(result_type), i32])
    *ins, out, count = k.args
    t = k.global_tid()

    def body():
        vals = [k.load_at(p, t) for p in ins]
        k.store_at(out, t, build(k, *vals))

    k.if_(k.b.cmp("lt", t, count), then=body)
    m = k.finish()
    hosts = [to_host(ty, col) for ty, col in zip(arg_types, columns)]
    res = np.zeros(n, HOST[result_type.name])
    launch(m, (-(-n // 128),), (128,), hosts + [res, n])
    return from_host(result_type, res)


INT_VALUES = {
    i32: [0, 1, -1, 7, -7, 13, -13, 2**31 - 1, -2**31, 100, -100, 12345678, -98765, 31, 32, 40],
    i64: [0, 1, -1, 7, -7, 2**63 - 1, -2**63, 10**12, -10**15 + 3, 63, 64, 70, -2],
    u32: [0, 1, 2, 3, 7, 31, 32, 33, 100, 2**31, 2**32 - 1, 12345678, 4000000000],
}
FLOAT_VALUES = {
    f32: [0.5, -1.25, 3.0, -7.5, 1e-3, 123.456, -0.0, 2.0 ** -10, 1e20, -3.3e-5, 7.0],
    f16: [0.5, -1.25, 3.0, -7.5, 1e-3, 123.4, -0.0, 2.0 ** -10, 60000.0, -0.033, 7.0],
    bf16: [0.5, -1.25, 3.0, -7.5, 1e-3, 123.4, -0.0, 2.0 ** -10, 1e30, -3.3e-5, 7.0],
}


def _pairs(values):
    a, b = zip(*itertools.product(values, values))
    return list(a), list(b)


@pytest.mark.parametrize("t", list(INT_VALUES), ids=str)
@pytest.mark.parametrize("kind", BINARY)
def test_integer_binary_ops(kind, t):
    vals = [wrap(t, v) for v in INT_VALUES[t]]
    a, b = _pairs(vals)
    if kind in ("div", "rem", "floordiv", "mod"):
        keep = [i for i, (x, y) in enumerate(zip(a, b)) if y != 0 and
                not (t.is_signed and x == -2 ** (t.bits - 1) and y == -1)]
        a, b = [a[i] for i in keep], [b[i] for i in keep]
    got = run_elementwise([t, t], t, lambda k, x, y: k.b.binary(kind, x, y), [a, b])
    want = [int_ref(kind, t, x, y) for x, y in zip(a, b)]
    bad = [(x, y, g, w) for x, y, g, w in zip(a, b, got, want) if g != w]
    assert not bad, f"{kind} {t}: (a, b, got, want) {bad[:5]}"


@pytest.mark.parametrize("t", list(FLOAT_VALUES), ids=str)
@pytest.mark.parametrize("kind", [k for k in BINARY if k not in ("and", "or", "xor", "shl", "shr")])
def test_float_binary_ops(kind, t):
    vals = [round_to(t, v) for v in FLOAT_VALUES[t]]
    a, b = _pairs(vals)
    if kind in ("div", "rem", "floordiv", "mod"):
        keep = [i for i, y in enumerate(b) if y != 0]
        a, b = [a[i] for i in keep], [b[i] for i in keep]
    got = run_elementwise([t, t], t, lambda k, x, y: k.b.binary(kind, x, y), [a, b])
    want = [float_ref(kind, t, x, y) for x, y in zip(a, b)]
    bad = [(x, y, g, w) for x, y, g, w in zip(a, b, got, want)
           if not (g == w or (math.isnan(g) and math.isnan(w)))]
    assert not bad, f"{kind} {t}: (a, b, got, want) {bad[:5]}"


def test_floordiv_and_mod_on_negative_values_follow_python():
    a = [7, -7, 7, -7, 0, -1, 13, -13]
    b = [2, 2, -2, -2, 3, 5, -4, 4]
    q = run_elementwise([i32, i32], i32, lambda k, x, y: k.b.binary("floordiv", x, y), [a, b])
    r = run_elementwise([i32, i32], i32, lambda k, x, y: k.b.binary("mod", x, y), [a, b])
    d = run_elementwise([i32, i32], i32, lambda k, x, y: k.b.binary("div", x, y), [a, b])
    c = run_elementwise([i32, i32], i32, lambda k, x, y: k.b.binary("rem", x, y), [a, b])
    assert q == [x // y for x, y in zip(a, b)]
    assert r == [x % y for x, y in zip(a, b)]
    assert d == [int(x / y) for x, y in zip(a, b)]
    assert c == [int(math.fmod(x, y)) for x, y in zip(a, b)]
    fa, fb = [7.5, -7.5, 7.5, -7.5], [2.0, 2.0, -2.0, -2.0]
    fm = run_elementwise([f32, f32], f32, lambda k, x, y: k.b.binary("mod", x, y), [fa, fb])
    assert fm == [x % y for x, y in zip(fa, fb)]


def test_float_min_max_ignore_nan():
    nan = float("nan")
    a, b = [nan, 1.0, nan], [2.0, nan, nan]
    mn = run_elementwise([f32, f32], f32, lambda k, x, y: k.b.binary("min", x, y), [a, b])
    mx = run_elementwise([f32, f32], f32, lambda k, x, y: k.b.binary("max", x, y), [a, b])
    assert mn[:2] == [2.0, 1.0] and mx[:2] == [2.0, 1.0] and math.isnan(mn[2])


def test_bool_ops():
    a, b = [False, False, True, True], [False, True, False, True]
    for kind, ref in [("and", lambda x, y: x and y), ("or", lambda x, y: x or y),
                      ("xor", lambda x, y: x != y), ("add", lambda x, y: x != y),
                      ("mul", lambda x, y: x and y), ("min", lambda x, y: x and y),
                      ("max", lambda x, y: x or y)]:
        got = run_elementwise([i1, i1], i1, lambda k, x, y: k.b.binary(kind, x, y), [a, b])
        assert got == [ref(x, y) for x, y in zip(a, b)], kind
    got = run_elementwise([i1], i1, lambda k, x: k.b.unary("arith.not", x), [a])
    assert got == [not x for x in a]


@pytest.mark.parametrize("t", [i32, u32, i64, f32, f16, bf16], ids=str)
def test_compare_select_neg_not(t):
    vals = INT_VALUES.get(t) or FLOAT_VALUES[t]
    vals = [wrap(t, v) for v in vals] if t.is_int else [round_to(t, v) for v in vals]
    a, b = _pairs(vals)
    ops = {"eq": lambda x, y: x == y, "ne": lambda x, y: x != y, "lt": lambda x, y: x < y,
           "le": lambda x, y: x <= y, "gt": lambda x, y: x > y, "ge": lambda x, y: x >= y}
    for pred, ref in ops.items():
        got = run_elementwise([t, t], i1, lambda k, x, y: k.b.cmp(pred, x, y), [a, b])
        assert got == [ref(x, y) for x, y in zip(a, b)], pred
    sel = run_elementwise([t, t], t, lambda k, x, y: k.b.select(k.b.cmp("lt", x, y), y, x), [a, b])
    assert sel == [max(x, y) for x, y in zip(a, b)]
    neg = run_elementwise([t], t, lambda k, x: k.b.unary("arith.neg", x), [vals])
    assert neg == ([wrap(t, -v) for v in vals] if t.is_int else [-v for v in vals])
    if t.is_int:
        inv = run_elementwise([t], t, lambda k, x: k.b.unary("arith.not", x), [vals])
        assert inv == [wrap(t, ~v) for v in vals]


def test_nan_comparisons_ordered_except_ne():
    nan = float("nan")
    a, b = [nan, nan, 1.0], [nan, 1.0, nan]
    for pred, want in [("eq", False), ("lt", False), ("ge", False), ("ne", True)]:
        got = run_elementwise([f32, f32], i1, lambda k, x, y: k.b.cmp(pred, x, y), [a, b])
        assert got == [want] * 3, pred


def test_constants_wrap_and_round():
    k = KernelBuilder("c", [gptr(u32), gptr(i8), gptr(bf16), gptr(f16)])
    o1, o2, o3, o4 = k.args
    z = k.const(i32, 0)
    k.store_at(o1, z, k.const(u32, -1))
    k.store_at(o2, z, k.const(i8, 200))
    k.store_at(o3, z, k.const(bf16, 1.00390625))   # tie between 1 and 1 + 2**-7: rounds to 1
    k.store_at(o4, z, k.const(f16, 0.1))
    m = k.finish()
    a, b = np.zeros(1, np.uint32), np.zeros(1, np.int8)
    c, d = np.zeros(1, np.uint16), np.zeros(1, np.float16)
    launch(m, (1,), (1,), [a, b, c, d])
    assert a[0] == 2**32 - 1 and b[0] == -56 and bf16_value(c[0]) == 1.0 and d[0] == np.float16(0.1)


# -- math ---------------------------------------------------------------------------------------
MATH_REF = {"exp": math.exp, "exp2": lambda x: 2.0 ** x, "log": math.log, "log2": math.log2,
            "sqrt": math.sqrt, "rsqrt": lambda x: 1 / math.sqrt(x), "abs": abs,
            "floor": _floor, "ceil": lambda x: -_floor(-x), "sin": math.sin, "cos": math.cos,
            "tanh": math.tanh}


@pytest.mark.parametrize("t,rtol", [(f32, 2e-7), (f16, 1e-3), (bf16, 8e-3), (f64, 1e-15)], ids=str)
@pytest.mark.parametrize("name", list(MATH_REF))
def test_math_unary(name, t, rtol):
    xs = [0.25, 0.5, 1.0, 1.5, 2.0, 3.75, 7.0, 10.5]
    if name not in ("log", "log2", "sqrt", "rsqrt"):
        xs += [-0.25, -1.5, -3.75, -7.0]
    xs = [round_to(t, x) for x in xs]
    got = run_elementwise([t], t, lambda k, x: k.b.unary(f"math.{name}", x), [xs])
    for x, g in zip(xs, got):
        want = round_to(t, float(MATH_REF[name](x)))
        assert g == pytest.approx(want, rel=rtol, abs=1e-30), (name, x)


def test_math_abs_on_ints_wraps():
    vals = [0, 5, -5, 2**31 - 1, -2**31]
    assert run_elementwise([i32], i32, lambda k, x: k.b.unary("math.abs", x), [vals]) == \
        [0, 5, 5, 2**31 - 1, -2**31]


def test_fma_rounds_once():
    e = 2.0 ** -12
    a, b, c = [1 + e], [1 + e], [-(1 + 2 * e)]
    got = run_elementwise([f32, f32, f32], f32, lambda k, x, y, z: k.b.fma(x, y, z), [a, b, c])
    assert got == [2.0 ** -24]          # a*b+c with two roundings would give 0
    e = 2.0 ** -30
    got = run_elementwise([f64, f64, f64], f64, lambda k, x, y, z: k.b.fma(x, y, z),
                          [[1 + e], [1 + e], [-(1 + 2 * e)]])
    assert got == [2.0 ** -60]
    got = run_elementwise([bf16] * 3, bf16, lambda k, x, y, z: k.b.fma(x, y, z),
                          [[1.5], [-2.0], [0.25]])
    assert got == [-2.75]


# -- casts --------------------------------------------------------------------------------------
def cast(src, dst, values):
    return run_elementwise([src], dst, lambda k, x: k.b.cast(x, dst), [values])


def test_float_to_int_truncates_and_saturates():
    inf, nan = float("inf"), float("nan")
    xs = [3.7, -3.7, 0.5, -0.5, 1e10, -1e10, inf, -inf, nan, 2147483647.0, -2147483648.0]
    assert cast(f32, i32, xs) == [3, -3, 0, 0, 2**31 - 1, -2**31, 2**31 - 1, -2**31, 0,
                                  2**31 - 1, -2**31]
    assert cast(f32, u8, [3.7, -3.7, 300.0, 255.9, nan]) == [3, 0, 255, 255, 0]
    assert cast(f64, i64, [1e300, -1e300, 9.2e18, -2.5]) == \
        [2**63 - 1, -2**63, 9200000000000000000, -2]
    assert cast(f64, u64, [1e300, -1.0, 1.8e19]) == [2**64 - 1, 0, 18000000000000000000]
    assert cast(f32, i1, [0.0, -0.0, 2.0, nan]) == [False, False, True, True]


def test_int_to_int_wraps_and_extends():
    assert cast(i32, u8, [255, 256, -1, 300]) == [255, 0, 255, 44]
    assert cast(i64, i32, [2**32 + 5, -2**31 - 1]) == [5, 2**31 - 1]
    assert cast(i8, i32, [-1, 127]) == [-1, 127]
    assert cast(u8, i32, [255, 1]) == [255, 1]
    assert cast(i32, u64, [-1]) == [2**64 - 1]
    assert cast(i32, i1, [0, 5, -1]) == [False, True, True]
    assert cast(i1, i32, [False, True]) == [0, 1]
    assert cast(i1, f32, [False, True]) == [0.0, 1.0]


def test_conversions_to_bf16_round_once():
    # f64 -> bf16 directly rounds up; through f32 first it would hit a tie and round to 1.0
    x = 1 + 2.0 ** -8 + 2.0 ** -30
    assert cast(f64, bf16, [x]) == [1 + 2.0 ** -7]
    n = 2**24 + 2**16 + 1
    assert cast(i32, bf16, [n]) == [2**24 + 2**17]
    assert cast(f32, bf16, [1 + 2.0 ** -8, 1 + 3 * 2.0 ** -8, 3.14159]) == \
        [1.0, 1 + 2 * 2.0 ** -7, round_float(3.14159, 8)]
    assert cast(bf16, f32, [3.140625]) == [3.140625]
    assert cast(f32, f16, [65520.0, 1e-8, 0.1]) == [float("inf"), float(np.float16(1e-8)),
                                                    float(np.float16(0.1))]
    assert cast(f16, bf16, [0.1]) == [round_float(float(np.float16(0.1)), 8)]
    assert cast(i32, f32, [16777217]) == [16777216.0]
    assert cast(u32, f64, [2**32 - 1]) == [4294967295.0]


def test_bitcasts():
    assert run_elementwise([f32], i32, lambda k, x: k.b.bitcast(x, i32), [[1.0, -2.0]]) == \
        [0x3F800000, -0x40000000]
    assert run_elementwise([i32], f32, lambda k, x: k.b.bitcast(x, f32), [[0x40490FDB]]) == \
        [float(np.float32(3.1415927))]
    assert run_elementwise([bf16], u16, lambda k, x: k.b.bitcast(x, u16), [[1.0, -2.0]]) == \
        [0x3F80, 0xC000]
    assert run_elementwise([u16], bf16, lambda k, x: k.b.bitcast(x, bf16), [[0x4049]]) == [3.140625]
    assert run_elementwise([f16], i16, lambda k, x: k.b.bitcast(x, i16), [[1.0]]) == [0x3C00]
    assert run_elementwise([u32], i32, lambda k, x: k.b.bitcast(x, i32), [[2**32 - 1]]) == [-1]


try:
    from hypothesis import given, settings, strategies as st
except ImportError:   # hypothesis is a test extra
    given = None

if given is not None:
    @settings(max_examples=15, deadline=None)
    @given(st.lists(st.tuples(st.integers(-2**31, 2**31 - 1), st.integers(-2**31, 2**31 - 1)),
                    min_size=1, max_size=70))
    def test_integer_ops_random_i32(pairs):
        a = [x for x, _ in pairs]
        b = [y if y not in (0, -1) else 3 for _, y in pairs]
        for kind in BINARY:
            got = run_elementwise([i32, i32], i32, lambda k, x, y: k.b.binary(kind, x, y), [a, b])
            assert got == [int_ref(kind, i32, x, y) for x, y in zip(a, b)], kind


def test_copysign_and_the_ordered_not_equal():
    nan = float("nan")
    a = [1.5, -2.0, 0.0, -0.0, math.inf, nan, 3.0, -4.0]
    b = [-1.0, 3.0, -0.0, 5.0, -1.0, -1.0, nan, -nan]
    got = run_elementwise([f64, f64], f64,
                          lambda k, x, y: k.b.create("math.copysign", (x, y)).result, [a, b])
    want = [math.copysign(x, y) for x, y in zip(a, b)]
    assert [struct.pack("<d", g) for g in got if g == g] == \
        [struct.pack("<d", w) for w in want if w == w]
    assert math.isnan(got[5]) and math.copysign(1, got[5]) < 0
    one = run_elementwise([f32, f32], i1, lambda k, x, y: k.b.cmp("one", x, y), [a, b])
    une = run_elementwise([f32, f32], i1, lambda k, x, y: k.b.cmp("ne", x, y), [a, b])
    assert one == [x != y and x == x and y == y for x, y in zip(a, b)]
    assert une == [x != y for x, y in zip(a, b)] and one != une
    ints = run_elementwise([i32, i32], i1, lambda k, x, y: k.b.cmp("one", x, y),
                           [[1, 2, -3], [1, 3, 3]])
    assert ints == [False, True, True]


def test_exp2_of_every_subnormal_is_one():
    """sim/ops_arith.py's ``.ftz`` exp2 flushes only its results: that holds because 2^x of
    each of the 2^24 subnormal float32 values x (and of -0) is 1.0, as 2^0 is."""
    bits = np.arange(1, 1 << 23, dtype=np.uint32)
    for sign in (np.uint32(0), np.uint32(1 << 31)):
        y = np.exp2((bits | sign).view(np.float32))
        assert y.dtype == np.float32 and np.array_equal(y, np.ones_like(y))
    assert np.exp2(np.float32(-0.0)) == 1.0


def test_ftz_exp2_is_flush_inputs_then_results():
    """The ftz exp2 against PTX's definition (inputs and results below 2^-126 in magnitude
    flushed to +0), bit for bit, on vectors of subnormals, zeros, infinities, NaN and values
    whose 2^x is subnormal or normal."""
    from warpstage.ir.types import f32 as f32_type
    from warpstage.sim.ops_arith import _flush_subnormal
    ftz = _flush_subnormal(np.exp2, f32_type)
    tiny = np.float32(2.0 ** -126)

    def reference(x):
        x = np.where(np.abs(x) < tiny, np.float32(0), x)
        y = np.exp2(x)
        return np.where(np.abs(y) < tiny, np.float32(0), y)

    rng = np.random.default_rng(5)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -1e-40, -126.0, -126.5,
                        -149.0, -150.0, -200.0, 127.9, 128.0, 1.0, -1.0], np.float32)
    for i in range(2000):
        x = (rng.standard_normal(32) * rng.choice([1.0, 50.0, 140.0])).astype(np.float32)
        if i % 3 == 0:
            x[rng.integers(0, 32, 8)] = rng.choice(special, 8)
        if i % 5 == 0:
            x[rng.integers(0, 32, 4)] = (rng.integers(1, 1 << 23, 4, dtype=np.uint32)
                                         ).view(np.float32)
        got, want = ftz(x), reference(x)
        assert got.dtype == want.dtype and got.view(np.uint32).tolist() == \
            want.view(np.uint32).tolist(), x


@pytest.mark.parametrize("to", ["bf16", "f16"])
def test_cvt_pack_is_two_conversions_in_one_register(to):
    """``pack_pair`` (arith.cvt_pack) against each half converted on its own, over random
    bit patterns (NaN and infinity included), bf16 ties and f16 overflow / subnormals."""
    from warpstage.sim.dtypes import pack_pair, round_bf16
    rng = np.random.default_rng(7)
    bits = rng.integers(0, 2**32, (300, 64), dtype=np.uint64).astype(np.uint32)
    bits[100:200] = (bits[100:200] & 0xFFFF0000) | 0x8000       # exactly halfway for bf16
    values = bits.view(np.float32)
    values[200:] = (rng.standard_normal((100, 64)) * 2.0 ** rng.integers(-30, 20, (100, 1)))
    for row in values:
        lo, hi = row[:32], row[32:]
        with np.errstate(all="ignore"):
            got = pack_pair(lo, hi, to)
            if to == "bf16":
                want = [round_bf16(x).view(np.uint32) >> np.uint32(16) for x in (lo, hi)]
            else:
                want = [x.astype(np.float16).view(np.uint16).astype(np.uint32) for x in (lo, hi)]
        assert got.dtype == np.uint32
        assert np.array_equal(got & 0xFFFF, want[0]) and np.array_equal(got >> 16, want[1])
