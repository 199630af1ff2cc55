"""A merge plan (merge.py makes one with ``plan``): its nodes, ``Keep``, ``Gone``, ``Leaf``,
``Struct`` and ``Seq``, and what is done with a plan once made.

A plan's *slots* are its dynamic leaves, in order; ``types`` lists their IR types,
``materialize(path)`` emits the IR values path ``path`` contributes (constants for promoted
numbers), and ``rebuild`` makes the merged Python value around region results or block args.
``same_shape`` compares two plans (a loop's carried variables against their first guess).
"""
from __future__ import annotations

from typing import Any, Callable, Iterator

from .. import ir
from ..errors import UnsupportedError
from ..lang.scalars import DTYPES, Scalar
from ..core.static_key import static_key
from ..core.trace import builder
from ..core.unbound import UNDEF, Unbound
from ..core.values import is_leaf, unflatten
from ..core.values import rebuild as _rebuild

__all__ = ["Keep", "Gone", "Leaf", "Struct", "Seq", "same_shape", "has_slots", "types",
           "materialize", "rebuild", "promoted_values"]


# -- plan nodes --------------------------------------------------------------------------------

class Keep:
    """No slots: the result is ``value`` (identical or equal static on every path)."""
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


class Gone:
    """No slots: unbound afterwards (some path has no value)."""
    __slots__ = ("unbound",)

    def __init__(self, unbound: Unbound):
        self.unbound = unbound


class Leaf:
    """One slot of IR type ``type``. ``sources[k]`` is path k's leaf, static number or UNDEF;
    ``promoted`` is set when a static number became dynamic (and says why)."""
    __slots__ = ("type", "sources", "label", "promoted")

    def __init__(self, type, sources, label, promoted):
        self.type = type
        self.sources = sources
        self.label = label
        self.promoted = promoted


class Struct:
    """Slots for each leaf of a protocol object / struct; ``skeleton`` rebuilds it."""
    __slots__ = ("skeleton", "key", "leaf_types", "sources", "template")

    def __init__(self, skeleton, key, leaf_types, sources, template):
        self.skeleton = skeleton
        self.key = key
        self.leaf_types = leaf_types
        self.sources = sources       # per path: list of leaves, or UNDEF
        self.template = template     # leaves of one dynamic path (to rewrap results)


class Seq:
    """A tuple/list/namedtuple/dict, value-protocol object or dataclass merged part by part;
    ``template`` (one path's value) rebuilds a protocol object; ``paths`` (a protocol object's
    value on each live path) goes to its optional ``__new_from_merge__(paths, values)``, which
    lets it merge what its static key leaves out (a fragment's in-flight mark)."""
    __slots__ = ("kind", "meta", "children", "template", "paths")

    def __init__(self, kind, meta, children, template=None, paths=None):
        self.kind = kind
        self.meta = meta
        self.children = children
        self.template = template
        self.paths = paths


# -- comparing values --------------------------------------------------------------------------

def _py_number(v):
    return v.item() if hasattr(v, "item") and not isinstance(v, (bool, int, float)) else v


def _same_meta(a, b) -> bool:
    try:
        return a[0] == b[0] and bool(a[1] == b[1])
    except Exception:
        return False


def _same_static(a, b) -> bool:
    """Equal static values: identical, equal (same type), or with equal static keys (the cache
    key's notion: a fresh but identical config object is the same static value)."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    try:
        if a == b:
            return True
    except Exception:
        pass
    try:
        return static_key(a) == static_key(b)
    except Exception:
        return False


# -- using a plan ------------------------------------------------------------------------------

def has_slots(node) -> bool:
    return bool(types(node))


def types(node) -> list:
    """IR types of the node's slots, in order."""
    if isinstance(node, Leaf):
        return [node.type]
    if isinstance(node, Struct):
        return list(node.leaf_types)
    if isinstance(node, Seq):
        return [t for c in node.children for t in types(c)]
    return []


def same_shape(a, b) -> bool:
    """True if two plans have the same slots and the same static parts."""
    if type(a) is not type(b):
        return False
    if isinstance(a, Keep):
        return _same_static(a.value, b.value)
    if isinstance(a, Gone):
        return True
    if isinstance(a, Leaf):
        return a.type == b.type
    if isinstance(a, Struct):
        try:
            return bool(a.key == b.key)
        except Exception:
            return False
    return (_same_meta((a.kind, a.meta), (b.kind, b.meta)) and
            len(a.children) == len(b.children) and
            all(same_shape(x, y) for x, y in zip(a.children, b.children)))


def materialize(node, path: int) -> list:
    """The IR values path ``path`` gives for the node's slots, emitted at the current insertion
    point (constants for static numbers, zeros where the path has no value yet)."""
    if isinstance(node, Leaf):
        return [_leaf_value(node.type, node.sources[path])]
    if isinstance(node, Struct):
        src = node.sources[path]
        if src is UNDEF:
            return [_leaf_value(t, UNDEF) for t in node.leaf_types]
        return [lf.value for lf in src]
    if isinstance(node, Seq):
        return [v for c in node.children for v in materialize(c, path)]
    return []


def _leaf_value(t, src):
    if isinstance(src, Scalar) or is_leaf(src):
        return src.value
    if not isinstance(t, ir.ScalarType):
        raise UnsupportedError(f"a {t} value is returned on one path only; a function that "
                               "returns a pointer must return one on every path")
    return builder().constant(t, 0 if src is UNDEF else _py_number(src))


def rebuild(node, results: Iterator, origin: Callable[[Leaf], Any]):
    """The merged Python value around ``results`` (an iterator of IR values for the slots).
    ``origin(leaf)`` gives the Origin of a promoted leaf."""
    if isinstance(node, Keep):
        return node.value
    if isinstance(node, Gone):
        return node.unbound
    if isinstance(node, Leaf):
        value = next(results)
        if node.promoted:
            return DTYPES[node.type]._wrap(value, origin(node))
        template = next(s for s in node.sources if isinstance(s, Scalar) or is_leaf(s))
        return template._rewrap(value)
    if isinstance(node, Struct):
        leaves = [lf._rewrap(next(results)) for lf in node.template]
        return unflatten(node.skeleton, leaves)
    items = [rebuild(c, results, origin) for c in node.children]
    if node.kind == "tuple":
        return tuple(items)
    if node.kind == "list":
        return items
    if node.kind == "namedtuple":
        return node.meta(*items)
    if node.kind == "proto":
        if node.paths and hasattr(type(node.template), "__new_from_merge__"):
            return node.template.__new_from_merge__(node.paths, items)
        return _rebuild(node.template, items)
    if node.kind == "dataclass":
        cls, names = node.meta
        obj = object.__new__(cls)
        for n, v in zip(names, items):
            object.__setattr__(obj, n, v)
        return obj
    return dict(zip(node.meta, items))


def promoted_values(node: Leaf) -> list:
    """Descriptions of the values a promoted leaf had on each path (for its Origin)."""
    out = []
    for s in node.sources:
        if s is UNDEF:
            out.append("unset")
        elif isinstance(s, Scalar):
            out.append(f"a dynamic {type(s).__name__}")
        else:
            out.append(repr(_py_number(s)))
    return out
