"""``@ws.struct``: a dataclass whose field annotations give each field's binding time.

    @ws.struct
    class PipelineState:
        num_stages: ws.Static[int]     # static: part of the skeleton and of the cache key
        index: ws.Int32                # dynamic: a leaf (an SSA value on the GPU)
        phase: ws.Int32

Fields annotated with a dynamic scalar type are converted on construction inside traced code
(``PipelineState(4, 0, 0)`` makes ``index`` a dynamic Int32 constant), so a struct carried through
a loop never changes type. The value protocol (``__extract_values__`` / ``__new_from_values__`` /
``__static_key__``) is derived from the annotations. Host-side instances are kernel arguments by
rule 5: their static fields go into the key, their dynamic fields into the launch ABI.
"""
from __future__ import annotations

import dataclasses
import typing

from ..core.static import _StaticAnnotation
from ..core.static_key import static_key
from ..core.trace import maybe_current
from .scalars import Scalar

__all__ = ["struct", "is_struct"]


def _hints(cls) -> dict:
    try:
        return typing.get_type_hints(cls)
    except Exception:
        return dict(getattr(cls, "__annotations__", {}))


def is_struct(x) -> bool:
    return getattr(type(x) if not isinstance(x, type) else x, "__ws_struct__", False)


def struct(cls=None, *, frozen: bool = False):
    """Decorator: make ``cls`` a dataclass with a derived value protocol (see module docstring)."""
    def wrap(c):
        user_post_init = c.__dict__.get("__post_init__")
        state = {}

        # dataclasses only calls __post_init__ if the class has one when it is decorated
        def __post_init__(self):
            if maybe_current() is not None:
                for n, t in state["scalar_fields"].items():
                    v = getattr(self, n)
                    if not (isinstance(v, Scalar) and type(v) is t):
                        object.__setattr__(self, n, t(v))
            if user_post_init is not None:
                user_post_init(self)

        c.__post_init__ = __post_init__
        dc = dataclasses.dataclass(c, frozen=frozen)
        hints = _hints(dc)
        names = [f.name for f in dataclasses.fields(dc)]
        static = tuple(n for n in names if isinstance(hints.get(n), _StaticAnnotation))
        dynamic = tuple(n for n in names if n not in static)
        state["scalar_fields"] = {n: hints[n] for n in dynamic
                                  if isinstance(hints.get(n), type) and issubclass(hints[n], Scalar)}

        def __extract_values__(self):
            return [getattr(self, n) for n in dynamic]

        def __new_from_values__(self, values):
            obj = object.__new__(type(self))
            for n in static:
                object.__setattr__(obj, n, getattr(self, n))
            for n, v in zip(dynamic, values):
                object.__setattr__(obj, n, v)
            return obj

        def __static_key__(self):
            return tuple((n, static_key(getattr(self, n))) for n in static)

        dc.__extract_values__ = __extract_values__
        dc.__new_from_values__ = __new_from_values__
        dc.__static_key__ = __static_key__
        dc.__ws_struct__ = True
        dc.__ws_fields__ = (static, dynamic)
        return dc
    return wrap(cls) if cls is not None else wrap
