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

In-flight fragments. ``ws.wgmma.mma`` returns a fragment marked *in flight* (``in_flight``: the
wgmma's ``file:line``): its registers are undefined until ``ws.wgmma.wait_group`` completes the
group, so reading an element, iterating, slicing, arithmetic, ``to``/``map``/``with_element`` and
``frag[i] = x`` raise ``ws.OperandError`` at the user's line. Only ``len``, passing it to another
``wgmma.mma`` (as the accumulator), to ``wgmma.fence`` (which keeps the mark) and to
``wgmma.wait_group`` (which returns unmarked fragments) are allowed. The mark follows the
fragment through the value protocol: a fragment rebuilt from a marked one (passed into a
``@ws.jit`` function, carried through a dynamic ``if`` or loop) stays marked, and a merge of
paths is marked if any path is (``__new_from_merge__``): after a dynamic loop whose body issues
a wgmma, or whose entry value is in flight, the fragment is in flight (the loop may run zero
times). Inside a loop body the carried fragment has the mark of its value before the loop. The
mark is not part of the static key, so in-flight and waited paths merge. The simulator checks
the waits themselves (docs/wgmma.md, "Checks").

Packed fragments. ``Fragment.pack(dtype)`` converts an f32 fragment of even length to a
``PackedFragment``: its elements 2i and 2i + 1 rounded to bf16 (or f16) in one 32-bit register,
2i in bits 0-15, by one ``cvt.rn.bf16x2.f32`` (``cvt.rn.f16x2.f32``) per pair. That is the form
in which wgmma reads an A fragment from registers, so a packed fragment carried through loops and
fences reaches the ``wgmma.mma_async`` with no 16-bit scalars in between for ptxas to repack
(docs/wgmma.md, "Packed A fragments").
"""
from __future__ import annotations

from ..errors import OperandError
from ..core.source import format_location, user_location
from .operands import operand_error, static_int
from ..core.trace import builder
from ..ir.ops import PACK_TYPES
from ..ir.types import u16
from .scalars import DTYPES, Scalar, Uint32, as_dynamic

__all__ = ["Fragment", "PackedFragment"]


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

    __slots__ = ("dtype", "_values", "in_flight")

    def __init__(self, dtype, values, in_flight=None):
        self.dtype = _dtype_of(dtype, "ws.mma.Fragment's dtype")
        self.in_flight = in_flight
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
        self._check_ready("iterating over")
        return iter(list(self._values))

    def _check_ready(self, how: str) -> None:
        """Raise OperandError if this fragment holds the results of a wgmma not yet waited for."""
        if self.in_flight is not None:
            loc = user_location()
            at = format_location(loc)
            raise OperandError(
                f"the accumulators of the wgmma at {self.in_flight} are read ({how} them) before "
                "ws.wgmma.wait_group; their registers are undefined until the wgmma-group "
                "completes.\n" + (at + "\n" if at else "")
                + "Fix: ws.wgmma.commit_group(), then acc = ws.wgmma.wait_group(0, acc) and use "
                "the fragment wait_group returns (only passing it to ws.wgmma.mma, fence or "
                "wait_group is allowed before that).", where=str(loc) if loc else None)

    def _index(self, i) -> int:
        n = len(self._values)
        return static_int(i, "a fragment index", range(-n, n), f"a static int in [{-n}, {n})",
                          "registers cannot be indexed dynamically; unroll with ws.static_range")

    def __getitem__(self, i):
        self._check_ready("indexing")
        if isinstance(i, slice):
            return Fragment(self.dtype, self._values[i])
        return self._values[self._index(i)]

    def __setitem__(self, i, value) -> None:
        self._check_ready("assigning an element of")
        self._values[self._index(i)] = as_dynamic(value, self.dtype)

    def with_element(self, i, value) -> "Fragment":
        """A copy with element ``i`` (static) replaced by ``value``."""
        self._check_ready("with_element on")
        vals = list(self._values)
        vals[self._index(i)] = value
        return Fragment(self.dtype, vals)

    def to(self, dtype) -> "Fragment":
        """Each element converted to ``dtype`` (``arith.cast``; floats round to nearest even)."""
        self._check_ready("converting")
        dtype = _dtype_of(dtype, "Fragment.to's dtype")
        return Fragment(dtype, [dtype(v) for v in self._values])

    def pack(self, dtype) -> "PackedFragment":
        """The elements rounded to nearest even to ``dtype`` (ws.BFloat16 or ws.Float16), two per
        32-bit register: register i holds elements 2i (bits 0-15) and 2i + 1 (bits 16-31), made
        by one ``cvt.rn.bf16x2.f32`` / ``cvt.rn.f16x2.f32`` (PTX ISA "cvt") each. The fragment
        must be Float32 of even length. Raises OperandError otherwise."""
        self._check_ready("packing")
        what = "Fragment.pack()"
        dtype = _dtype_of(dtype, f"{what}'s dtype")
        if dtype.ir_type.name not in PACK_TYPES:
            raise operand_error(f"{what}'s dtype", dtype.__name__, "ws.BFloat16 or ws.Float16",
                                "pack to a 16-bit float; use .to(dtype) for other conversions")
        if self.dtype.ir_type.name != "f32" or len(self) % 2:
            raise operand_error(f"{what}'s fragment", repr(self), "a Float32 fragment of even "
                                "length (pairs of f32 -> one b32 register)",
                                "pack the f32 accumulator itself, e.g. acc[0:8].pack(ws.BFloat16)")
        b = builder(what)
        v = self._values
        return PackedFragment(dtype, [Uint32._wrap(b.cvt_pack(v[i].value, v[i + 1].value,
                                                               dtype.ir_type.name))
                                      for i in range(0, len(v), 2)])

    def map(self, fn) -> "Fragment":
        """``Fragment(dtype, [fn(x) for x in self])`` with the dtype of ``fn``'s first result."""
        self._check_ready("mapping over")
        out = [fn(v) for v in self._values]
        dtype = type(out[0]) if out and isinstance(out[0], Scalar) else self.dtype
        return Fragment(dtype, out)

    def _zip(self, other, fn, what):
        self._check_ready(f"computing {what} with")
        if isinstance(other, Fragment):
            other._check_ready(f"computing {what} with")
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
        return Fragment(self.dtype, values, self.in_flight)   # a rebuild keeps the mark

    def __new_from_merge__(self, paths, values):
        """At a merge of paths (an ``if``'s branches, a loop's entry and iteration values): in
        flight if the fragment is in flight on any path (the first such wgmma is named)."""
        marks = [p.in_flight for p in paths if isinstance(p, Fragment) and p.in_flight]
        return Fragment(self.dtype, values, marks[0] if marks else None)

    def __static_key__(self):
        return ("Fragment", self.dtype.ir_type.name, len(self._values))

    def __repr__(self) -> str:
        if self.in_flight is not None:
            return (f"<Fragment {DTYPES[self.dtype.ir_type].__name__}[{len(self._values)}] in "
                    f"flight (wgmma at {self.in_flight})>")
        return f"<Fragment {DTYPES[self.dtype.ir_type].__name__}[{len(self._values)}]>"


class PackedFragment:
    """``2 n`` 16-bit floats of ``dtype`` (BFloat16 or Float16) held by one thread in ``n``
    32-bit registers (Uint32 ``registers``): register i holds element 2i in bits 0-15 and
    element 2i + 1 in bits 16-31, the packing of PTX's ``.f16x2`` / ``.bf16x2`` operands.

    Made by ``Fragment.pack`` (or ``ws.wgmma.accumulator_to_a(..., packed=True)``); taken as
    it is by ``ws.wgmma.mma`` as the A fragment (8 elements, 4 registers), ``fence`` and
    ``wait_group``. ``len`` is the number of elements; ``unpack()`` gives them back as a
    ``Fragment`` (two bit operations per element: for reading, not for the hot loop). It
    follows the value protocol (the leaves are the registers), so it is carried through dynamic
    control flow and ``@ws.jit`` calls like a ``Fragment``.
    """

    __slots__ = ("dtype", "registers")

    def __init__(self, dtype, registers):
        self.dtype = _dtype_of(dtype, "ws.PackedFragment's dtype")
        if self.dtype.ir_type.name not in PACK_TYPES:
            raise operand_error("ws.PackedFragment's dtype", self.dtype.__name__,
                                "ws.BFloat16 or ws.Float16", "pack 16-bit floats only")
        self.registers = [r if isinstance(r, Scalar) and type(r) is Uint32
                          else as_dynamic(r, Uint32) for r in registers]

    def __len__(self) -> int:
        return 2 * len(self.registers)

    def unpack(self) -> Fragment:
        """The ``2 n`` elements as a Fragment of ``dtype`` (element 2i from bits 0-15 of
        register i)."""
        b = builder("PackedFragment.unpack()")
        out = []
        for r in self.registers:
            for half in (r & 0xFFFF, r >> 16):
                out.append(self.dtype._wrap(b.bitcast(b.cast(half.value, u16), self.dtype.ir_type)))
        return Fragment(self.dtype, out)

    # value protocol: the leaves are the registers; the skeleton is (dtype, register count)
    def __extract_values__(self):
        return list(self.registers)

    def __new_from_values__(self, values):
        return PackedFragment(self.dtype, values)

    def __static_key__(self):
        return ("PackedFragment", self.dtype.ir_type.name, len(self.registers))

    def __repr__(self) -> str:
        return (f"<PackedFragment {DTYPES[self.dtype.ir_type].__name__}[{len(self)}] in "
                f"{len(self.registers)} b32 registers>")
