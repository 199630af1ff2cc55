"""Control-flow helpers kernels call: ``ws.range``, ``ws.static_range``, ``ws.static``,
``ws.printf``, and ``min``/``max`` that accept dynamic values.

Inside ``@ws.kernel`` / ``@ws.jit`` functions plain Python control flow already works on dynamic
values (see docs/control-flow.md); these helpers choose what the rewriter cannot guess:

- ``for i in range(...)`` / ``ws.range(...)``: a dynamic loop (``scf.for``), whatever the bounds;
  ``ws.range(..., unroll=k)`` adds an unroll hint.
- ``for i in ws.static_range(...)`` (alias ``ws.range_constexpr``): unrolled while compiling; its
  bounds must be static.
"""
from __future__ import annotations

import builtins
import re

from .. import ir
from ..errors import ArgumentError, BindingTimeError, CompilationError
from ..core.unbound import Unbound
from ..core.source import format_location, user_location
from ..core.trace import builder, maybe_current
from ..core.values import flatten
from . import math as _wsmath
from .scalars import DTYPES, Scalar, fits, needs_static_error, promote_types

__all__ = ["range", "static_range", "range_constexpr", "static", "const_expr", "printf", "min",
           "max", "DynamicRange", "format_printf"]


def _error(what: str, fix: str) -> CompilationError:
    loc = user_location(3)
    return CompilationError(f"{what}\n{format_location(loc)}\nFix: {fix}",
                            where=str(loc) if loc else None)


def _check_bound(x, what: str):
    if isinstance(x, Scalar):
        if x.ir_type.is_float:
            raise _error(f"{what} is a dynamic {type(x).__name__}; range bounds must be integers",
                         f"convert it, e.g. ws.Int32({what.split()[-1]})")
        return x
    if isinstance(x, int) or (type(x).__module__ == "numpy" and hasattr(x, "dtype")
                              and x.dtype.kind in "iub"):
        return int(x)
    raise _error(f"{what} is {x!r} ({type(x).__name__}); range bounds must be integers",
                 "pass an int or a dynamic integer (ws.Int32 ...)")


class DynamicRange:
    """``range(start, stop, step)`` as the iterable of a dynamic ``for`` loop (``scf.for``).

    Bounds are ints or dynamic integers; they are converted to one integer type (the C-promoted
    type of the dynamic bounds, else Int32, or Int64 when a static bound needs it). A negative
    step counts down (``iv > stop``); a dynamic step may have either sign at run time (zero loops
    forever). ``unroll`` is a static unroll hint (``scf.for {unroll = k}``)."""

    __slots__ = ("start", "stop", "step", "unroll")

    def __init__(self, *args, unroll=None):
        if not 1 <= len(args) <= 3:
            raise _error(f"range expected 1 to 3 arguments, got {len(args)}",
                         "write range(stop), range(start, stop) or range(start, stop, step)")
        start, stop, step = (0, args[0], 1) if len(args) == 1 else (*args, 1)[:3]
        self.start = _check_bound(start, "the range start")
        self.stop = _check_bound(stop, "the range stop")
        self.step = _check_bound(step, "the range step")
        if isinstance(self.step, int) and self.step == 0:
            raise _error("range() step must not be zero", "use a positive or negative step")
        if isinstance(unroll, Scalar):
            raise needs_static_error(unroll, "ws.range(..., unroll=k)")
        if unroll is not None and (not isinstance(unroll, int) or isinstance(unroll, bool)
                                   or unroll < 1):
            raise _error(f"ws.range(..., unroll=k) needs an int k >= 1, got {unroll!r}",
                         "pass unroll=1 (no unrolling), or the unroll factor")
        self.unroll = unroll

    def __iter__(self):
        raise _error("a dynamic range (range(...) or ws.range(...) in kernel code) can only be the "
                     "iterable of a `for` loop header",
                     "write `for i in range(...)`, or ws.static_range(...) for a Python range")

    @property
    def step_sign(self):
        """+1 or -1 for a static step; None for a dynamic one."""
        return None if isinstance(self.step, Scalar) else (1 if self.step > 0 else -1)

    def bounds(self):
        """(start, stop, step) as dynamic scalars of one integer type."""
        parts = (self.start, self.stop, self.step)
        t = None
        for x in parts:
            if isinstance(x, Scalar):
                xt = ir.i32 if x.ir_type.is_bool else x.ir_type
                t = xt if t is None else promote_types(t, xt)
        t = t or ir.i32
        for x in parts:
            if not isinstance(x, Scalar) and not fits(t, x):
                t = promote_types(t, ir.i64)
        cls = DTYPES[t]
        b = builder()
        return tuple(cls(x) if isinstance(x, Scalar) else cls._wrap(b.constant(t, x), None)
                     for x in parts)


def unroll_error(where, limit: int, r=None) -> CompilationError:
    """The error of a trace whose static loops ran past ``CompileOptions.max_unroll``
    iterations: at the loop ``where`` (file:line) that crossed it, or (``where`` None, the
    trace's boundary names the user's line) at a ``ws.static_range`` ``r`` that would."""
    what = (f"the static loop at {where} made this trace unroll more than {limit} iterations"
            if where else f"ws.static_range({r.start}, {r.stop}, {r.step}) would unroll "
            f"{len(r)} iterations, past the limit of {limit} in one trace")
    return CompilationError(
        f"{what}: a `for` over a ws.static_range, a tuple or a list is unrolled while "
        "compiling, its body traced once per item, so the kernel would hold that many copies "
        "and the compile would not end in reasonable time.\nExpected: at most "
        f"max_unroll={limit} static iterations in one trace (all static loops together); got "
        f"more.\nFix: loop on the GPU with `for i in range(n)` (ws.range: one scf.for, "
        "whatever n is); or, if the unrolling is meant, raise the limit: "
        f"@ws.kernel(max_unroll={limit * 4}) (0: no bound).")


def range(*args, unroll=None) -> DynamicRange:
    """``for i in ws.range(start, stop, step, unroll=k)``: a dynamic loop (``scf.for``); ``i`` is
    a dynamic integer. Same as plain ``range`` in kernel code, plus the unroll hint."""
    return DynamicRange(*args, unroll=unroll)


def static_range(*args):
    """``for i in ws.static_range(...)``: unrolled while compiling; ``i`` is a Python int.
    Raises BindingTimeError if a bound is dynamic."""
    for x in args:
        if isinstance(x, Scalar):
            raise needs_static_error(x, "a ws.static_range(...) bound (the loop is unrolled while "
                                        "compiling, so its trip count must be known)",
                                     "use range(...) for a loop with a dynamic trip count "
                                     "(it runs on the GPU as a real loop)")
    if not 1 <= len(args) <= 3 or not all(hasattr(type(x), "__index__") for x in args):
        loc = user_location(2)
        got = ", ".join(f"{type(x).__name__} {x!r}" for x in args) or "no arguments"
        raise ArgumentError(
            f"ws.static_range(...) takes 1 to 3 integers (stop; start, stop; or start, stop, "
            f"step), as range does; got {got}.\n{format_location(loc)}\nFix: pass ints (e.g. "
            f"int(x), or x // y for a quotient), or use range(...) for a dynamic loop",
            where=str(loc) if loc else None)
    r = builtins.range(*args)
    ctx = maybe_current()
    limit = getattr(ctx.options, "max_unroll", 0) if ctx is not None else 0
    if limit and len(r) > limit - ctx.unrolled:     # fail now, not after `limit` iterations
        raise unroll_error(None, limit, r)
    return r


range_constexpr = static_range


def static(x):
    """``ws.static(expr)``: check that ``expr`` is static (no dynamic part) and return it.
    ``if ws.static(cond):`` is a compile-time ``if``. Raises BindingTimeError otherwise."""
    _, leaves = flatten(x)
    for leaf in leaves:
        if isinstance(leaf, Scalar):
            raise needs_static_error(leaf, "ws.static(...)")
        loc = user_location(2)
        raise BindingTimeError(f"ws.static(...): the value has a dynamic part (a "
                               f"{type(leaf).__name__})\n{format_location(loc)}\nFix: pass a "
                               "static value", where=str(loc) if loc else None)
    return x


const_expr = static


# -- printf ------------------------------------------------------------------------------------

_SPEC = re.compile(r"%(?P<flags>[-+ #0]*)(?P<width>\*|\d+)?(?:\.(?P<prec>\*|\d+))?"
                   r"(?P<len>hh|h|ll|l|L|z|j|t)?(?P<conv>[diouxXeEfFgGaAcsp%])")


def _escape(text: str) -> str:
    return text.replace("%", "%%")


def _dynamic_arg(x, conv: str, spec: str):
    """(spec for the device, ir.Value) for a dynamic argument, with C's argument promotions."""
    if not isinstance(x, Scalar):
        raise _error(f"printf: cannot print a dynamic {type(x).__name__}",
                     "print its scalar parts")
    b = builder()
    t = x.ir_type
    if conv in "eEfFgGaA":
        if not t.is_float:
            raise _error(f"printf: %{conv} needs a float, got a dynamic {type(x).__name__}",
                         "use %d for integers, or convert: ws.Float32(x)")
        return spec + conv, b.cast(x.value, ir.f64)
    if conv in "diouxXc":
        if t.is_float:
            raise _error(f"printf: %{conv} needs an integer, got a dynamic {type(x).__name__}",
                         "use %f for floats, or convert: ws.Int32(x)")
        if t.bits == 64:
            return spec + "ll" + conv, x.value
        to = ir.u32 if t.kind == "uint" else ir.i32
        return spec + conv, b.cast(x.value, to)
    raise _error(f"printf: %{conv} cannot print a dynamic {type(x).__name__}",
                 "use %d, %u, %x or %f")


def _default_conv(x) -> str:
    t = x.ir_type
    return "f" if t.is_float else ("u" if t.kind == "uint" else "d")


def format_printf(fmt, args):
    """(device format string, operand values) for ``printf(fmt, *args)``: static arguments are
    formatted into the string now, dynamic ones become operands. ``fmt`` uses C conversions
    (``%d %5.2f %x``) or, if it contains ``{}`` and no C conversion, ``{}`` placeholders."""
    if not isinstance(fmt, str):
        raise _error(f"printf: the format must be a static str, got {type(fmt).__name__}",
                     "pass a string literal")
    specs = [m for m in _SPEC.finditer(fmt) if m.group("conv") != "%"]
    if "{}" in fmt and not specs:
        return _format_braces(fmt, args)
    if len(specs) != len(args):
        raise _error(f"printf: the format has {len(specs)} conversion(s) but {len(args)} "
                     "argument(s) were given", "give one argument per %-conversion")
    out, values, pos, it = [], [], 0, iter(args)
    for m in _SPEC.finditer(fmt):
        out.append(fmt[pos:m.start()])
        pos = m.end()
        conv = m.group("conv")
        if conv == "%":
            out.append("%%")
            continue
        if m.group("width") == "*" or m.group("prec") == "*":
            raise _error("printf: `*` widths are not supported", "write the width literally")
        spec = "%" + (m.group("flags") or "") + (m.group("width") or "") + (
            "." + m.group("prec") if m.group("prec") is not None else "")
        x = next(it)
        if flatten(x)[1]:
            s, v = _dynamic_arg(x, conv, spec)
            out.append(s)
            values.append(v)
            continue
        try:
            text = (spec + conv) % ((str(x),) if conv == "s" else (x,))
        except (TypeError, ValueError) as e:
            raise _error(f"printf: cannot format {x!r} with %{conv}: {e}",
                         "use a conversion that fits the value") from None
        out.append(_escape(text))
    out.append(fmt[pos:])
    return "".join(out), values


def _format_braces(fmt: str, args):
    pieces = fmt.split("{}")
    if len(pieces) - 1 != len(args):
        raise _error(f"printf: the format has {len(pieces) - 1} `{{}}` placeholder(s) but "
                     f"{len(args)} argument(s) were given", "give one argument per `{}`")
    out, values = [_escape(pieces[0])], []
    for x, piece in zip(args, pieces[1:]):
        if flatten(x)[1]:
            s, v = _dynamic_arg(x, _default_conv(x) if isinstance(x, Scalar) else "d", "%")
            out.append(s)
            values.append(v)
        else:
            out.append(_escape(str(x)))
        out.append(_escape(piece))
    return "".join(out), values


def printf(fmt, *args) -> None:
    """Device ``printf`` (PTX ``vprintf``). ``fmt`` is a static string with C conversions
    (``"x=%d y=%.3f\\n"``) or ``{}`` placeholders; static arguments are formatted into the string
    while compiling, dynamic ones are passed with C's promotions (ints narrower than 32 bits to
    32, floats to f64). Emits ``gpu.printf``."""
    text, values = format_printf(fmt, args)
    builder("ws.printf").printf(text, values)


# -- min / max ---------------------------------------------------------------------------------

_MISSING = object()


def _minmax(kind, pyfn, wsfn, args, key, default):
    items = args
    if len(args) == 1:
        items = tuple(args[0])
    for v in items:
        if isinstance(v, Unbound):
            raise v.error()
    if not any(isinstance(v, Scalar) for v in items):
        kw = {}
        if key is not None:
            kw["key"] = key
        if default is not _MISSING:
            kw["default"] = default
        return pyfn(*args, **kw)
    if key is not None:
        raise _error(f"{kind}(..., key=...) with dynamic values is not supported",
                     f"compute the keys yourself and use ws.math.{kind}")
    result = items[0]
    for v in items[1:]:
        result = wsfn(result, v)
    return result


def min(*args, key=None, default=_MISSING):
    """``min`` that also takes dynamic values (``arith.min``; floats: IEEE minNum, so a NaN
    operand is ignored, unlike Python). All-static arguments: Python's ``min``."""
    return _minmax("min", builtins.min, _wsmath.min, args, key, default)


def max(*args, key=None, default=_MISSING):
    """``max`` that also takes dynamic values (``arith.max``; floats: IEEE maxNum). All-static
    arguments: Python's ``max``."""
    return _minmax("max", builtins.max, _wsmath.max, args, key, default)
