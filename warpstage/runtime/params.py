"""Kernel parameter types -> ``struct`` codes: how the Launcher packs each parameter (the ABI
table is in runtime/launcher.py's docstring)."""
from __future__ import annotations

import ctypes
import struct

from ..errors import ArgumentError
from ..ir.fp8 import FORMATS
from ..ir.types import PointerType, ScalarType

__all__ = ["float_to_bf16_bits"]

_CTYPES_CODES = {"P": "Q", "?": "?", "b": "b", "B": "B", "h": "h", "H": "H", "i": "i", "I": "I",
                 "q": "q", "Q": "Q", "f": "f", "d": "d"}
_SCALAR_CODES = {"i1": "?", "i8": "b", "i16": "h", "i32": "i", "i64": "q", "u8": "B", "u16": "H",
                 "u32": "I", "u64": "Q", "f16": "e", "bf16": "H", "f32": "f", "f64": "d",
                 "e4m3": "B", "e5m2": "B"}


def float_to_bf16_bits(value: float) -> int:
    """The bfloat16 bit pattern of ``value``: float32 rounded to nearest even, NaN kept quiet."""
    bits = struct.unpack("=I", struct.pack("=f", value))[0]
    if (bits & 0x7F800000) == 0x7F800000 and bits & 0x007FFFFF:
        return (bits >> 16) | 0x0040
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF


def _blob_converter(size: int):
    def convert(value):
        data = bytes(value)
        if len(data) != size:
            raise ArgumentError(f"by-value parameter of {size} bytes got {len(data)} bytes")
        return data
    return convert


def _param_layout(t):
    """(struct code, size in bytes, converter or None) for one parameter type."""
    if isinstance(t, PointerType):
        return "Q", 8, None
    if isinstance(t, ScalarType):
        code = _SCALAR_CODES[t.name]
        if t.name in FORMATS:                        # the 8 bits, rounded as cvt.rn.satfinite
            return code, 1, FORMATS[t.name].encode
        return code, struct.calcsize("=" + code), (float_to_bf16_bits if t.name == "bf16" else None)
    if isinstance(t, type) and issubclass(t, ctypes._SimpleCData):
        code = t._type_
        if code in ("l", "L"):      # C long: 8 bytes on Linux, 4 on Windows
            code = {"l": "qi", "L": "QI"}[code][ctypes.sizeof(t) != 8]
        if code not in _CTYPES_CODES:
            raise TypeError(f"unsupported kernel parameter ctypes type {t.__name__}")
        code = _CTYPES_CODES[code]
        return code, struct.calcsize("=" + code), None
    if isinstance(t, type) and issubclass(t, (ctypes.Structure, ctypes.Array)):
        size = ctypes.sizeof(t)
        return f"{size}s", size, _blob_converter(size)
    raise TypeError(f"unsupported kernel parameter type {t!r}: expected a ctypes type, an "
                    f"ir.types ScalarType or PointerType")


