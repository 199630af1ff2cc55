"""Epilogues of ``ws.ops.matmul``: static objects compiled into the GEMM kernel.

An epilogue is a plain Python object with a ``@ws.jit`` method ``apply(self, x, row, col,
operands)`` (and optionally ``prologue(operands)``, run once per thread before its tiles, whose
result ``apply`` gets as ``operands``) that maps one f32 accumulator element ``x`` of output element (row, col) to the value
stored (before the conversion to the output dtype). The object is static (binding-time rule 7):
its class and fields specialize the kernel, like a C++ functor template argument; no string
templates. Tensors it needs (a bias, a residual) are not compiled in: ``operands()`` returns them
on the host, the kernel receives them as a tuple of dynamic tensors, and ``apply`` reads them
(``operands[0][col]``). ``row`` is the output row counted over the whole (batch * M, N) output,
``col`` the column; both are clamped into the output (for a tile's clipped edge), so loads at
(row, col) stay in bounds. A user epilogue in five lines::

    class Scale(ws.ops.Epilogue):
        def __init__(self, s):
            self.s = s
        @ws.jit
        def apply(self, x, row, col, operands):
            return x * self.s
"""
from __future__ import annotations

import ast
import copy
import functools
import inspect
import math
import numbers
import textwrap
import types

import warpstage as ws

from ..core.source import format_location, user_location
from ..core.trace import Origin
from ..core.static_key import UnkeyableError, fields_key, static_key
from ..errors import ArgumentError, BindingTimeError, OperandError
from ..ir.core import Location
from ..lang.scalars import Scalar
from ..runtime.tensors import as_tensor_arg, is_tensor
from .host_fixes import kind_of

__all__ = ["Epilogue", "BiasGelu", "BiasSilu", "Bias", "Residual"]

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_is_tensor = is_tensor


class Epilogue:
    """Base of matmul epilogues: the identity. A subclass overrides ``apply`` (a ``@ws.jit``
    method, f32 in and out) and, if it reads tensors, keeps them in attributes: ``operands()``
    returns every tensor attribute in attribute order, and the static key leaves tensors out
    (their dtype and rank are keyed as kernel arguments); every other field is keyed by
    ``static_key``'s rules (``core.static_key.fields_key``: a numpy scalar by value, a list by
    its contents), so changing one compiles a new kernel. Inside the kernel a tensor field read
    as ``self.<name>`` is an error that names ``operands[i]`` (the tensor's values exist only on
    the GPU). ``check(m, n, batches)`` validates the operands' shapes on the host (override it;
    raise ArgumentError)."""

    def operands(self) -> tuple:
        """The tensors the kernel gets as its ``operands`` tuple."""
        return tuple(v for v in vars(self).values() if _is_tensor(v))

    def check(self, m: int, n: int, batches: int) -> None:
        """Host-side validation of the operands for an (batches x) M x N output."""

    def prologue(self, operands):
        """Device code run once per consumer thread before its tiles (a plain method or
        ``@ws.jit``: a plain one is called through ``ws.jit``, :func:`traced_method`): returns
        what ``apply`` receives as ``operands`` (default: the operand tensors). An epilogue
        that reads the same values for every element (a per-tensor scale) loads them here once
        instead of per element."""
        return operands

    def __static_key__(self):
        return fields_key(self, skip=_operand_field)

    @ws.jit
    def apply(self, x, row, col, operands):
        return x


def _operand_field(v) -> bool:
    """Whether an epilogue field is left out of its static key: a tensor (a kernel operand), or
    the stand-in for one in the traced copy (:func:`traced`)."""
    return type(v) is TensorField or is_tensor(v)


class TensorField:
    """What traced epilogue code sees in place of a tensor field (``self.bias``): the tensor is
    a kernel argument, ``operands[index]``, not a compile-time value (the static key leaves it
    out), so any use of the field itself (arithmetic, ``float()``, indexing) raises a
    BindingTimeError at the user's line that names ``operands[index]``, instead of a raw
    TypeError or, worse, a value read once while compiling and kept in the kernel."""

    __slots__ = ("_owner", "_name", "_index")

    def __init__(self, owner: str, name: str, index):
        object.__setattr__(self, "_owner", owner)
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_index", index)

    def _error(self, *args, **kwargs):
        owner, name, index = (object.__getattribute__(self, k)
                              for k in ("_owner", "_name", "_index"))
        where = format_location(user_location())
        arg = f"operands[{index}]" if index is not None else "its operands tuple"
        raise BindingTimeError(
            f"{owner}.{name} is a tensor, used inside the kernel as a value: an epilogue's "
            f"tensor fields are kernel arguments (this one is {arg} in apply), their values "
            "exist only on the GPU, and the static key leaves them out (a value read while "
            "compiling would be kept in the kernel for every later tensor).\nExpected: "
            f"{arg}[i] (an element, dynamic) or a number field; got self.{name}.\n"
            + (where + "\n" if where else "")
            + f"Fix: read {arg}[col] (or [row, col]) in apply; for a number, keep a Python "
            f"float in the field ({owner}(float(x)))", where=None)

    def __getattr__(self, attr):
        if attr.startswith("__"):           # probes (hasattr(x, "__dlpack__")): not a use
            raise AttributeError(attr)
        self._error()

    __getitem__ = __float__ = __int__ = __index__ = __bool__ = _error
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _error
    __truediv__ = __rtruediv__ = __neg__ = __pow__ = __rpow__ = __array__ = _error
    __lt__ = __le__ = __gt__ = __ge__ = _error

    def __repr__(self):
        return f"<tensor field {object.__getattribute__(self, '_name')}>"


def traced(epilogue):
    """The epilogue as its traced methods (``prologue``, ``apply``) see it: for an epilogue
    keyed by ``Epilogue.__static_key__`` (tensors left out), a shallow copy whose tensor fields
    are :class:`TensorField` stand-ins; an epilogue with its own ``__static_key__`` (which says
    itself what is keyed) is used as it is."""
    cls = type(epilogue)
    if epilogue is None or getattr(cls, "__static_key__", None) is not Epilogue.__static_key__:
        return epilogue
    fields = {k: v for k, v in getattr(epilogue, "__dict__", {}).items() if is_tensor(v)}
    if not fields:
        return epilogue
    ops = epilogue.operands()
    view = copy.copy(epilogue)
    for k, v in fields.items():
        index = next((i for i, x in enumerate(ops) if x is v), None)
        object.__setattr__(view, k, TensorField(cls.__name__, k, index))
    return view


def operands_of(epilogue, op: str = "matmul") -> tuple:
    """``tuple(epilogue.operands())``; ArgumentError from ``ws.ops.<op>`` when a user's
    ``operands()`` returns something that is not a sequence (None: a method with no
    ``return``)."""
    got = epilogue.operands()
    try:
        return tuple(got)
    except TypeError:
        cls = type(epilogue).__name__
        raise ArgumentError(f"ws.ops.{op}: {cls}.operands() returned {kind_of(got)}; expected "
                            "a tuple of the tensors apply reads (empty: none). Fix: return "
                            "(self.bias,) or (), or leave operands() to the base class (every "
                            "tensor field, in field order)") from None


def operand_names(epilogue, operands) -> list:
    """A name per tensor of ``operands`` (the epilogue's), for the host's errors: the field that
    holds it, bare for warpstage's own epilogues ("bias", "residual", "scale_a") and
    ``Class.field`` for a user's; else ``Class's operand i``."""
    cls = type(epilogue)
    fields = getattr(epilogue, "__dict__", {})
    own = cls.__module__.startswith("warpstage.")
    names = []
    for i, t in enumerate(operands):
        field = next((k for k, v in fields.items() if v is t), None)
        names.append(f"{cls.__name__}'s operand {i}" if field is None else
                     field if own else f"{cls.__name__}.{field}")
    return names


def epilogue_key(epilogue, op: str = "matmul"):
    """``static_key(epilogue)``: what of the epilogue specializes the kernel (its class and
    fields); ArgumentError from ``ws.ops.<op>`` naming the field that cannot be keyed."""
    try:
        return static_key(epilogue)
    except UnkeyableError as e:
        cls = type(epilogue).__name__
        raise ArgumentError(
            f"ws.ops.{op}: epilogue={cls}(...) cannot specialize the kernel: {e}; expected "
            "fields that are numbers, strings, tuples, lists, dtypes or static config objects "
            "(tensors are passed to the kernel as operands). Fix: keep that value out of the "
            f"epilogue (compute what apply needs from it on the host), or give {cls} a "
            "__static_key__() returning a tuple of what apply specializes on") from None


def apply(epilogue, x, row, col, operands):
    """``epilogue.apply(x, row, col, operands)`` as the kernels call it (traced), its result
    checked: a number or a dynamic scalar, the value to store. ``None`` (an ``apply`` with no
    ``return``) or a tuple is an OperandError at the user's ``apply`` (its ``return``, or its
    ``def`` when it has none), not one of the store deep in the TMA-store epilogue."""
    x, row, col = (_named_origin(v, what) for v, what in (
        (x, "the accumulator element `x` of the epilogue's apply"),
        (row, "the output row `row` of the epilogue's apply (the tile is chosen at run time)"),
        (col, "the output column `col` of the epilogue's apply (the tile is chosen at run "
              "time)")))
    y = traced_method(epilogue, "apply")(x, row, col, operands)
    if isinstance(y, (Scalar, numbers.Real)):
        return y
    raise _apply_result_error(epilogue, y)


_JITTED: dict = {}
"""A plain ``apply`` / ``prologue`` function -> its ``ws.jit`` form (:func:`traced_method`)."""


def traced_method(epilogue, name: str):
    """``epilogue.<name>`` as the kernels call it: a plain method (``prologue`` usually is;
    ``apply`` may be) through ``ws.jit``, so its source is rewritten and registered like a
    ``@ws.jit`` method's (a dynamic ``if`` works, and an error inside names its line instead
    of the kernel's call in ops/matmul_consumer.py); anything else as it is."""
    fn = getattr(type(epilogue), name, None)
    if not isinstance(fn, types.FunctionType) or name in getattr(epilogue, "__dict__", {}):
        return getattr(epilogue, name)
    jitted = _JITTED.get(fn)
    if jitted is None:
        jitted = _JITTED[fn] = ws.jit(fn)
    return functools.partial(jitted, epilogue)


def _named_origin(v, what: str):
    """``v`` with the origin an error's "Why dynamic" shows set to ``what``: the user's view of
    apply's arguments, not the line of the kernel's tile loop they were computed from."""
    if not isinstance(v, Scalar):
        return v
    return type(v)._wrap(v.value, Origin(what))


def _apply_result_error(epilogue, y) -> OperandError:
    cls = type(epilogue).__name__
    fn = getattr(type(epilogue).apply, "fn", type(epilogue).apply)
    loc = _return_location(fn, y is None)
    got = "None (apply has no return statement, or returns nothing)" if y is None else \
        f"{type(y).__name__} {str(y)[:60]}"
    fix = ("end apply with `return <the value to store>`, e.g. `return x * self.s`"
           if y is None else "return one value per element (apply sees one accumulator "
           "element x at (row, col)); a tuple or list is not a value to store")
    where = format_location(loc)
    return OperandError(f"{cls}.apply (a ws.ops.matmul epilogue) returned {got}; expected one "
                        "f32 value (a dynamic scalar or a number): the value stored at (row, "
                        "col), before the rounding to the output dtype.\n"
                        + (where + "\n" if where else "") + f"Fix: {fix}",
                        where=str(loc) if loc else None)


def _return_location(fn, none: bool):
    """The Location of ``fn``'s first ``return`` with a value (``none``: of its ``def`` when it
    has no such ``return``), for an error about what ``apply`` returned."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    line = code.co_firstlineno
    try:
        lines, first = inspect.getsourcelines(fn)
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError):
        return Location(code.co_filename, line, 0)
    node = tree.body[0] if tree.body else None
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        line = first + node.lineno - 1
        returns = [r for r in ast.walk(node) if isinstance(r, ast.Return) and r.value is not None]
        if returns and not none:
            line = first + min(r.lineno for r in returns) - 1
    return Location(code.co_filename, line, 0)


def _bias_check(name: str, bias, n: int) -> None:
    ta = as_tensor_arg(bias, f"{name}'s bias")
    if ta is None or ta.ndim != 1 or ta.shape[0] != n:
        got = kind_of(bias) if ta is None else f"shape {tuple(ta.shape)}"
        raise ArgumentError(f"ws.ops.{name}: the bias is {got}; expected a 1-d tensor of N = {n} "
                            "elements (one per output column), on the operands' device. Fix: "
                            "pass bias of shape (N,)")


class Bias(Epilogue):
    """``x + bias[col]``: ``bias`` a 1-d (N,) tensor of any float dtype."""

    def __init__(self, bias):
        self.bias = bias

    def check(self, m, n, batches):
        _bias_check(type(self).__name__, self.bias, n)

    @ws.jit
    def apply(self, x, row, col, operands):
        return x + ws.Float32(operands[0][col])


class BiasGelu(Bias):
    """``gelu(x + bias[col])`` with GELU's tanh form, ``0.5 y (1 + tanh(sqrt(2/pi) (y + 0.044715
    y^3)))`` (``torch.nn.functional.gelu(y, approximate='tanh')``); ``bias`` (N,) or None."""

    def __init__(self, bias=None):
        self.bias = bias
        self.has_bias = bias is not None

    def check(self, m, n, batches):
        if self.has_bias:
            _bias_check("BiasGelu", self.bias, n)

    @ws.jit
    def apply(self, x, row, col, operands):
        y = x
        if ws.static(self.has_bias):
            y = x + ws.Float32(operands[0][col])
        inner = _SQRT_2_OVER_PI * (y + 0.044715 * y * y * y)
        return 0.5 * y * (1.0 + ws.math.tanh(inner))


class BiasSilu(BiasGelu):
    """``silu(x + bias[col])`` = ``y / (1 + exp(-y))`` (``torch.nn.functional.silu``); ``bias``
    (N,) or None."""

    @ws.jit
    def apply(self, x, row, col, operands):
        y = x
        if ws.static(self.has_bias):
            y = x + ws.Float32(operands[0][col])
        return y / (1.0 + ws.math.exp(-y))


class Residual(Epilogue):
    """``x * scale + residual[row, col]``: ``residual`` an (M, N) tensor (batched: (batch * M,
    N), e.g. a (B, M, N) tensor's ``reshape(-1, N)``) of any float dtype; ``scale`` a static
    float."""

    def __init__(self, residual, scale=1.0):
        self.residual, self.scale = residual, float(scale)

    def check(self, m, n, batches):
        ta = as_tensor_arg(self.residual, "Residual's tensor")
        if ta is None or tuple(ta.shape) != (batches * m, n):
            got = kind_of(self.residual) if ta is None else f"shape {tuple(ta.shape)}"
            raise ArgumentError(f"ws.ops.Residual: the residual is {got}; expected "
                                f"({batches * m}, {n}) (batch * M, N). Fix: pass "
                                "residual.reshape(-1, N)")

    @ws.jit
    def apply(self, x, row, col, operands):
        return x * self.scale + ws.Float32(operands[0][row, col])
