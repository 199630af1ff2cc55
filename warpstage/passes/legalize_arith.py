"""Legalization of Python's ``//`` and ``%`` (``arith.floordiv``, ``arith.mod``) into the
primitives ``arith.div``/``rem``/``cmp``/``select``/``cast`` and ``math.floor``/``copysign``.

Integers (the backend's former lowering, op for op):

- unsigned (and i1): ``//`` is ``div``, ``%`` is ``rem``.
- signed: ``r = rem(a, b)`` (C remainder, the sign of a), ``fix = r != 0 and (r ^ b) < 0``
  (r and b of opposite signs); ``a // b = div(a, b) - fix``, ``a % b = fix ? r + b : r``:
  floor toward -inf, the remainder with the sign of b. With b an ``arith.constant`` > 0 (92% of
  the traced // and % in the test suite: tile and lane arithmetic) ``fix`` is ``r < 0``, the
  form LLVM's instcombine reduces the general one to, so the PTX is the same and the simulator
  runs 3 ops fewer. Division by zero and INT_MIN // -1 are undefined, as ``div``/``rem`` are.

Floats (CPython's ``float_floor_div`` / ``float_rem``; f16 and bf16 computed in f32 and
rounded back once; f32 and f64 in their own type):

- ``m = rem(a, b)`` (C ``fmod``, exact), ``fix = m one 0 and (m < 0) xor (b < 0)``.
- ``a % b = fix ? m + b : m``, then a zero result gets the sign of b (``copysign(0, b)``).
- ``a // b``: ``d = (a - m) / b``, ``d - 1`` under fix; ``f = floor(d)``, ``f + 1`` when
  ``d - f > 0.5``; a zero ``d`` gives ``copysign(0, a / b)``; ``b == 0`` gives ``floor(a / b)``
  (Python raises ZeroDivisionError). So ``1.0 // 0.1`` is 9.0 (not ``floor(1.0 / 0.1)`` =
  10.0) and ``a == (a // b) * b + a % b`` as in Python.

The results equal Python's bit for bit (signed zeros, infinities, NaN-ness) wherever ``rem``
is exact: always on the simulator; on the GPU ``rem`` is exact while ``|a / b| < 2**24`` (f32;
``backend/lower_arith.fmod``).
"""
from __future__ import annotations

from ..ir import Builder
from ..ir.core import Operation
from ..ir.types import ScalarType, f32
from .legalize import rule

__all__ = []


@rule("arith.floordiv", "arith.mod")
def _floordiv_mod(b: Builder, op: Operation) -> list:
    a, c = op.operands
    t: ScalarType = op.results[0].type
    mod = op.name == "arith.mod"
    if not t.is_float:
        if not t.is_signed:
            return [b.binary("rem" if mod else "div", a, c)]
        return [_signed(b, a, c, t, mod)]
    if t.bits != 16:
        return [(_float_mod if mod else _float_floordiv)(b, a, c, t)]
    wide = (_float_mod if mod else _float_floordiv)(b, b.cast(a, f32), b.cast(c, f32), f32)
    return [b.cast(wide, t)]


def _signed(b: Builder, a, c, t: ScalarType, mod: bool):
    r = b.binary("rem", a, c)
    zero = b.constant(t, 0)
    if _positive_constant(c):       # r, c of opposite signs <=> r < 0 (which implies r != 0)
        fix = b.cmp("lt", r, zero)
    else:
        fix = b.binary("and", b.cmp("ne", r, zero), b.cmp("lt", b.binary("xor", r, c), zero))
    if mod:
        return b.select(fix, b.binary("add", r, c), r)
    return b.binary("sub", b.binary("div", a, c), b.cast(fix, t))


def _positive_constant(v) -> bool:
    owner = v.owner
    return getattr(owner, "name", None) == "arith.constant" and owner.attrs["value"] > 0


def _sign_fix(b: Builder, m, c, zero):
    """m != 0 (ordered) and m, c of opposite signs: the remainder needs c added."""
    return b.binary("and", b.cmp("one", m, zero),
                    b.binary("xor", b.cmp("lt", m, zero), b.cmp("lt", c, zero)))


def _copysign(b: Builder, x, sign):
    return b.create("math.copysign", (x, sign)).result


def _float_mod(b: Builder, a, c, t: ScalarType):
    zero = b.constant(t, 0.0)
    r = b.binary("rem", a, c)
    fix = _sign_fix(b, r, c, zero)
    r = b.select(fix, b.binary("add", r, c), r)
    signed_zero = _copysign(b, zero, c)
    return b.select(b.cmp("eq", r, zero), signed_zero, r)


def _float_floordiv(b: Builder, a, c, t: ScalarType):
    zero, one, half = (b.constant(t, v) for v in (0.0, 1.0, 0.5))
    m = b.binary("rem", a, c)
    div = b.binary("div", b.binary("sub", a, m), c)
    div = b.select(_sign_fix(b, m, c, zero), b.binary("sub", div, one), div)
    fl = b.unary("math.floor", div)
    fl = b.select(b.cmp("gt", b.binary("sub", div, fl), half), b.binary("add", fl, one), fl)
    quotient = b.binary("div", a, c)
    res = b.select(b.cmp("eq", div, zero), _copysign(b, zero, quotient), fl)
    by_zero = b.unary("math.floor", quotient)
    return b.select(b.cmp("eq", c, zero), by_zero, res)
