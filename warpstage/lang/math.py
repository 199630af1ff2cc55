"""Math on dynamic floats (``ws.math.exp2`` ...). Static arguments compute in Python.

f16/bf16 arguments are computed in f32 by the backend and rounded back. Approximate PTX
instructions are used where CUDA's fast-math does (ex2.approx, lg2.approx, rsqrt.approx); see
the backend for the exact lowering of each.
"""
from __future__ import annotations

import math as _pymath

from ..core.trace import builder
from .scalars import Float32, Scalar, as_dynamic, promote_types, DTYPES

__all__ = ["exp", "exp2", "exp2_poly", "log", "log2", "sqrt", "rsqrt", "abs", "fma", "min", "max", "select",
           "floor", "ceil", "sin", "cos", "tanh"]

_builtin_abs, _builtin_min, _builtin_max = abs, min, max


def _float(x) -> Scalar:
    x = as_dynamic(x)
    return x if x.ir_type.is_float and x.ir_type.bits > 8 else Float32(x)   # fp8: in f32


def _unary(name, pyfn):
    def fn(x):
        if not isinstance(x, Scalar):
            return pyfn(x)
        x = _float(x)
        return type(x)._wrap(builder(f"ws.math.{name}").unary(f"math.{name}", x.value), x.origin)
    fn.__name__ = name
    fn.__doc__ = f"Elementwise {name}(x) of a float (ints convert to Float32)."
    return fn


exp = _unary("exp", _pymath.exp)
_exp2_precise = _unary("exp2", lambda x: 2.0 ** x)


def exp2(x, approx: bool = False):
    """Elementwise 2**x of a float (ints convert to Float32). ``approx`` (static): the fast form,
    PTX ``ex2.approx.ftz.f32`` alone: subnormal inputs and results flush to (sign-preserving)
    zero, so results below 2**-126 are 0, and ptxas needs no range fix-up around the MUFU.EX2
    (the default ``ex2.approx.f32`` keeps subnormal results at the cost of about three extra
    instructions per call). Error: 2 ulp or less, like the default form, for results of
    2**-126 and above (PTX ISA 9.7.3.22, ex2). Softmax-style code whose results are summed
    (attention) loses nothing visible; code that needs subnormal powers of two keeps the
    default. Static arguments compute in Python."""
    if not isinstance(approx, bool):
        from .operands import operand_error
        raise operand_error("ws.math.exp2(approx=...)", approx, "a static bool",
                            "approx=True for ex2.approx.ftz, False (default) otherwise")
    if not approx or not isinstance(x, Scalar):
        return _exp2_precise(x)
    x = _float(x)
    return type(x)._wrap(builder("ws.math.exp2").unary("math.exp2", x.value, {"approx": True}),
                         x.origin)
_ROUND = 12582912.0                  # 1.5 * 2**23: x + _ROUND holds round(x) in its low bits
_POLY = (1.0, 0.6932829022407532, 0.2422109842300415, 0.055008940398693085)
"""2**f on [-0.5, 0.5] to 1.02e-4 relative error: 1 + f (c1 + f (c2 + f c3)), fitted for
relative error in f32 with the constant term held at exactly 1, so that p >= 1 for f >= 0 and
x = -127 gives exactly +0.0 (tests/lang/test_exp2_poly.py measures both)."""


def exp2_poly(x):
    """2**x of a Float32 computed on the FMA and integer pipes instead of the MUFU (the
    quarter-rate special-function unit that ``exp2`` uses): x = j + f with j = round(x) and
    f in [-0.5, 0.5] (the 1.5 * 2**23 rounding trick: two adds), 2**f by a degree-3
    polynomial (three FFMA), and j added to the result's exponent bits (an integer
    shift-add). About 8 instructions against ``exp2``'s one, for kernels whose MUFU is the
    bottleneck (FlashAttention at D = 64 computes part of its softmax exponentials this way,
    as FlashAttention-4 does on Blackwell: Zadouri et al., 2025).

    Domain: x <= 127 (larger x wrap around in the exponent: not checked). x <= -127 (and
    -inf, and NaN, through the NaN-ignoring max) give exactly +0.0, so masked scores add
    nothing; x in (-127, -126) gives a subnormal below 2**-126. Relative error <= 1.02e-4 for
    results of 2**-126 and above (below a bf16 ulp, 3.9e-3: meant for values rounded to 16
    bits later, such as attention's P).
    Ints and f16/bf16 convert to Float32 first; static arguments compute in Python (exactly)."""
    if not isinstance(x, Scalar):
        return 2.0 ** x
    x = max(_float(x) if x.ir_type.is_float and x.ir_type.nbytes == 4 else Float32(x), -127.0)
    t = x + _ROUND
    f = x - (t - _ROUND)
    c0, c1, c2, c3 = _POLY
    p = fma(fma(fma(c3, f, c2), f, c1), f, c0)
    from .. import ir
    from .scalars import Int32
    b = builder("ws.math.exp2_poly")
    bits = Int32._wrap(b.bitcast(p.value, ir.i32)) + (Int32._wrap(b.bitcast(t.value, ir.i32)) << 23)
    return Float32._wrap(b.bitcast(bits.value, ir.f32), x.origin)


log = _unary("log", _pymath.log)
log2 = _unary("log2", _pymath.log2)
sqrt = _unary("sqrt", _pymath.sqrt)
rsqrt = _unary("rsqrt", lambda x: 1.0 / _pymath.sqrt(x))
floor = _unary("floor", _pymath.floor)
ceil = _unary("ceil", _pymath.ceil)
sin = _unary("sin", _pymath.sin)
cos = _unary("cos", _pymath.cos)
tanh = _unary("tanh", _pymath.tanh)


def abs(x):
    """|x| for ints and floats (static: Python's abs)."""
    return _builtin_abs(x)


def fma(a, b, c):
    """a * b + c rounded once (PTX fma.rn). Static operands compute in Python."""
    if not any(isinstance(v, Scalar) for v in (a, b, c)):
        return a * b + c
    t = None
    for v in (a, b, c):
        if isinstance(v, Scalar):
            t = v.ir_type if t is None else promote_types(t, v.ir_type)
    if not t.is_float:
        return a * b + c
    cls = DTYPES[t]
    a, b, c = (as_dynamic(v, cls) if not isinstance(v, Scalar) or v.ir_type != t else v
               for v in (a, b, c))
    return cls._wrap(builder("ws.math.fma").fma(a.value, b.value, c.value), a.origin)


def _minmax(kind, pyfn):
    def fn(a, b, *rest):
        if rest:
            return fn(fn(a, b), *rest)
        if not isinstance(a, Scalar) and not isinstance(b, Scalar):
            return pyfn(a, b)
        x = a if isinstance(a, Scalar) else b
        from .scalars import _coerce
        va, vb, t = _coerce(x, b if x is a else a, f"ws.math.{kind}")
        return DTYPES[t]._wrap(builder(f"ws.math.{kind}").binary(kind, va, vb), x.origin)
    fn.__name__ = kind
    fn.__doc__ = f"{kind}(a, b, ...) of ints or floats (floats: IEEE {kind}Num; NaN-ignoring)."
    return fn


min = _minmax("min", _builtin_min)
max = _minmax("max", _builtin_max)


def select(cond, a, b):
    """``a`` where ``cond`` else ``b``, elementwise, with both operands evaluated (PTX ``selp``;
    no branch, unlike a Python ``a if cond else b`` with a dynamic condition, which becomes a
    region that evaluates only the taken side). ``cond``: a Boolean (or a static bool, which
    picks in Python); ``a``, ``b``: numbers of one promoted type (static ones become constants
    of the other's type). OperandError for a non-boolean dynamic condition."""
    from .scalars import _coerce
    if not isinstance(cond, Scalar):
        return a if cond else b
    if not cond.ir_type.is_bool:
        from .operands import operand_error
        raise operand_error("ws.math.select()'s condition", f"a dynamic {type(cond).__name__}",
                            "a Boolean", "compare first, e.g. ws.math.select(x > 0, x, 0.0)")
    if not isinstance(a, Scalar) and not isinstance(b, Scalar):
        a = as_dynamic(a)
    x = a if isinstance(a, Scalar) else b
    va, vb, t = _coerce(x, b if x is a else a, "ws.math.select()")
    if x is not a:
        va, vb = vb, va
    return DTYPES[t]._wrap(builder("ws.math.select").select(cond.value, va, vb), x.origin)
