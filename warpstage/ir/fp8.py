"""The two 8-bit float formats (OCP "8-bit Floating Point Specification (OFP8)", rev. 1.0, 2023;
PTX ISA ``.e4m3`` / ``.e5m2``; ``torch.float8_e4m3fn`` / ``torch.float8_e5m2``): their facts
and exact scalar conversions, in the standard library only (the backend folds constants with
them, the simulator vectorizes them in ``sim/fp8.py``).

    format  sign exp man bias  max finite  min normal  min subnormal  inf   NaN
    e4m3    1    4   3   7     448         2^-6        2^-9           none  S.1111.111
    e5m2    1    5   2   15    57344       2^-14       2^-16          S.11111.00  S.11111.{01,10,11}

e4m3 is OCP's E4M3 ("fn": finite, one NaN pattern per sign): the all-ones exponent holds normal
values except mantissa 111. e5m2 is IEEE-like.

``encode`` is what PTX ``cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32`` does (PTX ISA 8.0 "cvt";
NVIDIA's ``__nv_cvt_double_to_fp8`` in cuda_fp8.hpp is the same algorithm in C): round to
nearest, ties to even, on the exact value; then ``.satfinite``: a magnitude beyond the largest
finite value, infinities included, becomes +-max; NaN becomes 0x7F (sign dropped); a signed
zero keeps its sign. (Without saturation OCP would give NaN (e4m3) or inf (e5m2); PTX's f32 -> f8
cvt requires ``.satfinite``, so warpstage has only this rounding.)
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

__all__ = ["Fp8Format", "E4M3", "E5M2", "FORMATS", "is_fp8"]


@dataclass(frozen=True)
class Fp8Format:
    """One 8-bit float format: ``name`` (the IR type's name), exponent and mantissa bits, the
    exponent ``bias``, ``has_inf`` (e5m2) and the derived ``max`` (largest finite value),
    ``emin`` (exponent of the smallest normal), ``max_code`` (bits of +max), ``nan_code``
    (the NaN ``encode`` gives)."""

    name: str
    exp_bits: int
    man_bits: int
    bias: int
    has_inf: bool
    values: tuple = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "values", tuple(self._decode(c) for c in range(256)))

    @property
    def emin(self) -> int:
        return 1 - self.bias

    @property
    def max_code(self) -> int:
        return 0x7B if self.has_inf else 0x7E

    @property
    def max(self) -> float:
        return self.values[self.max_code]

    @property
    def nan_code(self) -> int:
        return 0x7F

    def _decode(self, bits: int) -> float:
        sign = -1.0 if bits & 0x80 else 1.0
        e = (bits >> self.man_bits) & ((1 << self.exp_bits) - 1)
        f = bits & ((1 << self.man_bits) - 1)
        top = (1 << self.exp_bits) - 1
        if e == top and self.has_inf:
            return sign * math.inf if f == 0 else math.nan
        if e == top and f == (1 << self.man_bits) - 1:
            return math.nan
        if e == 0:
            return sign * math.ldexp(f, self.emin - self.man_bits)
        return sign * math.ldexp((1 << self.man_bits) + f, e - self.bias - self.man_bits)

    def decode(self, bits: int) -> float:
        """The value of the 8 bits ``bits`` (0..255): exact; NaN patterns give ``math.nan``."""
        return self.values[bits & 0xFF]

    def round(self, value: float) -> float:
        """``value`` (a Python float) rounded to this format, nearest-even, saturating at +-max
        (infinities too); NaN stays NaN; zeros keep their sign."""
        if math.isnan(value):
            return math.nan
        a = abs(value)
        if a == 0.0:
            return value
        if a != math.inf:
            e = max(math.frexp(a)[1] - 1, self.emin)       # a in [2^e, 2^(e+1)) when normal
            q = e - self.man_bits                          # the quantum's exponent
            a = math.ldexp(round(math.ldexp(a, -q)), q)    # round(): ties to even, exact
        return math.copysign(min(a, self.max), value)

    def encode(self, value: float) -> int:
        """The bits (0..255) of ``value`` converted as ``cvt.rn.satfinite`` converts it (the
        module docstring): ``round``, then the pattern of that value."""
        r = self.round(float(value))
        if math.isnan(r):
            return self.nan_code
        return _code(self, abs(r)) | (0x80 if math.copysign(1.0, r) < 0 else 0)


def _code(fmt: Fp8Format, magnitude: float) -> int:
    lo, hi = 0, fmt.max_code                               # values[0..max_code] increase
    while lo < hi:
        mid = (lo + hi) // 2
        if fmt.values[mid] < magnitude:
            lo = mid + 1
        else:
            hi = mid
    return lo


E4M3 = Fp8Format("e4m3", 4, 3, 7, False)
E5M2 = Fp8Format("e5m2", 5, 2, 15, True)
FORMATS = {"e4m3": E4M3, "e5m2": E5M2}
"""IR type name -> format."""


def is_fp8(t) -> bool:
    """True for the IR scalar types e4m3 and e5m2 (storage types: no arithmetic, see
    docs/dtypes.md)."""
    return getattr(t, "name", None) in FORMATS and getattr(t, "bits", 0) == 8
