"""IR types -> llvmlite types, and IR literals -> LLVM constants.

Mapping (LLVM's NVPTX data layout; PTX ISA "Types" and "State Spaces"):

  i1                      i1 in registers, i8 (0 or 1) in memory and in structs passed to printf
  i8/u8 ... i64/u64       iN (signedness lives in the op, not the type, as in LLVM)
  f16 / bf16 / f32 / f64  half / bfloat / float / double
  e4m3 / e5m2             i8: LLVM has no 8-bit float type; the bits are the value (ir/fp8.py),
                          converted by inline-PTX ``cvt`` (lower_arith.convert)
  !ptr<T, space>          ptr addrspace(N): generic 0, global 1, shared 3, const 4, local 5
  !tensormap              ptr (generic): the descriptor's address; a kernel parameter of this type
                          is ``ptr byval([128 x i8]) align 64 "nvvm.grid_constant"`` (see lower.py)

bf16 is LLVM's native ``bfloat`` type. llvmlite 0.50 has no class for it, so ``BFloatType`` adds
one (its constants print as ``0xRXXXX``, LLVM's bfloat hex form). LLVM 22's NVPTX backend selects
bf16 add/mul/fma/neg/abs/compare natively on sm_90 and converts with ``cvt.*.bf16``.
"""
from __future__ import annotations

import math
import struct

from llvmlite import ir
from llvmlite.ir import types as _lltypes

from ..ir.fp8 import FORMATS as _FP8
from ..ir.types import PointerType, ScalarType, TensorMapType

__all__ = ["BFloatType", "ADDRSPACE", "llvm_type", "memory_type", "constant", "aggregate_type",
           "NAMED_AGGREGATE_FIELDS", "I1", "I8", "I32", "I64", "F32", "F64"]


class BFloatType(_lltypes._BaseFloatType):
    """LLVM's ``bfloat`` (1 sign, 8 exponent, 7 mantissa bits), missing from llvmlite.ir."""

    null = "0xR0000"
    intrinsic_name = "bf16"

    def __str__(self):
        return "bfloat"

    def format_constant(self, value):
        return f"0xR{_bf16_bits(value):04X}"


BFloatType._create_instance()

ADDRSPACE = {"generic": 0, "global": 1, "shared": 3, "const": 4, "local": 5}
"""IR address space name -> LLVM NVPTX address space number."""

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
F32 = ir.FloatType()
F64 = ir.DoubleType()
_FLOATS = {"f16": ir.HalfType(), "bf16": BFloatType(), "f32": F32, "f64": F64}


def llvm_type(t) -> ir.Type:
    """The register (SSA) type of IR type ``t``."""
    if isinstance(t, ScalarType):
        if t.name in _FP8:
            return I8
        if t.is_float:
            return _FLOATS[t.name]
        return ir.IntType(t.bits)
    if isinstance(t, PointerType):
        return ir.PointerType(addrspace=ADDRSPACE[t.space])
    if isinstance(t, TensorMapType):
        return ir.PointerType()
    raise TypeError(f"no LLVM type for IR type {t}")


def memory_type(t: ScalarType) -> ir.Type:
    """The in-memory type of a scalar: as ``llvm_type`` except i1, which is a byte.

    A byte keeps bool arrays compatible with numpy/torch ``bool`` (1 byte, 0 or 1) and avoids
    LLVM's undefined behaviour when an ``i1`` load meets a byte other than 0 or 1.
    """
    return I8 if t.is_bool else llvm_type(t)


def constant(t: ScalarType, value) -> ir.Constant:
    """LLVM constant of IR scalar type ``t`` holding Python ``value``.

    Integers wrap modulo 2**bits (so u32 4294967295 and i32 -1 are the same bit pattern); floats
    round to nearest even, overflowing to +-inf (never an exception, unlike struct.pack); the 8-bit
    floats round once from the Python float as ``cvt.rn.satfinite`` does (``ir.fp8``).
    """
    lt = llvm_type(t)
    if t.name in _FP8:
        bits = _FP8[t.name].encode(value)
        return ir.Constant(lt, bits - 256 if bits >= 128 else bits)
    if t.is_bool:
        return ir.Constant(lt, bool(value))
    if t.is_int:
        v = int(value) & ((1 << t.bits) - 1)
        if v >= 1 << (t.bits - 1):
            v -= 1 << t.bits
        return ir.Constant(lt, v)
    v = float(value)
    if t.name in ("f16", "f32"):
        v = _round_float(v, "e" if t.name == "f16" else "f")
    return ir.Constant(lt, v)


def _round_float(v: float, fmt: str) -> float:
    """``v`` rounded to the format's precision; values that round past its max become inf."""
    try:
        return struct.unpack(fmt, struct.pack(fmt, v))[0]
    except OverflowError:
        return math.copysign(math.inf, v)


def _bf16_bits(value) -> int:
    """Bits of ``value`` as bf16: f32 rounded to nearest even on the low 16 bits; NaN stays NaN."""
    v = float(value)
    if math.isnan(v):
        return 0x7FC0
    bits = struct.unpack("<I", struct.pack("<f", _round_float(v, "f")))[0]
    bits += 0x7FFF + ((bits >> 16) & 1)
    return (bits >> 16) & 0xFFFF


NAMED_AGGREGATE_FIELDS = 8
"""From this many fields an aggregate (``aggregate_type``) is a named struct type."""


def aggregate_type(module: ir.Module, elements) -> ir.Type:
    """The struct type of ``elements`` for an inline-asm result or a device function's results:
    a literal struct below ``NAMED_AGGREGATE_FIELDS`` fields, else one identified struct type
    per distinct field list of ``module`` (``%"agg.N" = type {...}``, defined once at the top),
    so that each ``extractvalue`` / ``insertvalue`` / ``call`` names it instead of spelling out
    its up to 161 fields (the wgmma accumulators: 64 x float per instruction; the LLVM IR text
    of the D=64 FlashAttention was 1.9 MB, 63% of it the types of its ``extractvalue``s).
    The fields, and so the layout and the code, are the same. ``module`` must have a context of
    its own (``ir.Module(context=ir.Context())``): identified types are named per context.
    Not for intrinsics, whose struct results LLVM checks against literal types."""
    elements = list(elements)
    if len(elements) < NAMED_AGGREGATE_FIELDS:
        return ir.LiteralStructType(elements)
    key = tuple(map(str, elements))
    named = module.__dict__.setdefault("_ws_aggregates", {})
    t = named.get(key)
    if t is None:
        t = named[key] = module.context.get_identified_type(f"agg.{len(named)}")
        t.set_body(*elements)
    return t
