"""The dtype kind: a library's dtype object passed as an argument (``torch.float16``,
``np.dtype("float32")``) is static by rule 7, like any dtype (DESIGN §2), keyed by the library
and the element type it names: ``("static", ("dtype", "torch", "float16"))``. A ``torch.dtype``
cannot be keyed as an object (no ``__dict__``, no ``__static_key__``) and a ``numpy.dtype`` was
keyed by equality (in memory only); by name the key is the same in every process, so the
specialization is stored on disk. The kernel sees the object itself. The hot-path binders bind it; the generated call path
reads it as any static value (``static_key``, a full-path miss for a torch dtype, which it cannot
key)."""
from __future__ import annotations

import sys

from ...core.static import REJECTED, _StaticAnnotation
from .base import mismatch
from .static import StaticKind

__all__ = ["DTypeKind", "dtype_key"]


_PLAIN = frozenset({int, float, bool, str, type(None), tuple, list, dict})


def dtype_key(value):
    """``("dtype", library, name...)`` for a torch dtype or a plain numpy dtype (no fields, no
    sub-array), else None."""
    t = type(value)
    if t in _PLAIN:
        return None
    if t.__module__ == "torch" and t.__name__ == "dtype":
        return ("dtype", "torch", str(value)[len("torch."):])
    np = sys.modules.get("numpy")
    if np is not None and isinstance(value, np.dtype) and value.fields is None and \
            value.subdtype is None:
        return ("dtype", "numpy", value.str, value.name)
    return None


class DTypeKind(StaticKind):
    """A static dtype object (see the module docstring)."""

    STORED_TAG = "dtype"

    def __init__(self, value, key, rule: int = 7):
        self.value = value
        self.rule = rule
        self.binding = "static"
        self.desc = f"{key[1]} dtype = {value!r}"         # 'torch dtype = torch.float16'
        self.key = ("static", key)

    @classmethod
    def match(cls, value, ann, ctx):
        """Rule 7 for a dtype object."""
        key = dtype_key(value)
        return cls(value, key) if key is not None else None

    @classmethod
    def match_annotated(cls, value, ann, ctx):
        """Rule 1 for a dtype object (``ws.Static[torch.dtype]``; the value checked as rule 1
        checks it)."""
        if not isinstance(ann, _StaticAnnotation):
            return None
        key = dtype_key(value)
        if key is None:
            return None
        ann.check(value, ctx.name)
        return cls(value, key, 1)

    @classmethod
    def binder(cls, annotation, self_rule, adapter):
        static = StaticKind.binder(annotation, self_rule, adapter)
        if static is None:
            return None

        accept = annotation.accept if isinstance(annotation, _StaticAnnotation) else None

        def bind_static(v, keys, leaves):       # rule 0 / 1: a dtype by name, else any static
            key = dtype_key(v)
            if key is None:
                return static(v, keys, leaves)
            if accept is not None and accept(v) is REJECTED:
                return False                    # the full path explains
            keys.append(("static", key))
            return True
        return bind_static

    def stored(self):
        return {"k": "dtype", "key": list(self.key[1]), "desc": self.desc}

    @classmethod
    def bind_stored(cls, d, value, name, out):
        key = dtype_key(value)
        if key is None or list(key) != d["key"]:
            raise mismatch(name, f"the static dtype {d['desc']}", repr(value)[:60])

    def change(self, new):
        return f"{self.value!r} -> {new.value!r}"

    @staticmethod
    def bind_fallback(v, keys, leaves):
        key = dtype_key(v)
        if key is None:
            return None
        keys.append(("static", key))
        return True
