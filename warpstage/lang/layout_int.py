"""Integers and integer tuples of the layout algebra (CuTe's ``IntTuple``), with static folding.

A *leaf* is a static Python ``int`` or a dynamic integer: a ``ws.Int32``/``ws.Int64`` value
while tracing, or on the host a ``ws.Int32(n)`` (a ``HostScalar``: a dynamic value whose number
is known to the host, passed to the kernel as a parameter). A *tuple* is a Python tuple of
leaves and tuples, nested to any depth.

The arithmetic here is what keeps layouts free on the GPU: on two static leaves it runs in
Python; on a dynamic leaf it emits IR, except where a static operand makes the result known
(``x * 0 = 0``, ``x * 1 = x``, ``x + 0 = x``, ``x // 1 = x``, ``x % 1 = 0``), and a division
or modulo by a static power of two becomes a shift or a mask (exact for Python's floor
semantics on two's-complement integers). On the host, a ``HostScalar`` operand gives a
``HostScalar`` result (the value is computed; it stays dynamic). Decisions of the algebra
(``coalesce`` merging modes, ``composition`` splitting them) never read a dynamic value, on
the host or in a trace: they need static leaves, and say so when they get dynamic ones.
"""
from __future__ import annotations

from ..errors import BindingTimeError
from .scalars import HostScalar, Int32, Int64, Scalar

__all__ = ["is_static", "is_dynamic_int", "is_int", "is_tuple", "mul", "add", "floordiv", "mod",
           "ceil_div", "shape_div", "product", "flatten", "rank", "depth", "static_value",
           "prefix_product", "congruent", "tuple_repr", "unflatten_like", "product_each",
           "require_static"]


def is_static(x) -> bool:
    """True for a static Python int (bool excluded)."""
    return isinstance(x, int) and not isinstance(x, bool)


def is_dynamic_int(x) -> bool:
    """True for a dynamic integer: a traced integer scalar or a host ``ws.Int32(n)``."""
    if isinstance(x, Scalar):
        return x.ir_type.is_int
    return isinstance(x, HostScalar) and x.dtype.ir_type.is_int


def is_int(x) -> bool:
    """A leaf of an integer tuple: a static or dynamic integer."""
    return is_static(x) or is_dynamic_int(x)


def is_tuple(x) -> bool:
    return type(x) is tuple


def static_value(x):
    """``x`` if it is a static int, else None."""
    return x if is_static(x) else None


def require_static(x, what: str, fix: str) -> int:
    """``x`` as a static int, or a ``BindingTimeError`` saying ``what`` needs it and ``fix``."""
    if is_static(x):
        return x
    from .scalars import needs_static_error
    if isinstance(x, Scalar):
        raise needs_static_error(x, what, fix)
    raise BindingTimeError(f"{what}: got the dynamic value {x!r}, but a static int is needed.\n"
                           f"Fix: {fix}.")


def _host(op, a, b):
    if isinstance(a, Scalar) or isinstance(b, Scalar):
        h = a if isinstance(a, HostScalar) else b
        raise BindingTimeError(
            f"the host value {h!r} (a dynamic layout leaf made on the host) reached traced code "
            "without being passed as a parameter, e.g. inside a static object: its value is not "
            "on the GPU.\nFix: pass the layout (or the object holding it) as a kernel argument, "
            "or make the leaf static (a plain int).")
    av = a.value if isinstance(a, HostScalar) else a
    bv = b.value if isinstance(b, HostScalar) else b
    dtype = Int64 if any(isinstance(v, HostScalar) and v.dtype is Int64 for v in (a, b)) else Int32
    return HostScalar(dtype, op(av, bv))


def _pow2(x) -> int:
    """log2(x) if x is a static power of two >= 1, else -1."""
    return x.bit_length() - 1 if is_static(x) and x > 0 and x & (x - 1) == 0 else -1


def mul(a, b):
    """a * b, folded (see the module docstring)."""
    if is_static(a) and is_static(b):
        return a * b
    if (is_static(a) and a == 0) or (is_static(b) and b == 0):
        return 0
    if is_static(a) and a == 1:
        return b
    if is_static(b) and b == 1:
        return a
    if isinstance(a, HostScalar) or isinstance(b, HostScalar):
        return _host(lambda x, y: x * y, a, b)
    return a * b


def add(a, b):
    """a + b, folded."""
    if is_static(a) and is_static(b):
        return a + b
    if is_static(a) and a == 0:
        return b
    if is_static(b) and b == 0:
        return a
    if isinstance(a, HostScalar) or isinstance(b, HostScalar):
        return _host(lambda x, y: x + y, a, b)
    return a + b


def floordiv(a, b):
    """a // b (floor), folded; a static power-of-two divisor becomes an arithmetic shift."""
    if is_static(a) and is_static(b):
        return a // b
    if is_static(b) and b == 1:
        return a
    if is_static(a) and a == 0:
        return 0
    if isinstance(a, HostScalar) or isinstance(b, HostScalar):
        return _host(lambda x, y: x // y, a, b)
    k = _pow2(b)
    return a >> k if k > 0 else a // b


def mod(a, b):
    """a % b (sign of the divisor), folded; a static power-of-two modulus becomes a mask."""
    if is_static(a) and is_static(b):
        return a % b
    if (is_static(b) and b == 1) or (is_static(a) and a == 0):
        return 0
    if isinstance(a, HostScalar) or isinstance(b, HostScalar):
        return _host(lambda x, y: x % y, a, b)
    k = _pow2(b)
    return a & (b - 1) if k > 0 else a % b


def ceil_div(a, b):
    """ceil(a / b) for a >= 0, b > 0, folded. A static ``b`` below 1 raises OperandError."""
    if is_static(b) and b < 1:
        from .operands import operand_error
        raise operand_error("ws.layout.ceil_div()'s divisor", b, "a divisor of at least 1",
                            "divide by a positive extent")
    if is_static(a) and is_static(b):
        return -(-a // b)
    if is_static(b) and b == 1:
        return a
    return floordiv(add(a, b - 1) if is_static(b) else add(a, add(b, -1)), b)


def shape_div(a, b):
    """CuTe's ``shape_div``: a / b when b divides a, 1 when a divides b (static); for a dynamic
    operand, a // b (the algebra's divisibility conditions are then the caller's promise)."""
    if is_static(a) and is_static(b):
        if b != 0 and a % b == 0:
            return a // b
        if a != 0 and b % a == 0:
            return 1
        raise ValueError(f"shape_div: neither of {a} and {b} divides the other")
    return floordiv(a, b)


def product(t):
    """The product of all leaves of ``t`` (1 for the empty tuple), folded."""
    if is_tuple(t):
        out = 1
        for x in t:
            out = mul(out, product(x))
        return out
    return t


def product_each(t) -> tuple:
    """The product of each top-level mode of ``t``."""
    return tuple(product(x) for x in t) if is_tuple(t) else (t,)


def flatten(t) -> tuple:
    """The leaves of ``t`` in order, as a flat tuple (a leaf gives a 1-tuple)."""
    if not is_tuple(t):
        return (t,)
    out = ()
    for x in t:
        out += flatten(x)
    return out


def unflatten_like(flat, profile):
    """Nest the flat sequence ``flat`` like ``profile`` (inverse of ``flatten``)."""
    it = iter(flat)

    def build(p):
        return tuple(build(x) for x in p) if is_tuple(p) else next(it)
    return build(profile)


def rank(t) -> int:
    """Number of top-level modes (1 for a leaf)."""
    return len(t) if is_tuple(t) else 1


def depth(t) -> int:
    """Nesting depth: 0 for a leaf, 1 + the deepest mode for a tuple."""
    return 1 + max((depth(x) for x in t), default=0) if is_tuple(t) else 0


def congruent(a, b) -> bool:
    """True if ``a`` and ``b`` have the same tuple profile."""
    if is_tuple(a) != is_tuple(b):
        return False
    if not is_tuple(a):
        return True
    return len(a) == len(b) and all(congruent(x, y) for x, y in zip(a, b))


def prefix_product(shape, init=1):
    """The exclusive prefix products of ``shape``, nested like it: the column-major (CuTe's
    LayoutLeft) compact stride of ``shape``. A mode of static size 1 gets stride 0, as CuTe
    gives it (its coordinate is always 0)."""
    cur = init

    def walk(s):
        nonlocal cur
        if is_tuple(s):
            return tuple(walk(x) for x in s)
        d = 0 if is_static(s) and s == 1 else cur
        cur = mul(cur, s)
        return d
    return walk(shape)


def tuple_repr(t) -> str:
    """CuTe's notation: static leaves as numbers, dynamic ones as ``?``; tuples in parens."""
    if is_tuple(t):
        inner = ",".join(tuple_repr(x) for x in t)
        return f"({inner})"
    if is_static(t):
        return str(t)
    if isinstance(t, HostScalar):
        return f"?{t.value}"
    return "?"
