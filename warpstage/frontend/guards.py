"""Guards: the globals and closure variables that traced code read, checked on every cache hit.

Traced code reads globals live, so they are static and part of the specialization: a change to a
module-level constant (or to a config object's attribute) must recompile, never reuse a stale
kernel. A guard stores the value's identity and its static key; a hit compares identity first
(cheap) and recomputes the key only for mutable objects or when the identity changed.
"""
from __future__ import annotations

import builtins
import dis
import types

from .static_key import UnkeyableError, static_key

__all__ = ["collect_guards", "guards_hold"]

_MISSING = object()
_IMMUTABLE = (type(None), bool, int, float, str, bytes, tuple, frozenset, type, types.ModuleType,
              types.FunctionType, types.BuiltinFunctionType)
_IMMUTABLE_TYPES = frozenset(_IMMUTABLE)    # exact types: one set lookup on the hot path


_GLOBAL_OPS = {"LOAD_GLOBAL", "LOAD_NAME", "STORE_GLOBAL", "DELETE_GLOBAL"}
_NAMES_CACHE: dict = {}


def _names(code, out: set) -> None:
    """The global names ``code`` (and the code nested in it) reads — not attribute names, which
    share ``co_names`` with globals (guarding those would retrace whenever an unrelated global
    of the same name changed)."""
    names = _NAMES_CACHE.get(code)
    if names is None:
        names = {ins.argval for ins in dis.get_instructions(code) if ins.opname in _GLOBAL_OPS}
        _NAMES_CACHE[code] = names
    out.update(names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            _names(c, out)


def collect_guards(functions) -> tuple:
    """Guards for the globals and closure cells read by ``functions``:
    tuple of (container, name, value, key, is_cell)."""
    guards = []
    seen = set()
    for fn in functions:
        fn = getattr(fn, "__wrapped__", fn) if not hasattr(fn, "__code__") else fn
        code = getattr(fn, "__code__", None)
        if code is None:
            continue
        names: set = set()
        _names(code, names)
        g = fn.__globals__
        for n in sorted(names):
            if (id(g), n) in seen or n.startswith("__ws"):
                continue
            seen.add((id(g), n))
            v = g.get(n, _MISSING)
            if v is _MISSING:
                continue            # a builtin or an attribute name
            guards.append((g, n, v, _key(v), False))
        for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
            try:
                v = cell.cell_contents
            except ValueError:
                continue
            guards.append((cell, name, v, _key(v), True))
    return tuple(guards)


def _key(v):
    try:
        return static_key(v)
    except (UnkeyableError, RecursionError):
        return ("unkeyable", id(v))


def guards_hold(guards) -> bool:
    """True if every guarded global/closure value is unchanged (by identity or static key)."""
    for container, name, value, key, is_cell in guards:
        if is_cell:
            try:
                cur = container.cell_contents
            except ValueError:
                return False
        else:
            cur = container.get(name, _MISSING)
        if cur is value and (type(cur) in _IMMUTABLE_TYPES or isinstance(cur, _IMMUTABLE)):
            continue
        if cur is _MISSING or _key(cur) != key:
            return False
    return True


del builtins
