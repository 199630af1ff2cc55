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

This module makes plans (``plan``); merge_plan.py holds the plan nodes and what is done with a
plan (its slots' ``types``, ``materialize``, ``rebuild``), re-exported here.
"""
from __future__ import annotations

import dataclasses
import numbers

from .. import ir
from ..lang.scalars import DTYPES, Scalar, _literal_type, fits, promote_types
from .merge_plan import (Gone, Keep, Leaf, Seq, Struct, _py_number, _same_meta,  # noqa: F401
                         _same_static, has_slots, materialize, promoted_values, rebuild,
                         same_shape, types)
from ..core.static_key import static_key
from ..core.unbound import UNDEF, Unbound, UnboundVariableError, _Undef
from ..core.values import (extract as _extract, flatten, has_leaves, has_protocol, is_leaf,
                           skeleton_key)

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


# -- classification ----------------------------------------------------------------------------

def is_number(v) -> bool:
    if isinstance(v, (bool, int, float)):
        return True
    return type(v).__module__ == "numpy" and isinstance(v, numbers.Number)


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
    return has_leaves(v)


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
    if all(isinstance(v, Scalar) and is_leaf(v) for v in live):
        return _scalar_leaf(values, live, label)    # where the steps below lead a dynamic scalar
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
            it = iter(shapes)               # each path's parts, split once (not once per part)
            parts = [[UNDEF] * len(shapes[0][2]) if v is UNDEF else next(it)[2] for v in values]
            children = [plan(list(items), _part_label(label, kind, meta, i), identity)
                        for i, items in enumerate(zip(*parts))]     # part i of every path
            return Seq(kind, meta, children, first, live if kind == "proto" else None)
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
