"""arith.* and math.*: elementwise ops on 32-lane registers, exactly as ``ir.ops`` defines them.

Ops run on all 32 lanes whatever the mask (inactive lanes hold don't-care values and no op here
has side effects); numpy warnings are silenced for the whole run, so integer wrap-around and
division by zero give numpy's values quietly. bf16 is computed in float32 and rounded to bf16
after every op; f16 uses numpy float16 (correctly rounded for + - * /).
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np

from ..ir.core import Operation
from ..ir.types import ScalarType
from ..ir.fp8 import is_fp8
from .fp8 import fp8_bits, fp8_values, round_fp8
from .dtypes import (LANES, full, pack_pair, register_dtype, round_bf16, to_register,
                     f64_to_bf16)
from .registry import handler

__all__ = ["binary_fn", "cast_fn", "bitcast_fn", "unary_fn"]


# -- binary -----------------------------------------------------------------------------------
def _c_div(a, b):
    return np.floor_divide(a - np.fmod(a, b), b)


def _shift(t: ScalarType, left: bool):
    """PTX shl/shr: the amount is read unsigned and clamped to the width."""
    bits = t.bits
    udt = np.dtype(f"uint{bits}")
    dt = register_dtype(t)
    top = np.full(LANES, bits - 1, udt)
    zero = np.zeros(LANES, dt)

    def shift(a, b):
        amount = b.view(udt) if b.dtype != udt else b
        clamped = np.minimum(amount, top).astype(dt)
        if left:
            return np.where(amount > top, zero, np.left_shift(a, clamped))
        if t.is_signed:
            return np.right_shift(a, clamped)
        return np.where(amount > top, zero, np.right_shift(a, clamped))
    return shift


_INT_BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "rem": np.fmod,
    "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor, "min": np.minimum, "max": np.maximum,
}
_FLOAT_BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "rem": np.fmod,
    "min": np.fmin, "max": np.fmax,
}


def binary_fn(kind: str, t: ScalarType):
    """``f(a, b) -> register`` for ``arith.<kind>`` on type ``t``."""
    if t.is_bool:
        # i1 is a 1-bit unsigned integer: add/sub wrap (xor), mul is and, min/max are and/or.
        as_u8 = binary_fn(kind, ScalarType("uint", 8, "u8"))
        one = np.ones(LANES, np.uint8)
        return lambda a, b: (as_u8(a.view(np.uint8), b.view(np.uint8)) & one).view(np.bool_)
    if t.is_float:
        f = _FLOAT_BINARY[kind]
        if t.name == "bf16":
            return lambda a, b: round_bf16(f(a, b))
        return f
    if kind in ("shl", "shr"):
        return _shift(t, kind == "shl")
    if kind == "div":
        return _c_div if t.is_signed else np.floor_divide
    if kind == "rem" and not t.is_signed:
        return np.remainder
    return _INT_BINARY[kind]


# -- unary / math -----------------------------------------------------------------------------
def _rsqrt(x):
    return (1.0 / np.sqrt(x.astype(np.float64))).astype(x.dtype)


_MATH = {
    "exp": np.exp, "exp2": np.exp2, "log": np.log, "log2": np.log2, "sqrt": np.sqrt,
    "abs": np.abs, "floor": np.floor, "ceil": np.ceil, "sin": np.sin, "cos": np.cos,
    "tanh": np.tanh,
}


def unary_fn(name: str, t: ScalarType):
    """``f(x) -> register`` for arith.neg / arith.not / math.<unary> on type ``t``."""
    if name == "arith.neg":
        if t.is_bool:
            return np.copy      # -x == x in 1-bit two's complement
        return np.negative
    if name == "arith.not":
        return np.logical_not if t.is_bool else np.invert
    kind = name.split(".")[1]
    if kind == "abs" and (t.is_bool or (t.is_int and not t.is_signed)):
        return np.copy
    f = _rsqrt if kind == "rsqrt" else _MATH[kind]
    if t.name == "bf16":
        return lambda x: round_bf16(f(x))
    return f


def _fma_exact64(a, b, c):
    out = a * b + c
    for i in range(LANES):
        x, y, z = float(a[i]), float(b[i]), float(c[i])
        if np.isfinite(x) and np.isfinite(y) and np.isfinite(z) and np.isfinite(out[i]):
            out[i] = float(Fraction(x) * Fraction(y) + Fraction(z))
    return out


def fma_fn(t: ScalarType):
    if t.name == "f64":
        return _fma_exact64

    def fma(a, b, c):
        wide = a.astype(np.float64) * b.astype(np.float64) + c.astype(np.float64)
        return to_register(t, wide)
    return fma


# -- conversions ------------------------------------------------------------------------------
def _float_to_int(dst: ScalarType):
    """PTX cvt.rzi.sat: truncate toward zero, clamp to the range, NaN -> 0."""
    dt = register_dtype(dst)
    info = np.iinfo(dt)
    hi, lo = float(info.max), float(info.min)
    vmax, vmin = np.array(info.max, dt), np.array(info.min, dt)

    def convert(x):
        t = np.trunc(x.astype(np.float64))
        t = np.where(t != t, 0.0, t)
        big, small = t >= hi, t <= lo
        safe = np.where(big | small, 0.0, t).astype(dt)
        return np.where(big, vmax, np.where(small, vmin, safe))
    return convert


def cast_fn(src: ScalarType, dst: ScalarType):
    """``f(x) -> register`` for arith.cast from ``src`` to ``dst``."""
    ddt = register_dtype(dst)
    if dst.is_bool:
        return lambda x: x != 0
    if src.is_float and dst.is_int:
        return _float_to_int(dst)
    if is_fp8(dst):          # as the backend: through f32 (one rounding but from f64), cvt.rn.sat
        return lambda x: round_fp8(dst.name, x.astype(np.float32))
    if dst.name == "bf16":
        if src.name in ("f32", "bf16"):         # float32 registers: round_bf16 makes a new one
            return round_bf16
        if src.name == "f16" or src.is_bool:
            return lambda x: round_bf16(x.astype(np.float32))
        return lambda x: f64_to_bf16(x.astype(np.float64))
    return lambda x: x.astype(ddt)


def bitcast_fn(src: ScalarType, dst: ScalarType):
    """``f(x) -> register`` for arith.bitcast (same width); bf16 registers hold their 16 bits in
    the top half of a float32."""
    ddt = register_dtype(dst)
    if src.name == "bf16" and dst.name == "bf16" or src == dst:
        return np.copy
    if is_fp8(src):
        return lambda x: fp8_bits(src.name, x).view(ddt) if not is_fp8(dst) else \
            fp8_values(dst.name, fp8_bits(src.name, x))
    if is_fp8(dst):
        return lambda x: fp8_values(dst.name, x.view(np.uint8))
    if src.name == "bf16":
        return lambda x: (x.view(np.uint32) >> np.uint32(16)).astype(np.uint16).view(ddt)
    if dst.name == "bf16":
        return lambda x: (x.view(np.uint16).astype(np.uint32) << np.uint32(16)).view(np.float32)
    if src.is_bool:
        return np.copy
    return lambda x: x.view(ddt)


# -- handlers ---------------------------------------------------------------------------------
@handler("arith.constant")
def _constant(op: Operation, cx):
    r = cx.slot(op.result)
    value = full(op.result.type, op.attrs["value"])

    def constant(s, w):
        s[r] = value
    return constant


def _binary_handler(op: Operation, cx):
    a, b = cx.slots(op.operands)
    r = cx.slot(op.result)
    f = binary_fn(op.name.split(".")[1], op.result.type)

    def binary(s, w):
        s[r] = f(s[a], s[b])
    return binary


def _flush_subnormal(f, t: ScalarType):
    """``f`` (f32 ``math.exp2``) with subnormal inputs and results flushed to zero (PTX
    ``.ftz``). Only the results need the flush: 2^x of every subnormal x (and of -0) is 1.0 in
    float32, as 2^0 is (``tests/sim/test_sim_arith.py`` checks all 2^24 of them), and 2^x is
    never negative, so ``y < 2^-126`` finds the small results (NaN compares false and stays)."""
    tiny = np.full(LANES, 2.0 ** -126, np.float32)
    zero = np.zeros(LANES, np.float32)

    def ftz(x):
        y = f(x)
        if y.shape != tiny.shape:
            return np.where(y < tiny[0], zero[0], y)
        small = y < tiny
        # most vectors have no small result: count_nonzero is the cheapest test, and skipping
        # np.where for them gives the same bits without its copy
        return np.where(small, zero, y) if np.count_nonzero(small) else y
    return ftz


def _unary_handler(op: Operation, cx):
    a = cx.slot(op.operands[0])
    r = cx.slot(op.result)
    f = unary_fn(op.name, op.result.type)
    if op.name == "math.exp2" and op.attrs.get("approx") and op.result.type.name == "f32":
        f = _flush_subnormal(f, op.result.type)

    def unary(s, w):
        s[r] = f(s[a])
    return unary


for _kind in ("add", "sub", "mul", "div", "rem", "and", "or", "xor", "shl", "shr", "min",
              "max"):
    handler(f"arith.{_kind}")(_binary_handler)
handler("arith.neg", "arith.not", *(f"math.{k}" for k in list(_MATH) + ["rsqrt"]))(_unary_handler)

def _ordered_ne(a, b):
    """a != b and neither is NaN (arith.cmp ``one``; on ints, ``ne``)."""
    return np.not_equal(a, b) & (a == a) & (b == b)


_CMP = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
        "gt": np.greater, "ge": np.greater_equal, "one": _ordered_ne}


@handler("arith.cmp")
def _cmp(op: Operation, cx):
    a, b = cx.slots(op.operands)
    r = cx.slot(op.result)
    f = _CMP[op.attrs["pred"]]

    def cmp(s, w):
        s[r] = f(s[a], s[b])
    return cmp


@handler("arith.select")
def _select(op: Operation, cx):
    c, a, b = cx.slots(op.operands)
    r = cx.slot(op.result)

    def select(s, w):
        s[r] = np.where(s[c], s[a], s[b])
    return select


@handler("arith.cast", "arith.bitcast")
def _cast(op: Operation, cx):
    a = cx.slot(op.operands[0])
    r = cx.slot(op.result)
    src, dst = op.operands[0].type, op.result.type
    f = (cast_fn if op.name == "arith.cast" else bitcast_fn)(src, dst)

    def cast(s, w):
        s[r] = f(s[a])
    return cast


@handler("arith.cvt_pack")
def _cvt_pack(op: Operation, cx):
    lo, hi = cx.slots(op.operands)
    r = cx.slot(op.result)
    to = op.attrs["to"]

    def cvt_pack(s, w):
        s[r] = pack_pair(s[lo], s[hi], to)
    return cvt_pack


@handler("math.copysign")
def _copysign(op: Operation, cx):
    a, b = cx.slots(op.operands)
    r = cx.slot(op.result)

    def copysign(s, w):
        s[r] = np.copysign(s[a], s[b])
    return copysign


@handler("math.fma")
def _fma(op: Operation, cx):
    a, b, c = cx.slots(op.operands)
    r = cx.slot(op.result)
    f = fma_fn(op.result.type)

    def fma(s, w):
        s[r] = f(s[a], s[b], s[c])
    return fma
