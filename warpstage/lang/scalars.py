"""Dynamic scalar types: ``ws.Int32``, ``ws.Float32``, ``ws.BFloat16``, ``ws.Boolean``, ...

Each class is at once a dtype (for tensors and annotations), a cast (``ws.Float32(x)``) and the
type of a dynamic scalar while tracing: an instance wraps one SSA value of the IR and overloads
Python's operators to emit IR.

Mixing rules (documented in docs/binding-time.md):
- static number with dynamic value: the number becomes a constant of the dynamic operand's type
  (an int too large for it widens to Int64; a float with a dynamic int makes both Float32);
- two dynamic values of different types promote as in C: float beats int, the wider wins, f16
  with bf16 gives f32, equal-width signed with unsigned gives unsigned; Boolean promotes to the
  other operand's type;
- the 8-bit floats (Float8E4M3FN, Float8E5M2) are storage types: arithmetic, comparisons and
  ws.math on them compute in Float32 and give Float32 (like C's integer promotions); convert
  back with ``ws.Float8E4M3FN(x)`` (round to nearest even, saturating: ``ir/fp8.py``);
- ``/`` on ints is true division in Float32; ``//`` and ``%`` follow Python (floor; sign of the
  divisor), also for negative ints; integer arithmetic wraps at the type's width.
"""
from __future__ import annotations

import numbers
import operator
from typing import Optional

from .. import ir
from ..errors import BindingTimeError, UnsupportedError
from ..core.trace import Origin, builder, maybe_current
from ..core.source import user_location

__all__ = [
    "Scalar", "Numeric", "Boolean", "Int8", "Int16", "Int32", "Int64", "Uint8", "Uint16",
    "Uint32", "Uint64", "Float16", "BFloat16", "Float32", "Float64", "Float8E4M3FN",
    "Float8E5M2", "float8_e4m3fn", "float8_e5m2", "HostScalar", "dtype_of",
    "as_dynamic", "promote_types", "is_dynamic", "DTYPES",
]


class HostScalar:
    """A host value tagged with a dynamic type: ``ws.Int64(5)`` outside a kernel. Passed as a
    kernel argument it is dynamic with exactly that type (rule 2)."""

    __slots__ = ("dtype", "value")

    def __init__(self, dtype, value):
        self.dtype = dtype
        self.value = value

    def __repr__(self) -> str:
        return f"{self.dtype.__name__}({self.value!r})"


class TypePlaceholder(HostScalar):
    """What ``ws.compile(k, ws.Int32)`` binds for the type ``ws.Int32``: a HostScalar of value 0
    that errors describe as the type (``placeholder_of``), not as the 0 it holds."""

    __slots__ = ()

    @property
    def placeholder_of(self) -> str:
        return f"ws.{self.dtype.__name__}"


class Scalar:
    """A dynamic scalar value (an SSA value while tracing). Subclasses fix ``ir_type``."""

    ir_type: ir.ScalarType = None
    __slots__ = ("value", "origin")

    def __getattr__(self, name):          # only for attributes it does not have (error path)
        if name.startswith("__"):
            raise AttributeError(name)
        from .tma import missing_attribute
        raise missing_attribute(self, name)

    def __new__(cls, x=None):
        if cls.ir_type is None:
            raise TypeError(f"{cls.__name__} is abstract; use a concrete type such as ws.Int32")
        if maybe_current() is None:
            if x is None:
                raise TypeError(f"{cls.__name__}() needs a value")
            return HostScalar(cls, x)
        if isinstance(x, Scalar):
            if type(x) is cls:
                return x
            b = builder(f"{cls.__name__}(...)")
            if cls.ir_type.is_bool:
                zero = b.constant(x.ir_type, 0)
                return cls._wrap(b.cmp("ne", x.value, zero), x.origin)
            return cls._wrap(b.cast(x.value, cls.ir_type), x.origin)
        if isinstance(x, (bool, numbers.Number)) or _is_np_scalar(x):
            return constant(cls, x, Origin(f"{cls.__name__}({x!r})", user_location(2)))
        raise not_a_number(x, cls, f"ws.{cls.__name__}(...)")

    @classmethod
    def _wrap(cls, value: ir.Value, origin: Optional[Origin] = None) -> "Scalar":
        obj = object.__new__(cls)
        obj.value = value
        obj.origin = origin
        return obj

    def __repr__(self) -> str:
        return f"<dynamic {type(self).__name__}>"

    def __hash__(self):
        """A dynamic scalar is not hashable: as a dict key or set element its equality (``==``
        makes a dynamic Boolean) could not tell equal GPU values apart, so ``len()`` and lookups
        would be silently wrong. BindingTimeError at the user's line."""
        from ..core.trace import emit_location
        raise BindingTimeError(
            f"a dynamic {type(self).__name__} used as a dict key or set element (or hashed)"
            f"{f' — {self.origin}' if self.origin else ''}\n{emit_location()}\nA dict or set "
            "is a Python object that exists only while compiling: it would need to compare the "
            "key with the others, and a GPU value is known only at run time.\nExpected: static "
            "keys (Python values, ws.static_range loop variables); got a dynamic value.\nFix: "
            "key the dict by a static value, or keep the values in a list or a tensor indexed "
            "by the dynamic value.")

    # -- binding-time errors -----------------------------------------------------------------
    def _needs_static(self, what: str):
        raise needs_static_error(self, what)

    def __bool__(self):
        raise needs_static_error(self, "using a dynamic value as a Python bool (in a "
                                 "comprehension, a builtin such as any/all/sorted, or code that "
                                 "warpstage does not rewrite)",
                                 "write an explicit `if`/`for` inside the @ws.kernel/@ws.jit "
                                 "function (those are rewritten for dynamic values), and use "
                                 "ws.math.min/max for minimum and maximum")

    def __index__(self):
        self._needs_static("using a dynamic value as a static Python int (a range() bound in "
                           "static code, a shape, an index into a Python list)")

    __int__ = __index__

    def __float__(self):
        self._needs_static("converting a dynamic value to a Python float")

    def __iter__(self):
        raise self._not_a_container("iterating over (or unpacking)")

    def __len__(self):
        raise self._not_a_container("len() of")

    def __getitem__(self, index):
        raise self._not_indexable(
            "indexing", f"read the tensor you meant (x[{_index_text(index)}]), or use the scalar "
            "itself: it holds one value")

    def __setitem__(self, index, value):
        raise self._not_indexable(
            "item assignment to", "store into a tensor parameter (x[i] = v, x annotated "
            "ws.Tensor), or rebind the name for a new scalar value (n = n + 1)")

    def __delitem__(self, index):
        raise self._not_indexable("del of an item of", "remove the del: a scalar holds no items")

    def _unsupported(self, head: str, expected: str, got: str, fix: str):
        """The UnsupportedError of a Python operation this scalar does not define: ``head``
        (what was tried) after which the value's origin ("parameter 'n' (Int32, ...)") and the
        user's line, then Expected / got / Fix."""
        from ..core.trace import emit_location
        origin = f" — {self.origin}" if self.origin else ""
        head = head.replace("{name}", type(self).__name__).replace("{origin}", origin)
        return UnsupportedError(f"{head}\n{emit_location()}\nExpected: {expected}; got {got}."
                                f"\nFix: {fix}.")

    def _not_indexable(self, what: str, fix: str):
        """The UnsupportedError for ``what`` (indexing, item assignment) of this scalar."""
        return self._unsupported(
            what + " a dynamic {name} scalar{origin}: a scalar holds one value, not items",
            "a tensor (ws.Tensor) or a Python sequence to index",
            f"a dynamic {type(self).__name__} scalar", fix)

    def _not_a_container(self, what: str):
        from ..core.trace import emit_location
        return UnsupportedError(
            f"{what} a dynamic {type(self).__name__}, which is one scalar value\n"
            f"{emit_location()}\nExpected: a tuple, a list or a static range there; got a "
            f"scalar (known on the GPU at run time).\nFix: loop with ws.range(n) over a "
            "dynamic count n; for the (x, y, z) of ws.arch.thread_idx() and similar, unpack the "
            "tuple it returns, not one of its elements.")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        """numpy meets a dynamic value: ``np.float32(2) * x`` is the Python operator on the
        numpy scalar's value; any other numpy function is an error (it runs on the host)."""
        op = _UFUNC_OPERATORS.get(ufunc.__name__) if method == "__call__" and not kwargs else None
        if op is not None and len(inputs) == op[1] and all(
                isinstance(v, Scalar) or _is_np_scalar(v) or isinstance(v, (int, float, bool))
                for v in inputs):
            return op[0](*(v.item() if _is_np_scalar(v) else v for v in inputs))
        from ..core.trace import emit_location
        name = getattr(ufunc, "__name__", "ufunc")
        why = f"; it became dynamic at: {self.origin}" if self.origin else ""
        raise BindingTimeError(
            f"np.{name}() was given a dynamic {type(self).__name__} (a value known only on the "
            f"GPU at run time{why})\n{emit_location()}\nnumpy runs on the host while the kernel "
            "compiles, so it cannot compute on a GPU value.\nExpected: static numbers (Python or "
            f"numpy) as numpy's arguments; got a dynamic {type(self).__name__}.\nFix: "
            f"ws.math.{_WS_MATH.get(name, name)}(...) (warpstage's GPU math; also operators and "
            "ws.math.min/max), or apply numpy to static values only.")

    # -- arithmetic --------------------------------------------------------------------------
    def _bin(self, other, kind, reverse=False):
        a, b, t, bl = _operands(self, other, "operator", kind)
        if a is None:
            return NotImplemented
        if reverse:
            a, b = b, a
        if kind == "truediv" and not t.is_float:
            a, b, t = bl.cast(a, ir.f32), bl.cast(b, ir.f32), ir.f32
            kind = "div"
        elif kind == "truediv":
            kind = "div"
        if kind in ("and", "or", "xor", "shl", "shr") and t.is_float:
            from ..core.trace import emit_location
            raise UnsupportedError(
                f"the bitwise operator {_OPERATOR_SIGN.get(kind, kind)} on float values ({t}): "
                f"bitwise operators take integers\n{emit_location()}\nExpected: integer or "
                f"Boolean operands; got {t}.\nFix: convert first, e.g. ws.Int32(x) "
                f"{_OPERATOR_SIGN.get(kind, kind)} 1 (or reinterpret the bits with an integer "
                "tensor view).")
        if kind in ("shl", "shr") and t.is_bool:
            a, b, t = bl.cast(a, ir.i32), bl.cast(b, ir.i32), ir.i32
        return DTYPES[t]._wrap(bl.binary(kind, a, b), _origin(self, other))

    def __add__(self, o): return self._bin(o, "add")
    def __radd__(self, o): return self._bin(o, "add", True)
    def __sub__(self, o): return self._bin(o, "sub")
    def __rsub__(self, o): return self._bin(o, "sub", True)
    def __mul__(self, o): return self._bin(o, "mul")
    def __rmul__(self, o): return self._bin(o, "mul", True)
    def __truediv__(self, o): return self._bin(o, "truediv")
    def __rtruediv__(self, o): return self._bin(o, "truediv", True)
    def __floordiv__(self, o): return self._bin(o, "floordiv")
    def __rfloordiv__(self, o): return self._bin(o, "floordiv", True)
    def __mod__(self, o): return self._bin(o, "mod")
    def __rmod__(self, o): return self._bin(o, "mod", True)
    def __and__(self, o): return self._bin(o, "and")
    def __rand__(self, o): return self._bin(o, "and", True)
    def __or__(self, o): return self._bin(o, "or")
    def __ror__(self, o): return self._bin(o, "or", True)
    def __xor__(self, o): return self._bin(o, "xor")
    def __rxor__(self, o): return self._bin(o, "xor", True)
    def __lshift__(self, o): return self._bin(o, "shl")
    def __rlshift__(self, o): return self._bin(o, "shl", True)
    def __rshift__(self, o): return self._bin(o, "shr")
    def __rrshift__(self, o): return self._bin(o, "shr", True)

    def __matmul__(self, o):
        raise self._no_operator("the matrix-multiplication operator @", "x * y for the product "
                                "of two scalars; a matrix product of tiles is ws.mma / ws.wgmma "
                                "in a kernel, ws.ops.matmul on the host")

    __rmatmul__ = __matmul__

    def __divmod__(self, o):
        raise self._no_operator("divmod()", "(x // y, x % y): the two operators, which follow "
                                "Python's floor rule")

    __rdivmod__ = __divmod__

    def __round__(self, ndigits=None):
        raise self._no_operator("round()", "ws.Int32(x + 0.5) for a non-negative x (a float "
                                "converted to an int truncates toward zero), or keep the float")

    def _no_operator(self, what: str, fix: str):
        """The UnsupportedError for a Python operator a dynamic scalar does not define."""
        return self._unsupported(
            what + " on a dynamic {name} scalar{origin}: a scalar holds one value, and warpstage "
            f"does not define {what} for it",
            "the operators + - * / // % ** (and bitwise ones on integers) on dynamic scalars",
            what, fix)

    def __pow__(self, o):
        if isinstance(o, int) and not isinstance(o, bool) and 0 <= o <= 64:
            result = type(self)(1) if o == 0 else self
            for _ in range(o - 1):
                result = result * self
            return result
        raise UnsupportedError(f"x ** {o!r} on a dynamic value: only a static int exponent in "
                               "[0, 64] is supported; for others use ws.math.exp2(y * ws.math.log2(x))")

    def __neg__(self):
        t = self.ir_type
        if t.is_bool:
            return Int32(self).__neg__()
        if _is_fp8(t):
            return Float32(self).__neg__()
        return type(self)._wrap(builder().unary("arith.neg", self.value), self.origin)

    def __pos__(self):
        return self

    def __invert__(self):
        return type(self)._wrap(builder().unary("arith.not", self.value), self.origin)

    def __abs__(self):
        if not self.ir_type.is_float and not self.ir_type.is_signed:
            return self
        if _is_fp8(self.ir_type):
            return abs(Float32(self))
        return type(self)._wrap(builder().unary("math.abs", self.value), self.origin)

    def _cmp(self, other, pred):
        a, b, t, bl = _operands(self, other, "comparison", pred)
        if a is None:
            return NotImplemented
        return Boolean._wrap(bl.cmp(pred, a, b), _origin(self, other))

    def __eq__(self, o): return self._cmp(o, "eq")
    def __ne__(self, o): return self._cmp(o, "ne")
    def __lt__(self, o): return self._cmp(o, "lt")
    def __le__(self, o): return self._cmp(o, "le")
    def __gt__(self, o): return self._cmp(o, "gt")
    def __ge__(self, o): return self._cmp(o, "ge")


class Numeric(Scalar):
    """Base of the numeric dynamic types (everything but Boolean)."""
    __slots__ = ()


def _make(name, t, doc):
    base = Scalar if t.is_bool else Numeric
    cls = type(name, (base,), {"ir_type": t, "__slots__": (), "__doc__": doc,
                               "__module__": __name__})
    return cls


Boolean = _make("Boolean", ir.i1, "Dynamic bool (PTX .pred; i1 in the IR).")
Int8 = _make("Int8", ir.i8, "Dynamic signed 8-bit integer (.s8).")
Int16 = _make("Int16", ir.i16, "Dynamic signed 16-bit integer (.s16).")
Int32 = _make("Int32", ir.i32, "Dynamic signed 32-bit integer (.s32), wrapping.")
Int64 = _make("Int64", ir.i64, "Dynamic signed 64-bit integer (.s64), wrapping.")
Uint8 = _make("Uint8", ir.u8, "Dynamic unsigned 8-bit integer (.u8).")
Uint16 = _make("Uint16", ir.u16, "Dynamic unsigned 16-bit integer (.u16).")
Uint32 = _make("Uint32", ir.u32, "Dynamic unsigned 32-bit integer (.u32), wrapping.")
Uint64 = _make("Uint64", ir.u64, "Dynamic unsigned 64-bit integer (.u64), wrapping.")
Float16 = _make("Float16", ir.f16, "Dynamic IEEE half (.f16).")
BFloat16 = _make("BFloat16", ir.bf16, "Dynamic bfloat16 (.bf16): 8 exponent, 7 mantissa bits.")
Float32 = _make("Float32", ir.f32, "Dynamic IEEE single (.f32).")
Float64 = _make("Float64", ir.f64, "Dynamic IEEE double (.f64).")
Float8E4M3FN = _make("Float8E4M3FN", ir.e4m3, "Dynamic OCP FP8 E4M3 (.e4m3; torch.float8_e4m3fn): "
                     "4 exponent, 3 mantissa bits, max 448, no infinity. A storage type: "
                     "arithmetic computes in Float32 (module docstring).")
Float8E5M2 = _make("Float8E5M2", ir.e5m2, "Dynamic OCP FP8 E5M2 (.e5m2; torch.float8_e5m2): 5 "
                   "exponent, 2 mantissa bits, max 57344, with infinities. A storage type: "
                   "arithmetic computes in Float32 (module docstring).")
float8_e4m3fn, float8_e5m2 = Float8E4M3FN, Float8E5M2
"""torch's names for the two FP8 dtypes (``ws.float8_e4m3fn is ws.Float8E4M3FN``)."""

DTYPES = {c.ir_type: c for c in (Boolean, Int8, Int16, Int32, Int64, Uint8, Uint16, Uint32,
                                 Uint64, Float16, BFloat16, Float32, Float64, Float8E4M3FN,
                                 Float8E5M2)}


def dtype_of(t: ir.ScalarType):
    """The dtype class (ws.Float16, ...) of an IR scalar type."""
    return DTYPES[t]


def is_dynamic(x) -> bool:
    return isinstance(x, Scalar)


def _is_np_scalar(x) -> bool:
    return type(x).__module__ == "numpy" and hasattr(x, "dtype") and getattr(x, "ndim", 1) == 0


_UFUNC_OPERATORS = {
    "add": (operator.add, 2), "subtract": (operator.sub, 2), "multiply": (operator.mul, 2),
    "true_divide": (operator.truediv, 2), "divide": (operator.truediv, 2),
    "floor_divide": (operator.floordiv, 2), "remainder": (operator.mod, 2),
    "power": (operator.pow, 2), "less": (operator.lt, 2), "less_equal": (operator.le, 2),
    "greater": (operator.gt, 2), "greater_equal": (operator.ge, 2), "equal": (operator.eq, 2),
    "not_equal": (operator.ne, 2), "bitwise_and": (operator.and_, 2),
    "bitwise_or": (operator.or_, 2), "bitwise_xor": (operator.xor, 2),
    "left_shift": (operator.lshift, 2), "right_shift": (operator.rshift, 2),
    "negative": (operator.neg, 1), "positive": (operator.pos, 1), "invert": (operator.invert, 1),
    "absolute": (abs, 1),
}
_WS_MATH = {"absolute": "abs", "fabs": "abs", "minimum": "min", "maximum": "max"}

_INT_RANGE = {8: (-2**7, 2**7 - 1), 16: (-2**15, 2**15 - 1), 32: (-2**31, 2**31 - 1),
              64: (-2**63, 2**63 - 1)}


def fits(t: ir.ScalarType, v: int) -> bool:
    """True if the Python int ``v`` is representable in integer type ``t``."""
    if t.is_bool:
        return v in (0, 1)
    if t.is_signed:
        lo, hi = _INT_RANGE[t.bits]
        return lo <= v <= hi
    return 0 <= v < 2 ** t.bits


def constant(cls, x, origin=None) -> Scalar:
    """A dynamic constant of dtype ``cls`` holding the static number ``x``."""
    if _is_np_scalar(x):
        x = x.item()
    t = cls.ir_type
    if t.is_int and isinstance(x, float):
        x = _float_to_int(x, t, cls)
    if t.is_int and isinstance(x, int) and not fits(t, x):
        raise _overflow(x, cls, f"the constant {x} as a {cls.__name__}")
    return cls._wrap(builder().constant(t, x), origin)


def _overflow(x: int, cls, what: str):
    from ..errors import OperandError
    from ..core.trace import emit_location
    lo, hi = (0, 1) if cls.ir_type.is_bool else _INT_RANGE[cls.ir_type.bits] \
        if cls.ir_type.is_signed else (0, 2 ** cls.ir_type.bits - 1)
    wider = "ws.Int64" if cls.ir_type.bits < 64 else "a float type"
    return OperandError(f"{what}: expected an int in [{lo}, {hi}] ({cls.__name__}), got {x}\n"
                        f"{emit_location()}\nFix: use a wider type ({wider}(...) on the dynamic "
                        "operand), or a smaller constant.")


def _float_to_int(x: float, t: ir.ScalarType, cls) -> int:
    """A static float converted to an integer type as the GPU converts a dynamic one (PTX
    ``cvt.rzi.sat``, ``convert`` in backend/lower_arith.py): truncated toward zero, saturated
    at the type's range. NaN and infinity are errors: there is no integer to fold them to that
    a Python reader would expect (the GPU gives 0 for NaN)."""
    if x != x or x in (float("inf"), float("-inf")):
        from ..errors import OperandError
        from ..core.trace import emit_location
        raise OperandError(
            f"converting the static float {x!r} to {cls.__name__}\n{emit_location()}\n"
            f"{x!r} has no integer value (on the GPU, cvt.rzi.sat gives "
            f"{'0' if x != x else 'the saturated limit'}).\nFix: check the value before "
            "converting, or convert a dynamic value if the GPU's result is what you want.")
    lo, hi = (_INT_RANGE[t.bits] if t.is_signed else (0, 2 ** t.bits - 1))
    return max(lo, min(hi, int(x)))


def _is_fp8(t) -> bool:
    return t.is_float and t.bits == 8


def arith_type(t: ir.ScalarType) -> ir.ScalarType:
    """The type arithmetic on ``t`` computes in: ``t``, but f32 for the 8-bit floats."""
    return ir.f32 if _is_fp8(t) else t


def promote_types(a: ir.ScalarType, b: ir.ScalarType) -> ir.ScalarType:
    """The C-like common type of two scalar types (see the module docstring); two different
    8-bit floats, or one with an int, give f32."""
    t = _promote(a, b)
    return t if a == b else arith_type(t)


def _promote(a: ir.ScalarType, b: ir.ScalarType) -> ir.ScalarType:
    if a == b:
        return a
    if a.is_bool:
        return b
    if b.is_bool:
        return a
    if a.is_float or b.is_float:
        if a.is_float and b.is_float:
            if a.bits == b.bits:          # f16 with bf16
                return ir.f32
            return a if a.bits > b.bits else b
        return a if a.is_float else b
    if a.bits != b.bits:
        return a if a.bits > b.bits else b
    return a if not a.is_signed else b


def _literal_type(dyn: ir.ScalarType, x) -> ir.ScalarType:
    if isinstance(x, bool):
        return dyn
    if isinstance(x, int):
        if dyn.is_bool:
            return ir.i32 if fits(ir.i32, x) else ir.i64
        if dyn.is_float or fits(dyn, x):
            return dyn
        return ir.i64 if fits(ir.i64, x) else ir.u64
    # float
    return dyn if dyn.is_float else ir.f32


def _coerce(a: Scalar, other, what):
    """Both operands as IR values of one promoted type: (a, b, type), or (None,..) if foreign."""
    return _operands(a, other, what)[:3]


def _operands(a: Scalar, other, what, kind=""):
    """``_coerce``'s (a, b, type) and the builder, its location already set to the user's line
    (one stack walk for the operation; ``what`` and ``kind`` name it in an overflow error)."""
    if isinstance(other, Scalar):
        t = arith_type(promote_types(a.ir_type, other.ir_type))
        b = builder()
        return b.cast(a.value, t), b.cast(other.value, t), t, b
    if _is_np_scalar(other):
        other = other.item()
    if isinstance(other, (bool, int, float)):
        t = arith_type(_literal_type(a.ir_type, other))
        b = builder()
        if t.is_int and isinstance(other, int) and not fits(t, other):
            what = f"{what} {kind}" if kind else what
            raise _overflow(other, DTYPES[t], f"the constant {other} in {what} with a dynamic "
                            f"{type(a).__name__}")
        return b.cast(a.value, t), b.constant(t, other), t, b
    return None, None, None, None


def _origin(a, b):
    if isinstance(a, Scalar) and a.origin is not None:
        return a.origin
    if isinstance(b, Scalar):
        return b.origin
    return None


def as_dynamic(x, cls=None) -> Scalar:
    """``x`` as a dynamic scalar: a Scalar stays; a static number becomes a constant (Int32,
    Int64 or Float32 by rule 3, or ``cls``)."""
    if isinstance(x, Scalar):
        return x if cls is None else cls(x)
    if cls is None:
        if isinstance(x, bool):
            cls = Boolean
        elif isinstance(x, int):
            cls = Int32 if fits(ir.i32, x) else Int64
        elif isinstance(x, float):
            cls = Float32
        else:
            raise not_a_number(x, None, "this operation")
    elif not (isinstance(x, (bool, numbers.Number)) or _is_np_scalar(x)):
        raise not_a_number(x, cls, f"converting to {cls.__name__} (a store into a "
                           f"{cls.__name__} tensor, an operand of type {cls.__name__})")
    return constant(cls, x, Origin(f"the constant {x!r}", user_location(2)))


_OPERATOR_SIGN = {"and": "&", "or": "|", "xor": "^", "shl": "<<", "shr": ">>"}


def _index_text(index) -> str:
    """An index as the user wrote it, for a Fix: ``0``, ``i, j``, ``1:3``."""
    parts = index if isinstance(index, tuple) else (index,)
    return ", ".join(str(p) if isinstance(p, int) else "i" for p in parts)


def not_a_number(x, cls, what: str):
    """The OperandError for a value that is neither a number nor a dynamic scalar given where
    one is converted to ``cls`` (None: a dtype chosen by rule 3): ``ws.Float32("1.5")``, a str
    stored into a tensor element."""
    from ..errors import OperandError
    from ..core.trace import emit_location
    from ..core.unbound import Unbound
    if isinstance(x, Unbound):
        return x.error()        # a variable with no value on this path: say why
    into = f"a {cls.__name__}" if cls is not None else "a dynamic scalar"
    fix = (f"convert it on the host first (ws.{cls.__name__ if cls else 'Float32'}(float(s)) for "
           "a numeric string)" if isinstance(x, (str, bytes)) else
           "pass a Python or numpy number, or a dynamic scalar (x[i], a ws.Int32 parameter)")
    return OperandError(f"{what}: expected a number or a dynamic scalar to make {into} of, got "
                        f"{type(x).__name__} {x!r:.60}\n{emit_location()}\nFix: {fix}.")


def needs_static_error(value: Scalar, what: str, fix: Optional[str] = None) -> BindingTimeError:
    """A BindingTimeError for ``value`` used where a static value is needed, with its origin.
    ``fix``: a construct-specific alternative (e.g. "use range(n) for a dynamic loop")."""
    from ..core.source import format_location
    loc = user_location(3)
    origin = value.origin
    why = f"it became dynamic at: {origin}" if origin else "it is computed on the GPU at run time"
    alt = f" Or: {fix}." if fix else ""
    name = type(value).__name__
    article = "an" if name[:1] in "AEIOUaeiou" else "a"
    msg = (f"{what}: this value is dynamic ({article} {name} value known only on the GPU "
           f"at run time), but a static (compile-time) value is needed here.\n"
           f"{format_location(loc)}\n"
           f"Why dynamic: {why}.\n"
           "Fix: make it static: annotate the parameter it comes from as ws.Static[...] (or keep it "
           f"in a static config object).{alt}")
    return BindingTimeError(msg, where=str(loc) if loc else None)


def _scalar_rewrap(self, value):
    return type(self)._wrap(value, self.origin)


Scalar._rewrap = _scalar_rewrap
