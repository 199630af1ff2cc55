"""How IR scalar types live in the simulator: numpy dtypes for registers and for memory.

A register value is a numpy vector of 32 lanes. Its dtype is the IR type's numpy twin, except
bf16: numpy has no bfloat16, so a bf16 register is float32 holding a value rounded to bf16
precision (round to nearest even) after every op, and bf16 in memory is its 16 raw bits (uint16).
The 8-bit floats (e4m3, e5m2) likewise: float32 registers holding values of the format
(``sim/fp8.py``), their 8 bits (uint8) in memory.
i1 is numpy bool in registers and one byte (0/1) in memory. Pointers are int64 addresses.
A ``!tensormap`` register is an object vector holding the launch's ``SimTensorMap`` (the
descriptor's geometry and tensor address) in every lane.
"""
from __future__ import annotations

import functools

import numpy as np

from ..core.target import target_for

from ..ir.fp8 import FORMATS as _FP8
from ..ir.types import PointerType, ScalarType, TensorMapType, Type
from .fp8 import fp8_bits, fp8_values, round_fp8

__all__ = ["LANES", "lanes", "register_dtype", "memory_dtype", "round_bf16", "f64_to_bf16",
           "pack_pair", "unpack_pair",
           "to_register", "from_memory", "to_memory", "full", "python_value"]

LANES = target_for("sm_90a").warp_size

_REGISTER = {
    "i1": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
    "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
    "f16": np.float16, "bf16": np.float32, "f32": np.float32, "f64": np.float64,
    "e4m3": np.float32, "e5m2": np.float32,
}
_MEMORY = dict(_REGISTER, i1=np.uint8, bf16=np.uint16, e4m3=np.uint8, e5m2=np.uint8)


def register_dtype(t: Type) -> np.dtype:
    """The numpy dtype of a register of IR type ``t`` (pointers: int64 byte addresses)."""
    if isinstance(t, PointerType):
        return np.dtype(np.int64)
    if isinstance(t, TensorMapType):
        return np.dtype(object)
    return np.dtype(_REGISTER[t.name])


def memory_dtype(t: ScalarType) -> np.dtype:
    """The numpy dtype of ``t`` as stored in memory (bf16: uint16 bits, i1: uint8)."""
    return np.dtype(_MEMORY[t.name])


def lanes(value, dtype, n: int = LANES) -> np.ndarray:
    """A cached read-only ``n``-lane array of ``value``: numpy ops between two arrays cost about
    a third of the same op between an array and a scalar, so hot paths use these."""
    key = (value, np.dtype(dtype), n)
    arr = _LANE_CONSTANTS.get(key)
    if arr is None:
        arr = np.full(n, value, dtype)
        arr.flags.writeable = False
        _LANE_CONSTANTS[key] = arr
    return arr


_LANE_CONSTANTS: dict = {}


@functools.lru_cache(maxsize=None)
def _bf16_constants(n: int) -> tuple:
    u = np.uint32
    return (lanes(16, u, n), lanes(1, u, n), lanes(0x7FFF, u, n), lanes(0xFFFF0000, u, n),
            lanes(0x00400000, u, n))


_BF16_32 = _bf16_constants(LANES)


def round_bf16(x: np.ndarray) -> np.ndarray:
    """float32 -> float32 rounded to bf16 precision (nearest even); NaN stays a quiet NaN."""
    n = x.shape[0]
    sixteen, one, half, high, quiet = _BF16_32 if n == LANES else _bf16_constants(n)
    bits = x.view(np.uint32)
    r = bits >> sixteen
    r &= one
    r += half
    r += bits
    r &= high
    if np.count_nonzero(x != x):
        r = np.where(x != x, (bits | quiet) & high, r)
    return r.view(np.float32)


def pack_pair(lo: np.ndarray, hi: np.ndarray, to: str) -> np.ndarray:
    """Two float32 registers rounded to nearest even to ``to`` ('bf16' or 'f16') and packed
    into one uint32 register, ``lo`` in bits 0-15 (PTX ``cvt.rn.bf16x2.f32`` /
    ``cvt.rn.f16x2.f32``, the register ``arith.cvt_pack`` gives)."""
    n = lo.shape[0]
    both = np.concatenate((lo, hi))       # one conversion of both halves
    if to == "bf16":
        # round_bf16 clears the low 16 bits, so the high half is already in place
        bits = round_bf16(both.astype(np.float32, copy=False)).view(np.uint32)
        return (bits[:n] >> lanes(16, np.uint32, n)) | bits[n:]
    bits = both.astype(np.float16).view(np.uint16).astype(np.uint32)
    return bits[:n] | (bits[n:] << lanes(16, np.uint32, n))


def unpack_pair(reg: np.ndarray, of: str) -> tuple:
    """The two 16-bit floats of ``of`` ('bf16' or 'f16') a uint32 register holds (``pack_pair``'s
    inverse), as registers of that type: (bits 0-15, bits 16-31)."""
    reg = reg.astype(np.uint32)
    halves = (reg & np.uint32(0xFFFF), reg >> np.uint32(16))
    if of == "bf16":
        return tuple((h << np.uint32(16)).view(np.float32) for h in halves)
    return tuple(h.astype(np.uint16).view(np.float16) for h in halves)


def f64_to_bf16(x: np.ndarray) -> np.ndarray:
    """float64 -> bf16 (as float32) with one rounding (f64 -> f32 -> bf16 would round twice).

    Rounds the float64 significand to bf16's 8 bits first, after which the float32 conversion
    is exact in the normal range."""
    bits = x.astype(np.float64).view(np.uint64)
    shift = np.uint64(52 - 7)
    half = np.uint64((1 << 44) - 1)
    rounded = (bits + (half + ((bits >> shift) & np.uint64(1)))) & ~np.uint64((1 << 45) - 1)
    finite = np.isfinite(x)
    out = np.where(finite, rounded, bits).view(np.float64)
    with np.errstate(all="ignore"):
        return round_bf16(out.astype(np.float32))


def to_register(t: ScalarType, x: np.ndarray) -> np.ndarray:
    """Round a float array computed in a wider type to ``t``'s precision, as a register array."""
    if t.name == "bf16":
        if x.dtype == np.float64:
            return f64_to_bf16(x)
        return round_bf16(x.astype(np.float32, copy=False))
    if t.name in _FP8:
        return round_fp8(t.name, x)
    return x.astype(_REGISTER[t.name], copy=False)


def from_memory(t: ScalarType, raw: np.ndarray) -> np.ndarray:
    """Memory dtype -> register dtype."""
    if t.name == "bf16":
        return (raw.astype(np.uint32) << lanes(16, np.uint32, raw.shape[0])).view(np.float32)
    if t.name == "i1":
        return raw.astype(np.bool_)
    if t.name in _FP8:
        return fp8_values(t.name, raw)
    return raw


def to_memory(t: ScalarType, x: np.ndarray) -> np.ndarray:
    """Register dtype -> memory dtype."""
    if t.name == "bf16":
        return (x.view(np.uint32) >> lanes(16, np.uint32, x.shape[0])).astype(np.uint16)
    if t.name == "i1":
        return x.astype(np.uint8)
    if t.name in _FP8:
        return fp8_bits(t.name, x)
    return x


def _wrap_int(t: ScalarType, value: int) -> int:
    value &= (1 << t.bits) - 1
    if t.is_signed and value >= 1 << (t.bits - 1):
        value -= 1 << t.bits
    return value


def full(t: Type, value) -> np.ndarray:
    """A 32-lane register of ``t`` holding ``value`` in every lane (ints wrap to the width)."""
    if isinstance(t, PointerType):
        return np.full(LANES, int(value), np.int64)
    if isinstance(t, TensorMapType):
        return np.full(LANES, value, object)
    if t.is_bool:
        return np.full(LANES, bool(value), np.bool_)
    if t.is_int:
        return np.full(LANES, _wrap_int(t, int(value)), _REGISTER[t.name])
    arr = np.full(LANES, float(value), np.float64)
    with np.errstate(all="ignore"):
        return to_register(t, arr)


def python_value(t: Type, x) -> object:
    """One lane's register value as a Python bool/int/float."""
    if isinstance(t, PointerType) or t.is_int:
        return int(x)
    if t.is_bool:
        return bool(x)
    return float(x)
