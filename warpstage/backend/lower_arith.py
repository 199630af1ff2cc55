"""Lowering of the ``arith`` ops (semantics in ``ir.ops``) to LLVM instructions.

Integer ops choose signed or unsigned LLVM instructions from the IR type's ``kind``; i1 counts
as unsigned. Float ops use LLVM's IEEE instructions without fast-math flags, which NVPTX selects
as round-to-nearest PTX instructions (``add.rn``, ``div.rn``; PTX ISA "Floating-Point
Instructions" and "Half Precision Floating-Point Instructions").

Precise semantics per op:

- add/sub/mul: ints wrap modulo 2**bits; floats IEEE, rounded to nearest even.
- div: ints C division (truncate toward zero); floats IEEE ``a / b`` (``div.rn``). Integer
  division by zero and INT_MIN / -1 are undefined (also for rem), as in CUDA C.
- rem: ints C remainder (sign of a); floats C ``fmod`` (see ``fmod``; 16-bit floats in f32).
- floordiv/mod (Python ``//``/``%``) are not lowered here: ``passes/legalize_arith.py``
  rewrites them into the primitives above and below before the backend sees them.
- shl/shr: the amount is read as unsigned and clamped to the width, as PTX ``shl``/``shr`` do
  (PTX ISA "Logic and Shift Instructions"): amounts >= bits give 0 (shl, logical shr) or the
  sign fill (arithmetic shr), never LLVM poison.
- min/max: ints signed/unsigned; floats IEEE-754 minNum/maxNum (a NaN operand yields the other).
- neg: ints ``0 - a``; floats flip the sign bit. not: bitwise complement (logical on i1).
- cmp: ints signed/unsigned; floats ordered (false if either is NaN) except ``ne``, which is
  unordered (true if either is NaN), so ``x != x`` detects NaN as in Python; ``one`` is the
  ordered not-equal (``fcmp one``; on ints ``ne``).
- cast: see ``convert``. bitcast: the bits reinterpreted.
- cvt_pack: ``llvm.nvvm.ff2bf16x2.rn`` / ``ff2f16x2.rn`` (hi, lo), which NVPTX selects as one
  ``cvt.rn.bf16x2.f32 d, hi, lo`` / ``cvt.rn.f16x2.f32`` (PTX ISA "cvt": a to the upper half,
  b to the lower), its ``<2 x bfloat>`` read as the i32 it occupies (no instruction).
"""
from __future__ import annotations

from llvmlite import ir

from ..ir.core import Operation
from ..ir.fp8 import is_fp8
from ..ir.types import SCALAR_TYPES, ScalarType, f32 as _F32, u32 as _U32
from .context import LoweringContext
from .llvm_types import F32, constant, llvm_type

__all__ = ["RULES", "convert", "fmod"]

_ICMP_SIGNED = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">=",
                "one": "!="}
_FCMP = {"eq": ("==", True), "ne": ("!=", False), "lt": ("<", True), "le": ("<=", True),
         "gt": (">", True), "ge": (">=", True), "one": ("!=", True)}


def convert(ctx: LoweringContext, x: ir.Value, src: ScalarType, dst: ScalarType) -> ir.Value:
    """Numeric conversion of ``x`` from ``src`` to ``dst`` (PTX ISA "Data Movement and Conversion
    Instructions": ``cvt``).

    - to i1: ``x != 0`` (a NaN is true, as Python's ``bool(nan)``).
    - from i1: 0 or 1.
    - int -> int: truncate, or sign-/zero-extend by the source's signedness.
    - int -> float: round to nearest even.
    - float -> int: truncate toward zero, saturating at the destination's range, NaN -> 0
      (LLVM ``fpto[su]i.sat``: the result of PTX ``cvt.rzi`` and never LLVM poison).
    - float -> float: round to nearest even; f16 <-> bf16 goes through f32 (exact widening).
    - to and from the 8-bit floats: see ``_convert_fp8``.
    """
    b = ctx.builder
    if src == dst:
        return x
    if is_fp8(src) or is_fp8(dst):
        return _convert_fp8(ctx, x, src, dst)
    lt = llvm_type(dst)
    if dst.is_bool:
        if src.is_float:
            return b.fcmp_unordered("!=", x, ir.Constant(x.type, 0.0))
        return b.icmp_unsigned("!=", x, ir.Constant(x.type, 0))
    if src.is_bool:
        return b.zext(x, lt) if not dst.is_float else b.uitofp(x, lt)
    if src.is_int and dst.is_int:
        if dst.bits < src.bits:
            return b.trunc(x, lt)
        if dst.bits > src.bits:
            return b.sext(x, lt) if src.is_signed else b.zext(x, lt)
        return x
    if src.is_int:
        return b.sitofp(x, lt) if src.is_signed else b.uitofp(x, lt)
    if dst.is_int:
        kind = "fptosi" if dst.is_signed else "fptoui"
        name = f"llvm.{kind}.sat.{lt.intrinsic_name}.{x.type.intrinsic_name}"
        return ctx.call_intrinsic(name, lt, [x])
    if dst.bits == src.bits:
        return b.fptrunc(b.fpext(x, ir.FloatType()), lt)
    return b.fpext(x, lt) if dst.bits > src.bits else b.fptrunc(x, lt)


def _convert_fp8(ctx: LoweringContext, x: ir.Value, src: ScalarType,
                 dst: ScalarType) -> ir.Value:
    """Conversions of the 8-bit floats (i8 bits in LLVM), always through f32 (PTX ISA 8.0
    "cvt", sm_89+; the forms NVIDIA's cuda_fp8.hpp uses, accepted by ptxas 13 for sm_90a):

    - e4m3/e5m2 -> f32: ``cvt.rn.f16x2.{e4m3x2,e5m2x2} r32, h16`` (exact: every e4m3 and e5m2
      value is an f16), the byte in the low half of h16, the low f16 of r32 widened; then f32
      -> ``dst`` as ``convert`` (so fp8 -> int truncates, saturates, NaN -> 0).
    - ``src`` -> f32 as ``convert`` (ints and bool exactly up to 2^24, f16/bf16 exactly; f64
      rounds there, so f64 -> fp8 rounds twice), then ``cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32
      h16, 0.0, x`` (the second source lands in the low byte): round to nearest even,
      saturating at +-max, NaN -> 0x7F (ir/fp8.py)."""
    b = ctx.builder
    f32, i16 = ir.FloatType(), ir.IntType(16)
    if is_fp8(src):
        kind = src.name
        pair = b.asm(ir.FunctionType(ir.IntType(32), [i16]), f"cvt.rn.f16x2.{kind}x2 $0, $1;",
                     "=r,h", [b.zext(x, i16)], side_effect=False)
        half = b.bitcast(b.trunc(pair, i16), ir.HalfType())
        wide = b.fpext(half, f32)
        return wide if dst == _F32 else convert(ctx, wide, _F32, dst)
    wide = convert(ctx, x, src, _F32)
    bits = b.asm(ir.FunctionType(i16, [f32, f32]),
                 f"cvt.rn.satfinite.{dst.name}x2.f32 $0, $1, $2;", "=h,f,f",
                 [ir.Constant(f32, 0.0), wide], side_effect=False)
    return b.trunc(bits, llvm_type(dst))


def fmod(ctx: LoweringContext, a: ir.Value, b_: ir.Value) -> ir.Value:
    """C ``fmod(a, b)``: ``a - trunc(a / b) * b``, with the sign of a.

    Computed as ``r = fma(-trunc(a / b), b, a)`` (exact residual), then corrected by ``b`` when
    ``a / b`` rounded up to the next integer (r and a then have opposite signs). Exact while
    ``|a / b| < 2**(mantissa bits)``, approximate beyond. fmod(a, +-inf) = a; fmod(inf, b),
    fmod(a, 0) and NaN inputs give NaN; a zero result has the sign of a.
    """
    b = ctx.builder
    t = a.type
    sfx = t.intrinsic_name
    zero = ir.Constant(t, 0.0)
    inf = ir.Constant(t, float("inf"))
    q = ctx.call_intrinsic(f"llvm.trunc.{sfx}", t, [b.fdiv(a, b_)])
    r = ctx.call_intrinsic(f"llvm.fma.{sfx}", t, [b.fneg(q), b_, a])
    wrong = b.or_(b.and_(b.fcmp_ordered(">", a, zero), b.fcmp_ordered("<", r, zero)),
                  b.and_(b.fcmp_ordered("<", a, zero), b.fcmp_ordered(">", r, zero)))
    r = b.select(wrong, b.fadd(r, ctx.call_intrinsic(f"llvm.copysign.{sfx}", t, [b_, a])), r)
    r = b.select(b.fcmp_ordered("==", r, zero),
                 ctx.call_intrinsic(f"llvm.copysign.{sfx}", t, [zero, a]), r)
    b_inf = b.fcmp_ordered("==", ctx.call_intrinsic(f"llvm.fabs.{sfx}", t, [b_]), inf)
    a_fin = b.fcmp_ordered("!=", ctx.call_intrinsic(f"llvm.fabs.{sfx}", t, [a]), inf)
    return b.select(b.and_(b_inf, a_fin), a, r)


def _shift(ctx, kind, t: ScalarType, a, amount):
    b = ctx.builder
    width = ir.Constant(a.type, t.bits)
    in_range = b.icmp_unsigned("<", amount, width)
    if kind == "shl":
        return b.select(in_range, b.shl(a, amount), ir.Constant(a.type, 0))
    if t.is_signed:
        return b.ashr(a, b.select(in_range, amount, ir.Constant(a.type, t.bits - 1)))
    return b.select(in_range, b.lshr(a, amount), ir.Constant(a.type, 0))


def _binary(ctx: LoweringContext, op: Operation) -> list:
    kind = op.name.split(".")[1]
    t: ScalarType = op.results[0].type
    a, c = ctx.operands(op)
    b = ctx.builder
    if t.is_float:
        sfx = a.type.intrinsic_name
        simple = {"add": b.fadd, "sub": b.fsub, "mul": b.fmul, "div": b.fdiv}
        if kind in simple:
            return [simple[kind](a, c)]
        if kind == "rem":
            if t.bits != 16:
                return [fmod(ctx, a, c)]
            return [b.fptrunc(fmod(ctx, b.fpext(a, F32), b.fpext(c, F32)), a.type)]
        if kind in ("min", "max"):
            return [ctx.call_intrinsic(f"llvm.{kind}num.{sfx}", a.type, [a, c])]
        raise ctx.unsupported(f"no float lowering for arith.{kind}")
    signed = t.is_signed
    simple = {"add": b.add, "sub": b.sub, "mul": b.mul, "and": b.and_, "or": b.or_,
              "xor": b.xor, "div": b.sdiv if signed else b.udiv,
              "rem": b.srem if signed else b.urem}
    if kind in simple:
        return [simple[kind](a, c)]
    if kind in ("shl", "shr"):
        return [_shift(ctx, kind, t, a, c)]
    if kind in ("min", "max"):
        name = f"llvm.{'s' if signed else 'u'}{kind}.{a.type.intrinsic_name}"
        return [ctx.call_intrinsic(name, a.type, [a, c])]
    raise ctx.unsupported(f"no integer lowering for arith.{kind}")


def _constant(ctx, op):
    return [constant(op.results[0].type, op.attrs["value"])]


def _neg(ctx, op):
    (a,) = ctx.operands(op)
    if op.results[0].type.is_float:
        return [ctx.builder.fneg(a)]
    return [ctx.builder.neg(a)]


def _not(ctx, op):
    (a,) = ctx.operands(op)
    return [ctx.builder.not_(a)]


def _cmp(ctx, op):
    a, c = ctx.operands(op)
    t: ScalarType = op.operands[0].type
    pred = op.attrs["pred"]
    b = ctx.builder
    if t.is_float:
        sym, ordered = _FCMP[pred]
        return [b.fcmp_ordered(sym, a, c) if ordered else b.fcmp_unordered(sym, a, c)]
    if t.is_signed:
        return [b.icmp_signed(_ICMP_SIGNED[pred], a, c)]
    return [b.icmp_unsigned(_ICMP_SIGNED[pred], a, c)]


def _select(ctx, op):
    c, a, d = ctx.operands(op)
    return [ctx.builder.select(c, a, d)]


def _cast(ctx, op):
    (x,) = ctx.operands(op)
    return [convert(ctx, x, op.operands[0].type, op.results[0].type)]


def _bitcast(ctx, op):
    (x,) = ctx.operands(op)
    to = llvm_type(op.results[0].type)
    return [x if x.type == to else ctx.builder.bitcast(x, to)]


def _cvt_pack(ctx, op):
    lo, hi = ctx.operands(op)
    to = op.attrs["to"]
    pair = ir.VectorType(llvm_type(SCALAR_TYPES[to]), 2)
    name = f"llvm.nvvm.ff2{'bf16' if to == 'bf16' else 'f16'}x2.rn"
    return [ctx.builder.bitcast(ctx.call_intrinsic(name, pair, [hi, lo]), llvm_type(_U32))]


RULES = {"arith.constant": _constant, "arith.neg": _neg, "arith.not": _not, "arith.cmp": _cmp,
         "arith.select": _select, "arith.cast": _cast, "arith.bitcast": _bitcast,
         "arith.cvt_pack": _cvt_pack}
RULES.update({f"arith.{k}": _binary for k in ("add", "sub", "mul", "div", "rem", "and", "or",
                                               "xor", "shl", "shr", "min", "max")})
