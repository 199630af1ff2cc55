"""Dynamic pointers: ``ws.Pointer[ws.Float32]`` (global memory unless another space is named).

A pointer is a dynamic leaf wrapping one SSA value of type ``!ptr<T, space>``. Indexing reads and
writes elements: ``p[i]`` loads ``*(p + i)``, ``p[i] = v`` stores; ``p + i`` offsets by ``i``
elements (not bytes).
"""
from __future__ import annotations

from .. import ir
from ..core.trace import builder
from .scalars import DTYPES, Scalar, as_dynamic, dtype_of

__all__ = ["Pointer", "PointerSpec"]


class PointerSpec:
    """The annotation ``ws.Pointer[dtype, space]``: a dynamic parameter type (rule 2)."""

    def __init__(self, dtype, space: str = "global"):
        self.dtype = dtype
        self.space = space
        self.ir_type = ir.PointerType(dtype.ir_type, space)

    def __repr__(self) -> str:
        return f"ws.Pointer[{self.dtype.__name__}, {self.space!r}]"

    def __eq__(self, o):
        return isinstance(o, PointerSpec) and (o.dtype, o.space) == (self.dtype, self.space)

    def __hash__(self):
        return hash(("PointerSpec", self.dtype, self.space))


class _PointerMeta(type):
    def __getitem__(cls, item):
        if isinstance(item, tuple):
            return PointerSpec(*item)
        return PointerSpec(item)


class Pointer(metaclass=_PointerMeta):
    """A dynamic typed pointer (PTX: a 64-bit address in the given state space)."""

    __slots__ = ("value", "origin")

    def __getattr__(self, name):          # only for attributes it does not have (error path)
        from .tma import missing_attribute
        raise missing_attribute(self, name)

    @classmethod
    def _wrap(cls, value: ir.Value, origin=None) -> "Pointer":
        obj = object.__new__(cls)
        obj.value = value
        obj.origin = origin
        return obj

    def _rewrap(self, value: ir.Value) -> "Pointer":
        return Pointer._wrap(value, self.origin)

    @property
    def dtype(self):
        """The element dtype class (ws.Float32, ...)."""
        return dtype_of(self.value.type.pointee)

    @property
    def space(self) -> str:
        return self.value.type.space

    def __add__(self, offset) -> "Pointer":
        off = as_dynamic(offset)
        if not off.ir_type.is_int:
            raise TypeError(f"pointer offsets are integers (elements), got {type(off).__name__}")
        return Pointer._wrap(builder().ptr_offset(self.value, off.value), self.origin)

    __radd__ = __add__

    def __getitem__(self, i):
        b = builder()
        p = self.value if _is_zero(i) else (self + i).value
        t = self.value.type.pointee
        return DTYPES[t]._wrap(b.load(p))

    def __setitem__(self, i, v):
        if isinstance(v, (tuple, list)):
            from ..errors import OperandError
            from ..core.trace import emit_location
            raise OperandError(
                f"storing a {type(v).__name__} of {len(v)} values into one element of a "
                f"{DTYPES[self.value.type.pointee].__name__} tensor/pointer\n{emit_location()}\n"
                "An element holds one scalar. (ws.arch.thread_idx(), block_idx() and block_dim() "
                "return (x, y, z) tuples.)\nFix: store one value, e.g. thread_idx()[0].")
        t = self.value.type.pointee
        val = as_dynamic(v, DTYPES[t]) if not isinstance(v, Scalar) or v.ir_type != t else v
        b = builder()
        p = self.value if _is_zero(i) else (self + i).value
        b.store(p, val.value)

    def __bool__(self):
        raise TypeError("a dynamic pointer has no static truth value")

    def __repr__(self) -> str:
        return f"<dynamic Pointer {self.value.type}>"


def _is_zero(i) -> bool:
    return isinstance(i, int) and not isinstance(i, bool) and i == 0
