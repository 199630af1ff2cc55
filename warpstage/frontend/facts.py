"""Facts a trace reads through attributes: ``helpers.N``, ``Config.TILE``, ``cfg.method``.

The rewrite (rewrite.py) turns every attribute read ``x.name`` in traced code (and every call
``getattr(x, name[, default])``) into ``__ws_cf__.read_attr(x, "name")``, which returns ``getattr(x, name)`` and, while a kernel is
being traced, records what the specialization now depends on:

- an attribute of a module (not warpstage's own, nor numpy's or the standard library's): a
  guard on the module's namespace, like a global of that module;
- an attribute found on a class — ``Config.TILE``, or ``cfg.TILE`` / ``cfg.load`` where the
  instance has no attribute of that name — a guard on the class attribute (looked up in the
  class's MRO, so replacing a method or changing a class constant recompiles).

Attributes stored on an instance need no fact: a static object's key (static_key.py) covers its
instance attributes, and the object itself is keyed as an argument or guarded as a global.
Facts are recorded per trace in ``TraceContext.facts`` and become guards in guards.py.
"""
from __future__ import annotations

import types

from ..core.trace import _state

__all__ = ["read_attr", "class_lookup", "MISSING", "user_module"]

MISSING = object()
_SKIP_ROOTS = frozenset({"warpstage", "numpy", "builtins", "math", "cmath", "operator", "typing",
                         "functools", "itertools", "enum", "dataclasses", "collections", "torch",
                         "cupy", "ml_dtypes", "types", "inspect", "sys", "os", "abc"})


def user_module(name) -> bool:
    """Whether module ``name`` holds user code whose attributes a trace guards."""
    return isinstance(name, str) and name.partition(".")[0] not in _SKIP_ROOTS


def class_lookup(cls, name: str):
    """``name`` as the class body (or a base's) defines it, without descriptors applied."""
    for c in cls.__mro__:
        d = c.__dict__
        if name in d:
            return d[name]
    return MISSING


def read_attr(obj, name: str, default=MISSING):
    """``getattr(obj, name[, default])``, recording the fact while tracing (see the module
    docstring). The rewrite calls it for ``x.name`` and for ``getattr(x, name[, default])``
    (whatever expression ``name`` is: the fact is the name read at trace time)."""
    try:
        value = getattr(obj, name)
    except AttributeError:
        if default is MISSING:
            raise
        value = default
    ctx = getattr(_state, "ctx", None)
    if ctx is None:
        return value
    t = type(obj)
    if t is types.ModuleType:
        if user_module(obj.__name__):
            ctx.facts[(id(obj), name)] = ("module", obj, name, obj.__dict__.get(name, MISSING))
        return value
    if isinstance(obj, type):
        cls = obj
    else:
        if not user_module(t.__module__):
            return value
        d = getattr(obj, "__dict__", None)
        if d is not None and name in d:
            return value
        cls = t
    if not user_module(cls.__module__):
        return value
    raw = class_lookup(cls, name)
    if raw is not MISSING:
        ctx.facts[(id(cls), name)] = ("class", cls, name, raw)
    return value
