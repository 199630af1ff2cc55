"""Math on dynamic floats (``ws.math.exp2`` ...). Static arguments compute in Python.

f16/bf16 arguments are computed in f32 by the backend and rounded back. Approximate PTX
instructions are used where CUDA's fast-math does (ex2.approx, lg2.approx, rsqrt.approx); see
the backend for the exact lowering of each.
"""
from __future__ import annotations

import math as _pymath

from ..frontend.trace import builder
from .scalars import Float32, Scalar, as_dynamic, promote_types, DTYPES

__all__ = ["exp", "exp2", "log", "log2", "sqrt", "rsqrt", "abs", "fma", "min", "max", "floor",
           "ceil", "sin", "cos", "tanh"]

_builtin_abs, _builtin_min, _builtin_max = abs, min, max


def _float(x) -> Scalar:
    x = as_dynamic(x)
    return x if x.ir_type.is_float else Float32(x)


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
exp2 = _unary("exp2", lambda x: 2.0 ** x)
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
