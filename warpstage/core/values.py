"""The value protocol: split an object into a static skeleton and a list of dynamic leaves.

A *leaf* is a dynamic value that wraps one SSA value (``ws.Int32``, a pointer, ...); it has
``.value`` (the ir.Value) and ``_rewrap(ir_value)`` (the same kind of leaf around another value).
A *skeleton* is everything static: it is hashable/comparable and, with a new list of leaves,
rebuilds the object (``unflatten``).

What is split, in this order:
- a leaf: itself;
- an object with ``__extract_values__`` / ``__new_from_values__`` (or CuTe DSL's
  ``__extract_mlir_values__`` / ``__new_from_mlir_values__``): its values, each flattened again;
- a dataclass (``@ws.struct`` is one) or NamedTuple: its fields;
- a tuple, list or dict: its items;
- anything else: static, kept whole in the skeleton.

The same split serves region results, loop-carried values, device-function arguments and
returns, the cache key and the launch ABI (docs/binding-time.md, "The value protocol").
"""
from __future__ import annotations

import dataclasses
from typing import Any

__all__ = ["flatten", "unflatten", "is_leaf", "has_leaves", "Skeleton", "has_protocol",
           "skeleton_key", "extract", "rebuild"]


_TYPE_FACTS: dict = {}
"""type -> (whether it has ``_rewrap``, how its non-leaf instances split): read once per class,
because ``hasattr`` on a class that lacks the attribute (an int's, a config object's) raises and
catches an AttributeError inside, several per value flattened. The protocol methods and the
dataclass / NamedTuple markers are class attributes set when the class is made (``@ws.struct``
included), so a class's answer does not change afterwards."""


def _type_facts(t) -> tuple:
    facts = _TYPE_FACTS.get(t)
    if facts is None:
        if hasattr(t, "__extract_values__") or hasattr(t, "__extract_mlir_values__"):
            rest = "proto"
        elif hasattr(t, "__dataclass_fields__") and not issubclass(t, type):
            rest = "dataclass"
        elif issubclass(t, tuple) and hasattr(t, "_fields"):
            rest = "namedtuple"
        elif t in (tuple, list, dict):
            rest = t.__name__
        else:
            rest = "static"
        facts = _TYPE_FACTS[t] = (hasattr(t, "_rewrap"), rest)
    return facts


def is_leaf(x) -> bool:
    return _type_facts(type(x))[0] and hasattr(x, "value")


def has_protocol(x) -> bool:
    rewrap, rest = _type_facts(type(x))
    return rest == "proto" and not (rewrap and hasattr(x, "value"))


def extract(x) -> list:
    """The dynamic values of a value-protocol object (either spelling of the protocol)."""
    t = type(x)
    if hasattr(t, "__extract_values__"):
        return list(x.__extract_values__())
    return list(x.__extract_mlir_values__())


def rebuild(x, values):
    """``x``'s skeleton around new ``values`` (either spelling of the protocol)."""
    t = type(x)
    if hasattr(t, "__new_from_values__"):
        return x.__new_from_values__(values)
    return x.__new_from_mlir_values__(values)


class Skeleton:
    """The static part of a flattened object. ``kind`` is 'leaf', 'proto', 'dataclass',
    'namedtuple', 'tuple', 'list', 'dict' or 'static'; ``data`` the static payload; ``children``
    the skeletons of the parts."""

    __slots__ = ("kind", "data", "children", "num_leaves")

    def __init__(self, kind: str, data: Any = None, children: tuple = ()):
        self.kind = kind
        self.data = data
        self.children = children = tuple(children)
        n = 1 if kind == "leaf" else 0
        for c in children:
            n += c.num_leaves
        self.num_leaves = n

    def __repr__(self) -> str:
        return f"Skeleton({self.kind}, {self.data!r}, {list(self.children)!r})"


def flatten(obj) -> tuple:
    """(skeleton, leaves) of ``obj``; see the module docstring."""
    leaves: list = []
    skel = _flatten(obj, leaves)
    return skel, leaves


def _flatten(x, leaves) -> Skeleton:
    rewrap, rest = _type_facts(type(x))
    if rewrap and hasattr(x, "value"):
        leaves.append(x)
        return Skeleton("leaf", x)
    if rest == "static":
        return Skeleton("static", x)
    if rest == "proto":
        values = extract(x)
        return Skeleton("proto", x, [_flatten(v, leaves) for v in values])
    if rest == "dataclass":
        names = [f.name for f in dataclasses.fields(x)]
        return Skeleton("dataclass", (type(x), tuple(names)),
                        [_flatten(getattr(x, n), leaves) for n in names])
    if rest == "namedtuple":
        return Skeleton("namedtuple", type(x), [_flatten(v, leaves) for v in x])
    if rest == "dict":
        keys = tuple(x.keys())
        return Skeleton("dict", keys, [_flatten(x[k], leaves) for k in keys])
    return Skeleton(rest, len(x), [_flatten(v, leaves) for v in x])     # tuple, list


def has_leaves(x) -> bool:
    """Whether ``x`` holds a dynamic leaf: ``bool(flatten(x)[1])``, by the same walk in the same
    order, stopped at the first leaf and building no skeleton. Region planning asks this of
    every variable at every level of its structure (``frontend/merge.plan``), so a full flatten
    there walked each subtree once per enclosing level."""
    rewrap, rest = _type_facts(type(x))
    if rewrap and hasattr(x, "value"):
        return True
    if rest == "static":
        return False
    if rest == "proto":
        parts = extract(x)
    elif rest == "dataclass":
        parts = [getattr(x, f.name) for f in dataclasses.fields(x)]
    elif rest == "dict":
        parts = x.values()
    else:                                   # namedtuple, tuple, list
        parts = x
    for v in parts:
        if has_leaves(v):
            return True
    return False


def unflatten(skel: Skeleton, leaves) -> Any:
    """Rebuild the object described by ``skel`` around ``leaves`` (a sequence, consumed in order)."""
    it = iter(leaves)
    out = _unflatten(skel, it)
    rest = list(it)
    if rest:
        raise ValueError(f"unflatten: {len(rest)} leaves left over")
    return out


def _unflatten(s: Skeleton, it):
    k = s.kind
    if k == "leaf":
        return next(it)
    if k == "static":
        return s.data
    parts = [_unflatten(c, it) for c in s.children]
    if k == "proto":
        return rebuild(s.data, parts)
    if k == "dataclass":
        cls, names = s.data
        obj = object.__new__(cls)
        for n, v in zip(names, parts):
            object.__setattr__(obj, n, v)
        return obj
    if k == "namedtuple":
        return s.data(*parts)
    if k == "tuple":
        return tuple(parts)
    if k == "list":
        return parts
    if k == "dict":
        return dict(zip(s.data, parts))
    raise ValueError(f"unknown skeleton kind {k}")


def skeleton_key(s: Skeleton, static_key=None):
    """A hashable description of the skeleton: structure, static values (through ``static_key``,
    default the value itself) and leaf types. Two objects can be merged leaf by leaf iff their
    skeleton keys are equal."""
    k = s.kind
    if k == "leaf":                 # the IR type itself: equal types are equal (ir/types.py)
        return ("leaf", s.data.value.type)
    if k == "static":
        return ("static", static_key(s.data) if static_key else _plain_key(s.data))
    children = tuple(skeleton_key(c, static_key) for c in s.children)
    if k == "proto":
        obj = s.data
        sk = obj.__static_key__() if hasattr(type(obj), "__static_key__") else type(obj)
        return ("proto", sk, children)
    if k == "dataclass":
        return ("dataclass", s.data, children)
    return (k, s.data, children)


def _plain_key(v):
    try:
        hash(v)
        return (type(v), v)
    except TypeError:
        return (type(v), id(v))
