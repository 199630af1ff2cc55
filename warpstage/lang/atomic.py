"""Atomic read-modify-write on global or shared memory (PTX ISA "Parallel Synchronization and
Communication Instructions": atom; CUDA ``atomicAdd`` and friends).

Each returns the value the memory held before this thread's update. Relaxed ordering, GPU
scope (``atom.global.add.u32``; the compare-and-swap prints as ``atom.relaxed.sys.cas``): use
``ws.arch.fence_acq_rel()`` to order other accesses around them. Types: Int32, Uint32, Int64,
Uint64, Float32, Float64 (floats: add and exch only).
"""
from __future__ import annotations

from ..core.trace import builder
from .operands import operand_error
from .pointer import Pointer
from .scalars import DTYPES, Scalar, as_dynamic

__all__ = ["atomic_add", "atomic_min", "atomic_max", "atomic_exch", "atomic_and", "atomic_or",
           "atomic_xor", "atomic_cas"]

_TYPES = ("i32", "u32", "i64", "u64", "f32", "f64")


def _pointer(ptr, what: str) -> Pointer:
    if not isinstance(ptr, Pointer):
        raise operand_error(what, type(ptr).__name__, "a ws.Pointer into global or shared memory",
                            "pass e.g. tensor.ptr + i, or a shared array's .ptr + i")
    t = ptr.value.type.pointee
    if t.name not in _TYPES or ptr.space not in ("global", "shared", "generic"):
        raise operand_error(what, f"a pointer to {t} in {ptr.space} memory",
                            "a global or shared pointer to Int32, Uint32, Int64, Uint64, Float32 "
                            "or Float64", "atomics on other types are not supported by PTX atom")
    return ptr


def _value(v, t, what: str):
    cls = DTYPES[t]
    if isinstance(v, Scalar):
        return (v if v.ir_type == t else cls(v)).value
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise operand_error(what, v, f"a number or a dynamic {cls.__name__}", "pass a number")
    return as_dynamic(v, cls).value


def _rmw(kind: str, ptr, value):
    what = f"ws.atomic_{kind}()"
    p = _pointer(ptr, what)
    t = p.value.type.pointee
    if t.is_float and kind not in ("add", "exch"):
        raise operand_error(what, f"a pointer to {t}", "an integer pointer (floats support "
                            "atomic_add and atomic_exch only)", "use an integer type")
    old = builder(what).atomic(kind, p.value, _value(value, t, f"{what}'s value"))
    return DTYPES[t]._wrap(old)


def atomic_add(ptr, value):
    """``old = *ptr; *ptr = old + value`` atomically; returns old (PTX ``atom.add``)."""
    return _rmw("add", ptr, value)


def atomic_min(ptr, value):
    """``*ptr = min(*ptr, value)`` atomically (signed or unsigned by type); returns the old value
    (PTX ``atom.min``)."""
    return _rmw("min", ptr, value)


def atomic_max(ptr, value):
    """``*ptr = max(*ptr, value)`` atomically; returns the old value (PTX ``atom.max``)."""
    return _rmw("max", ptr, value)


def atomic_exch(ptr, value):
    """``*ptr = value`` atomically; returns the old value (PTX ``atom.exch``)."""
    return _rmw("exch", ptr, value)


def atomic_and(ptr, value):
    """``*ptr &= value`` atomically; returns the old value (PTX ``atom.and``)."""
    return _rmw("and", ptr, value)


def atomic_or(ptr, value):
    """``*ptr |= value`` atomically; returns the old value (PTX ``atom.or``)."""
    return _rmw("or", ptr, value)


def atomic_xor(ptr, value):
    """``*ptr ^= value`` atomically; returns the old value (PTX ``atom.xor``)."""
    return _rmw("xor", ptr, value)


def atomic_cas(ptr, compare, value):
    """``old = *ptr; if old == compare: *ptr = value`` atomically; returns old (PTX
    ``atom.cas``; integers only)."""
    what = "ws.atomic_cas()"
    p = _pointer(ptr, what)
    t = p.value.type.pointee
    if t.is_float:
        raise operand_error(what, f"a pointer to {t}", "an integer pointer",
                            "compare-and-swap the bits: ws.Pointer to Uint32 and bitcast")
    old = builder(what).atomic_cas(p.value, _value(compare, t, f"{what}'s compare"),
                                   _value(value, t, f"{what}'s value"))
    return DTYPES[t]._wrap(old)
