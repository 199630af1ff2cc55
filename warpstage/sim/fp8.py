"""The 8-bit floats in the simulator: ``ir.fp8``'s conversions on numpy arrays.

A register of e4m3 / e5m2 is float32 holding a value of the format (as bf16 registers hold
bf16 values); in memory it is its 8 bits (uint8). ``round_fp8`` is ``cvt.rn.satfinite``
(round to nearest even on the exact value, saturate at +-max, NaN kept; ``ir/fp8.py``), so the
simulator's conversions are bit-exact with the GPU's.
"""
from __future__ import annotations

import numpy as np

from ..ir.fp8 import FORMATS

__all__ = ["round_fp8", "fp8_bits", "fp8_values"]

_VALUES = {name: np.array(f.values, np.float32) for name, f in FORMATS.items()}
_FINITE = {name: np.array(f.values[:f.max_code + 1], np.float64) for name, f in FORMATS.items()}


def round_fp8(name: str, x: np.ndarray) -> np.ndarray:
    """float array -> float32 array of the values of format ``name`` ('e4m3' or 'e5m2'): each
    element rounded once (nearest even) from its exact value, +-max for larger magnitudes and
    infinities, NaN kept, zeros signed."""
    f = FORMATS[name]
    x = np.asarray(x, np.float64)
    a = np.abs(x)
    with np.errstate(all="ignore"):
        e = np.maximum(np.frexp(a)[1] - 1, f.emin) - f.man_bits     # the quantum's exponent
        r = np.ldexp(np.round(np.ldexp(a, -e)), e)                  # np.round: ties to even
        r = np.where(a == np.inf, f.max, np.minimum(r, f.max))
    return np.copysign(r, x).astype(np.float32)


def fp8_bits(name: str, values: np.ndarray) -> np.ndarray:
    """The uint8 patterns of ``values`` (already values of the format, e.g. from round_fp8);
    NaN gives the format's ``nan_code``."""
    v = np.asarray(values, np.float64)
    code = np.searchsorted(_FINITE[name], np.abs(v)).astype(np.uint8)
    code |= np.signbit(v).astype(np.uint8) << np.uint8(7)
    return np.where(v != v, np.uint8(FORMATS[name].nan_code), code).astype(np.uint8)


def fp8_values(name: str, bits: np.ndarray) -> np.ndarray:
    """uint8 patterns -> their float32 values (exact; NaN patterns give NaN)."""
    return _VALUES[name][np.asarray(bits, np.uint8)]
