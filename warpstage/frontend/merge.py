"""Merging variables after dynamic control flow (docs/control-flow.md, "Merging after dynamic
control flow").

Each path out of a region (the two branches of an ``if``; the value before a loop and after one
iteration of it) gives every variable a Python value. ``plan`` compares them and returns a *merge
plan*, a small tree that says what the variable is afterwards:

========================================  ====================================================
the paths give                            plan
========================================  ====================================================
the identical object, or equal statics    ``Keep``: stays as it is (static stays static)
different static numbers                  ``Leaf``: promoted to one dynamic type (rule 3 types,
                                          C-promoted: bool < int < float); origin says why
a static number and a dynamic scalar      ``Leaf`` of the dynamic type, if the number is exact
                                          in it (``0`` into Float32 yes, ``0.5`` into Int32 no)
dynamic scalars of one type               ``Leaf``: one region result / loop-carried value
tuples/lists/dicts of one shape,          ``Seq``: merged part by part with these same rules
value-protocol objects of one class and   (a protocol object is rebuilt with
``__static_key__``, dataclasses of one    ``__new_from_values__``)
class
other dynamic leaves (pointers) of one    ``Struct``: one slot per leaf
type
an ``Unbound`` on any path                ``Gone``: unbound afterwards
``UNDEF`` (return slot before a return)   ignored: the other paths decide; its slots get zeros
anything else                             ``Conflict`` raised (the caller words the error)
========================================  ====================================================

A plan's *slots* are its dynamic leaves, in order; ``types`` lists their IR types,
``materialize(path)`` emits the IR values path ``path`` contributes (constants for promoted
numbers), and ``rebuild`` makes the merged Python value around region results or block args.
"""
from __future__ import annotations

import dataclasses
import numbers
from typing import Any, Callable, Iterator

from .. import ir
from ..errors import UnsupportedError
from ..lang.scalars import DTYPES, Scalar, _literal_type, fits, promote_types
from .static_key import static_key
from .trace import builder
from .unbound import UNDEF, Unbound, UnboundVariableError, _Undef
from .values import extract as _extract, flatten, has_protocol, is_leaf, skeleton_key, unflatten
from .values import rebuild as _rebuild

__all__ = ["Unbound", "UnboundVariableError", "UNDEF", "Conflict", "plan", "same_shape",
           "has_slots", "types", "materialize", "rebuild", "describe", "quote"]


class Conflict(Exception):
    """Internal: the paths of one variable cannot be merged. ``label`` names the part
    (``x``, ``x[1]``), ``why`` says how they differ, ``fix`` what to do."""

    def __init__(self, label: str, values: list, why: str, fix: str):
        super().__init__(why)
        self.label = label
        self.values = values
        self.why = why
        self.fix = fix


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
    ``template`` (one path's value) rebuilds a protocol object."""
    __slots__ = ("kind", "meta", "children", "template")

    def __init__(self, kind, meta, children, template=None):
        self.kind = kind
        self.meta = meta
        self.children = children
        self.template = template


# -- classification ----------------------------------------------------------------------------

def is_number(v) -> bool:
    if isinstance(v, (bool, int, float)):
        return True
    return type(v).__module__ == "numpy" and isinstance(v, numbers.Number)


def _py_number(v):
    return v.item() if hasattr(v, "item") and not isinstance(v, (bool, int, float)) else v


def _rule3_type(v) -> ir.ScalarType:
    v = _py_number(v)
    if isinstance(v, bool):
        return ir.i1
    if isinstance(v, int):
        return ir.i32 if fits(ir.i32, v) else ir.i64
    return ir.f32


def _parts(v):
    """(kind, meta, items) for a value merged part by part, else None: tuples, lists, dicts,
    namedtuples, value-protocol objects (their extracted values; ``meta`` holds the class and
    ``__static_key__()``) and dataclasses (their fields)."""
    t = type(v)
    if t is tuple or t is list:
        return t.__name__, len(v), list(v)
    if isinstance(v, tuple) and hasattr(t, "_fields"):
        return "namedtuple", t, list(v)
    if t is dict:
        return "dict", tuple(v.keys()), list(v.values())
    if isinstance(v, (Unbound, _Undef)) or is_leaf(v):
        return None
    if has_protocol(v):
        items = list(_extract(v))
        key = v.__static_key__() if hasattr(t, "__static_key__") else None
        return "proto", (t, key, len(items)), items
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        names = tuple(f.name for f in dataclasses.fields(v))
        return "dataclass", (t, names), [getattr(v, n) for n in names]
    return None


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


def _key_of_static(v):
    try:
        return ("key", static_key(v))
    except Exception:
        try:
            hash(v)
            return (type(v), v)
        except TypeError:
            return (type(v), id(v))


def _has_leaves(v) -> bool:
    if isinstance(v, (Unbound, _Undef)):
        return False
    return bool(flatten(v)[1])


def quote(label: str) -> str:
    """`x` for a variable (or part of one), the text itself for a description."""
    return label if " " in label else f"`{label}`"


def describe(v) -> str:
    """A short description of a value for error messages."""
    if isinstance(v, Unbound):
        return "no value (unbound)"
    if v is UNDEF:
        return "no value yet"
    if isinstance(v, Scalar):
        return f"a dynamic {type(v).__name__}"
    if is_leaf(v):
        return f"a dynamic {type(v).__name__} ({v.value.type})"
    try:
        text = repr(v)
    except Exception:
        text = f"<{type(v).__name__}>"
    if len(text) > 70:
        text = text[:67] + "..."
    if _has_leaves(v):
        return f"{text} (a {type(v).__name__} with dynamic parts)"
    return f"{text} (static {type(v).__name__})"


# -- planning ----------------------------------------------------------------------------------

def plan(values: list, label: str, identity: bool = True):
    """The merge plan of one variable given its value on each path (see the module docstring).
    With ``identity=False`` dynamic values always get slots, even if every path holds the same
    object (used for the first guess of a loop's carried variables). Raises ``Conflict``."""
    for v in values:
        if isinstance(v, Unbound):
            return Gone(v)
    live = [v for v in values if v is not UNDEF]
    if not live:
        return Keep(UNDEF)
    first = live[0]
    # The identical object on every path was made before the region (a value made inside one
    # region cannot reach another); with a path that has no value yet, a lone live value may
    # come from inside its region, so it still needs a slot.
    if identity and len(live) == len(values) and all(v is first for v in live):
        return Keep(first)
    dynamic = [v for v in live if _has_leaves(v)]
    if not dynamic:
        if all(_same_static(first, v) for v in live):
            return Keep(first)
        if all(is_number(v) for v in live):
            t = ir.i1
            for v in live:
                t = promote_types(t, _rule3_type(v))
            return Leaf(t, list(values), label, True)
    shapes = [_parts(v) for v in live]
    if all(s is not None for s in shapes):
        if all(_same_meta(shapes[0], s) for s in shapes[1:]):
            kind, meta, _ = shapes[0]
            children = []
            for i in range(len(shapes[0][2])):
                sub = _part_label(label, kind, meta, i)
                items = [UNDEF if v is UNDEF else _parts(v)[2][i] for v in values]
                children.append(plan(items, sub, identity))
            return Seq(kind, meta, children, first)
        raise Conflict(label, values, "its structure differs between the paths (" +
                       " vs ".join(_shape_text(s) for s in shapes) + ")",
                       f"give {quote(label)} the same structure (type, length, static fields) on "
                       "every path")
    if not dynamic:
        raise Conflict(label, values, "it holds different static values on the paths",
                       f"give {quote(label)} the same static value on every path, or make the "
                       "value dynamic explicitly (e.g. ws.Int32(...)) on every path, or decide the "
                       "condition statically (ws.static(cond))")
    if all(isinstance(v, Scalar) or is_number(v) for v in live):
        return _scalar_leaf(values, live, label)
    return _struct(values, live, label)


def _part_label(label, kind, meta, i) -> str:
    if kind == "dict":
        return f"{label}[{meta[i]!r}]"
    if kind == "dataclass":
        return f"{label}.{meta[1][i]}"
    if kind == "namedtuple":
        return f"{label}.{meta._fields[i]}"
    return f"{label}[{i}]"


def _shape_text(s) -> str:
    kind, meta, items = s
    if kind == "dict":
        return f"dict with keys {list(meta)}"
    if kind == "namedtuple":
        return f"{meta.__name__} of {len(items)}"
    if kind == "proto":
        static = f", static key {meta[1]!r}" if meta[1] is not None else ""
        return f"{meta[0].__name__} with {len(items)} values{static}"
    if kind == "dataclass":
        return meta[0].__name__
    return f"{kind} of {len(items)}"


def _scalar_leaf(values, live, label):
    dyn_types = {v.ir_type for v in live if isinstance(v, Scalar)}
    if len(dyn_types) > 1:
        names = " and ".join(sorted(DTYPES[t].__name__ for t in dyn_types))
        wide = DTYPES[_widest(dyn_types)].__name__
        raise Conflict(label, values, f"it is dynamic with different types on the paths ({names})",
                       f"convert explicitly so every path gives one type, e.g. with "
                       f"ws.{wide}(...)")
    t = dyn_types.pop()
    for v in live:
        if is_number(v) and _literal_type(t, _py_number(v)) != t:
            raise Conflict(label, values, f"the static value {v!r} is not exact in the dynamic "
                           f"type {DTYPES[t].__name__} it has on another path",
                           f"convert explicitly so every path gives one type, e.g. with "
                           f"ws.{DTYPES[t].__name__ if t.is_float else 'Float32'}(...)")
    promoted = any(is_number(v) for v in live)
    return Leaf(t, list(values), label, promoted)


def _widest(types):
    out = None
    for t in types:
        out = t if out is None else promote_types(out, t)
    return out


def _struct(values, live, label):
    flat = []
    for v in live:
        skel, leaves = flatten(v)
        try:
            key = skeleton_key(skel, _key_of_static)
        except Exception:
            key = None
        flat.append((skel, leaves, key))
    key0 = flat[0][2]
    ok = key0 is not None
    for _, _, key in flat[1:]:
        try:
            ok = ok and key is not None and key == key0
        except Exception:
            ok = False
    if not ok:
        raise Conflict(label, values, "its static parts (type, static fields or structure) "
                       "differ between the paths",
                       f"give {quote(label)} the same static skeleton on every path (same class "
                       "and static fields); only its dynamic fields may differ")
    it = iter(flat)
    sources = [UNDEF if v is UNDEF else next(it)[1] for v in values]
    leaf_types = [lf.value.type for lf in flat[0][1]]
    return Struct(flat[0][0], key0, leaf_types, sources, flat[0][1])


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
