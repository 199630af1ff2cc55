"""Register fragments: a thread's fixed-size array of dynamic scalars of one dtype — the operand
and accumulator fragments of ``mma.sync`` and ``wgmma`` (``ws.mma``).

A fragment's length and dtype are static; its elements are dynamic values held in registers. It
follows the value protocol (its leaves are its elements), so it passes into ``@ws.jit``
functions and is carried through dynamic ``if``/``for``/``while`` like any scalar::

    acc = ws.mma.Fragment.filled(ws.Float32, 4, 0.0)     # 4 f32 registers, zeroed
    for k in range(n_k):                                    # a dynamic loop carries acc
        acc = ws.mma.mma_sync(a_frag, b_frag, acc)
    acc = acc * scale                                       # elementwise, returns a new fragment
    out = acc.to(ws.BFloat16)                               # conversion, element by element

Indices are static ints (registers cannot be indexed dynamically). ``frag[i] = x`` replaces one
element in place; the functional forms (``with_element``, arithmetic) return new fragments.
"""
from __future__ import annotations

from .operands import operand_error, static_int
from .scalars import DTYPES, Scalar, as_dynamic

__all__ = ["Fragment"]


def _dtype_of(dtype, what):
    if isinstance(dtype, type) and issubclass(dtype, Scalar) and dtype.ir_type is not None:
        return dtype
    raise operand_error(what, dtype, "a warpstage dtype class such as ws.Float32 or ws.BFloat16",
                        "pass the dtype class itself, e.g. ws.Float32")


class Fragment:
    """``n`` (static) dynamic scalars of ``dtype`` held by one thread.

    Build with ``Fragment.filled(dtype, n, value)`` or ``Fragment(dtype, values)`` (each value is
    converted to ``dtype``). Supports ``len``, static indexing and slicing, iteration,
    ``frag[i] = x``, ``.to(dtype)``, ``.map(fn)`` and elementwise ``+ - * /`` with a scalar or a
    fragment of the same length. Raises ``ws.OperandError`` for a non-static or out-of-range
    index and for length mismatches.
    """

    __slots__ = ("dtype", "_values")

    def __init__(self, dtype, values):
        self.dtype = _dtype_of(dtype, "ws.mma.Fragment's dtype")
        self._values = [as_dynamic(v, self.dtype) if not (isinstance(v, Scalar) and type(v) is self.dtype)
                        else v for v in values]

    @classmethod
    def filled(cls, dtype, n: int, value=0) -> "Fragment":
        """A fragment of ``n`` (static, >= 1) copies of ``value`` converted to ``dtype``."""
        n = static_int(n, "ws.mma.Fragment.filled's length", range(1, 1 << 16), "a static int >= 1",
                       "pass the fragment's register count, e.g. 4 for an m16n8 f32 accumulator")
        dtype = _dtype_of(dtype, "ws.mma.Fragment.filled's dtype")
        v = as_dynamic(value, dtype)
        return cls(dtype, [v] * n)

    def __len__(self) -> int:
        return len(self._values)

    def __iter__(self):
        return iter(list(self._values))

    def _index(self, i) -> int:
        n = len(self._values)
        return static_int(i, "a fragment index", range(-n, n), f"a static int in [{-n}, {n})",
                          "registers cannot be indexed dynamically; unroll with ws.static_range")

    def __getitem__(self, i):
        if isinstance(i, slice):
            return Fragment(self.dtype, self._values[i])
        return self._values[self._index(i)]

    def __setitem__(self, i, value) -> None:
        self._values[self._index(i)] = as_dynamic(value, self.dtype)

    def with_element(self, i, value) -> "Fragment":
        """A copy with element ``i`` (static) replaced by ``value``."""
        vals = list(self._values)
        vals[self._index(i)] = value
        return Fragment(self.dtype, vals)

    def to(self, dtype) -> "Fragment":
        """Each element converted to ``dtype`` (``arith.cast``; floats round to nearest even)."""
        dtype = _dtype_of(dtype, "Fragment.to's dtype")
        return Fragment(dtype, [dtype(v) for v in self._values])

    def map(self, fn) -> "Fragment":
        """``Fragment(dtype, [fn(x) for x in self])`` with the dtype of ``fn``'s first result."""
        out = [fn(v) for v in self._values]
        dtype = type(out[0]) if out and isinstance(out[0], Scalar) else self.dtype
        return Fragment(dtype, out)

    def _zip(self, other, fn, what):
        if isinstance(other, Fragment):
            if len(other) != len(self):
                raise operand_error(f"fragment {what}", f"lengths {len(self)} and {len(other)}",
                                    "fragments of equal length", "combine fragments of one shape")
            return Fragment(self.dtype, [fn(a, b) for a, b in zip(self._values, other._values)])
        return Fragment(self.dtype, [fn(a, other) for a in self._values])

    def __add__(self, o): return self._zip(o, lambda a, b: a + b, "+")
    def __sub__(self, o): return self._zip(o, lambda a, b: a - b, "-")
    def __mul__(self, o): return self._zip(o, lambda a, b: a * b, "*")
    def __truediv__(self, o): return self._zip(o, lambda a, b: a / b, "/")
    def __radd__(self, o): return self._zip(o, lambda a, b: b + a, "+")
    def __rmul__(self, o): return self._zip(o, lambda a, b: b * a, "*")

    # value protocol: the leaves are the elements; the skeleton is (dtype, length)
    def __extract_values__(self):
        return list(self._values)

    def __new_from_values__(self, values):
        return Fragment(self.dtype, values)

    def __static_key__(self):
        return ("Fragment", self.dtype.ir_type.name, len(self._values))

    def __repr__(self) -> str:
        return f"<Fragment {DTYPES[self.dtype.ir_type].__name__}[{len(self._values)}]>"
