"""Lowering of the ``math`` ops to NVVM / LLVM intrinsics (PTX ISA "Floating Point
Instructions", "Half Precision Floating-Point Instructions").

f16 and bf16 transcendentals are computed in f32 and rounded back to nearest even (f32 has
more than 2p+2 mantissa bits for both, so sqrt rounds exactly as if done natively). abs, floor,
ceil and fma run natively in every float type (fma keeps its single rounding).

Precise semantics for f32 (PTX ISA "Floating Point Instructions"; the named
instruction's page gives its error bound; "ulp" is of the f32 result):

- exp2(x): ``ex2.approx.f32`` (not .ftz: subnormal results kept); a couple of ulp.
  ``approx=True``: ``ex2.approx.ftz.f32`` (subnormal inputs and results flushed to zero; no
  range fix-up around MUFU.EX2 in SASS).
- exp(x): ``r = ex2(y)`` with ``y = x * log2(e)``, corrected by the residual of that product:
  ``r * (1 + ln2 * (fma(x, log2e, -y) + x * log2e_lo))``. 1.0 ulp max in a model with an exact
  ex2 (plain ``ex2(x * log2e)`` reaches 64 ulp near |x| = 88), plus ex2's own error. inf, 0
  and NaN results pass through uncorrected. ``approx=True`` in the op's attrs: plain
  ``ex2(x * log2e)``.
- log2(x): ``lg2.approx.f32`` (approximate: small absolute error near 1, a few ulp elsewhere);
  log(x) = log2(x) * ln2, so log's error is absolute near x = 1.
- sqrt: ``sqrt.rn.f32`` (IEEE, correctly rounded). rsqrt: ``rsqrt.approx.f32`` (a few ulp).
- sin/cos: ``sin.approx.f32`` / ``cos.approx.f32``: absolute error around 2^-21 for moderate
  |x|, growing with |x| (the hardware's own range reduction; no extra reduction here).
- tanh: for |x| < 0.55 an odd polynomial ``x + x^3 P(x^2)`` (0.8 ulp), else
  ``copysign(1 - 2 / (2^(2|x| log2 e) + 1), x)`` with ``div.full.f32``: 1.7 ulp max in a model
  with exact ex2 and division; the approximate ex2/div add a little. ``approx=True``:
  ``tanh.approx.f32`` (relative error about 2^-11).
- floor/ceil: ``cvt.rmi`` / ``cvt.rpi``. abs: ``abs`` (ints: wraps, abs(INT_MIN) == INT_MIN;
  unsigned: identity). fma: ``fma.rn`` (one rounding). copysign(a, b): ``llvm.copysign`` ->
  PTX ``copysign`` (f32/f64; 16-bit floats by their sign bit): exact, NaNs included.

f64: sqrt (``sqrt.rn.f64``), rsqrt (``1 / sqrt`` with two roundings), abs, floor, ceil and fma.
f64 exp/exp2/log/log2/sin/cos/tanh raise UnsupportedError: PTX has no f64 approximations and
warpstage does not link libdevice (yet); cast to f32.
"""
from __future__ import annotations

import math

from llvmlite import ir

from ..ir.core import Operation
from ..ir.types import ScalarType
from .context import LoweringContext
from .llvm_types import F32

__all__ = ["RULES"]

_LOG2E = 1.4426950408889634
_LOG2E_HI = 1.44269502162933349609375           # f32(log2 e)
_LOG2E_LO = _LOG2E - _LOG2E_HI                   # the part f32 cannot hold (about 1.9e-8)
_LN2 = math.log(2.0)
# tanh(x) = x + x^3 * P(x^2) for |x| < 0.55: P least-squares fitted (relative error, f32
# coefficients), 0.77 ulp max when evaluated in f32 with fma; constant term first.
_TANH_SMALL = 0.55
_TANH_P = (-0.33333322405815125, 0.13332712650299072, -0.05386652052402496,
           0.021133221685886383, -0.0063650053925812244)


def _f(v: float) -> ir.Constant:
    return ir.Constant(F32, v)


def _exp2_f32(ctx, x, approx):
    if approx:
        return ctx.call_intrinsic("llvm.nvvm.ex2.approx.ftz.f", F32, [x])
    return ctx.call_intrinsic("llvm.exp2.f32", F32, [x])


def _exp_f32(ctx, x, approx):
    b = ctx.builder
    y = b.fmul(x, _f(_LOG2E_HI))
    r = ctx.call_intrinsic("llvm.exp2.f32", F32, [y])
    if approx:
        return r
    # e = (x * log2e exactly) - y, to first order; 2^(y + e) = r * (1 + e * ln2).
    e = ctx.call_intrinsic("llvm.fma.f32", F32, [x, _f(_LOG2E_HI), b.fneg(y)])
    e = ctx.call_intrinsic("llvm.fma.f32", F32, [x, _f(_LOG2E_LO), e])
    corrected = ctx.call_intrinsic("llvm.fma.f32", F32, [r, b.fmul(e, _f(_LN2)), r])
    # inf * tiny + inf could be NaN: keep r when it is inf (or NaN, which the compare rejects).
    finite = b.fcmp_ordered("!=", ctx.call_intrinsic("llvm.fabs.f32", F32, [r]), _f(math.inf))
    return b.select(finite, corrected, r)


def _log2_f32(ctx, x, approx):
    return ctx.call_intrinsic("llvm.nvvm.lg2.approx.f", F32, [x])


def _log_f32(ctx, x, approx):
    return ctx.builder.fmul(_log2_f32(ctx, x, approx), _f(_LN2))


def _sqrt_f32(ctx, x, approx):
    return ctx.call_intrinsic("llvm.sqrt.f32", F32, [x])


def _rsqrt_f32(ctx, x, approx):
    return ctx.call_intrinsic("llvm.nvvm.rsqrt.approx.f", F32, [x])


def _sin_f32(ctx, x, approx):
    # Without 'afn' NVPTX cannot select llvm.sin (LLVM aborts the process); 'afn' = sin.approx.
    return ctx.call_intrinsic("llvm.sin.f32", F32, [x], fastmath=("afn",))


def _cos_f32(ctx, x, approx):
    return ctx.call_intrinsic("llvm.cos.f32", F32, [x], fastmath=("afn",))


def _tanh_f32(ctx, x, approx):
    def fma(p, q, r):
        return ctx.call_intrinsic("llvm.fma.f32", F32, [p, q, r])

    if approx:
        return ctx.call_intrinsic("llvm.tanh.f32", F32, [x], fastmath=("afn",))
    b = ctx.builder
    ax = ctx.call_intrinsic("llvm.fabs.f32", F32, [x])
    e = ctx.call_intrinsic("llvm.exp2.f32", F32, [b.fmul(ax, _f(2.0 * _LOG2E))])
    # div.full.f32 (max 2 ulp, full range) instead of the much longer IEEE div.rn sequence.
    quotient = ctx.call_intrinsic("llvm.nvvm.div.full", F32, [_f(2.0), b.fadd(e, _f(1.0))])
    big = b.fsub(_f(1.0), quotient)
    big = ctx.call_intrinsic("llvm.copysign.f32", F32, [big, x])
    x2 = b.fmul(x, x)
    p = _f(_TANH_P[-1])
    for c in reversed(_TANH_P[:-1]):
        p = fma(x2, p, _f(c))
    small = fma(b.fmul(x2, x), p, x)
    return b.select(b.fcmp_ordered("<", ax, _f(_TANH_SMALL)), small, big)


_F32 = {"exp": _exp_f32, "exp2": _exp2_f32, "log": _log_f32, "log2": _log2_f32,
        "sqrt": _sqrt_f32, "rsqrt": _rsqrt_f32, "sin": _sin_f32, "cos": _cos_f32,
        "tanh": _tanh_f32}
_NATIVE = {"abs": "fabs", "floor": "floor", "ceil": "ceil"}


def _unary(ctx: LoweringContext, op: Operation) -> list:
    kind = op.name.split(".")[1]
    t: ScalarType = op.results[0].type
    (x,) = ctx.operands(op)
    b = ctx.builder
    if not t.is_float:                     # math.abs on integers (the verifier allows only abs)
        if not t.is_signed:
            return [x]
        return [ctx.call_intrinsic(f"llvm.abs.{x.type.intrinsic_name}", x.type,
                                   [x, ir.Constant(ir.IntType(1), 0)])]
    if kind in _NATIVE:
        return [ctx.call_intrinsic(f"llvm.{_NATIVE[kind]}.{x.type.intrinsic_name}", x.type, [x])]
    approx = bool(op.attrs.get("approx", False))
    if t.bits == 64:
        if kind == "sqrt":
            return [ctx.call_intrinsic("llvm.sqrt.f64", x.type, [x])]
        if kind == "rsqrt":
            root = ctx.call_intrinsic("llvm.sqrt.f64", x.type, [x])
            return [b.fdiv(ir.Constant(x.type, 1.0), root)]
        raise ctx.unsupported(
            f"math.{kind} on f64 is not supported: PTX has no f64 approximation for it and "
            "warpstage does not link libdevice; cast the operand to f32 first")
    if t.bits == 32:
        return [_F32[kind](ctx, x, approx)]
    wide = b.fpext(x, F32)
    return [b.fptrunc(_F32[kind](ctx, wide, approx), x.type)]


def _fma(ctx: LoweringContext, op: Operation) -> list:
    a, c, d = ctx.operands(op)
    return [ctx.call_intrinsic(f"llvm.fma.{a.type.intrinsic_name}", a.type, [a, c, d])]


def _copysign(ctx: LoweringContext, op: Operation) -> list:
    a, c = ctx.operands(op)
    return [ctx.call_intrinsic(f"llvm.copysign.{a.type.intrinsic_name}", a.type, [a, c])]


RULES = {f"math.{k}": _unary for k in ("exp", "exp2", "log", "log2", "sqrt", "rsqrt", "abs",
                                        "floor", "ceil", "sin", "cos", "tanh")}
RULES["math.fma"] = _fma
RULES["math.copysign"] = _copysign
