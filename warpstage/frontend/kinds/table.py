"""The binding-time rules of DESIGN §2, written once: ``TABLE``, the ordered match rules of the
parameter kinds, and what reads it — ``classify`` (the full path), ``make_binder`` (the hot
path's per-parameter key and leaves, jit/kernel.py's cached launch), ``kind_of`` and
``fast_parts`` (what the generated call path reads, frontend/fast_call_source.py).

A rule is ``(number, match, when)``: ``match(value, annotation, ctx)`` is a classmethod of a kind
(base.py) that returns that kind's binding for the value, None when the rule does not apply, or
raises ``ArgumentError`` for a value the rule names but cannot take. The first rule that
returns a binding decides. The order is DESIGN §2's, with two placements it implies: an enum
member is taken by rule 7 before rule 3 (an ``IntEnum`` member is an int too), and a
descriptor's tensor map (a leaf the descriptor itself extracts) before the tensor adapter.
"""
from __future__ import annotations

from ...core.static import _StaticAnnotation
from .base import FAST_KINDS, MatchContext
from .composite import CompositeKind
from .dtype import DTypeKind
from .scalar import ScalarKind
from .static import StaticKind
from .tensor import PointerKind, TensorKind
from .tma import DescriptorKind, TensorMapKind

__all__ = ["TABLE", "KINDS", "AUTO_READERS", "classify", "make_binder", "auto_binder", "kind_of",
           "fast_parts"]

TABLE = (
    (0, StaticKind.match_self, "self"),             # first parameter named `self`
    (1, StaticKind.match_wrapped, None),            # ws.Static(v)
    (1, DTypeKind.match_annotated, "static"),       # ws.Static[T] given a dtype object: by name
    (1, StaticKind.match_annotated, "static"),      # ws.Static[T]
    (2, ScalarKind.match_annotated, "annotated"),   # ws.Int32, ws.Float32, ...
    (2, TensorKind.match_annotated, "annotated"),   # ws.Tensor, ws.Tensor[dtype, ndim]
    (2, PointerKind.match_annotated, "annotated"),  # ws.Pointer[dtype]
    (3, ScalarKind.match_python_annotated, "annotated"),  # int / float / bool: value checked
    (7, StaticKind.match_enum, None),               # an enum member, IntEnum too: before rule 3
    (2, ScalarKind.match_host_scalar, None),        # a host ws.Int32(5): its own type
    (3, ScalarKind.match_bare, None),               # bool / int / float / numpy scalar
    (4, TensorMapKind.match, None),                 # a descriptor's extracted map
    (4, TensorKind.match_bare, None),               # DLPack / __cuda_array_interface__ / numpy
    (5, DescriptorKind.match_descriptor, None),     # ws.tma.TensorDescriptor
    (5, CompositeKind.match_protocol, None),        # __extract_values__ / @ws.struct
    (5, CompositeKind.match_record, None),          # dataclass / NamedTuple
    (6, CompositeKind.match_container, None),       # tuple / list / dict
    (7, StaticKind.match_kernel_only, None),        # (errors: kernel-only values, a class)
    (7, DTypeKind.match, None),                     # torch.float16, np.dtype("f4"): by name
    (7, StaticKind.match_any, None),                # anything else: static
)
"""The ordered rules: ``(rule of DESIGN §2, match, when)``; ``when`` is "self" for a rule that
applies to a first parameter named ``self`` only, "static" for one that reads a ``ws.Static[T]``
annotation, "annotated" for one that reads any other annotation, else None (the rule may apply
to any parameter)."""

_RULES = {(is_self, ann): tuple(match for _, match, when in TABLE
                                if when is None or when == "self" and is_self or when == ann)
          for is_self in (False, True) for ann in (None, "static", "annotated")}
"""The match functions of ``TABLE`` that can apply, by (rule 0 applies, the annotation's sort);
the others would return None, so skipping them changes no outcome."""

KINDS = (DTypeKind, StaticKind, ScalarKind, TensorKind, PointerKind, TensorMapKind,
         DescriptorKind, CompositeKind)
"""Every parameter kind, in the order the fast paths ask them (make_binder, kind_of)."""

AUTO_READERS = (ScalarKind, StaticKind, TensorKind, DescriptorKind)
"""The kinds the generated code reads a bare parameter as, in the order of its tests (the
cheapest first: an int, a float, a bool, None, a torch tensor, a descriptor); anything else
goes through the tensor adapter."""


def classify(value, annotation=None, name: str = "arg", self_rule: bool = False,
             tensor_adapter=None):
    """The binding of one parameter: the kind (base.Kind) of the first rule of ``TABLE`` that
    takes ``value`` given its ``annotation``. ``self_rule``: the parameter is the first and
    named ``self`` (rule 0). ``tensor_adapter``: value -> TensorArg or None (rule 4).
    Raises ArgumentError naming the parameter for a value no rule can take."""
    ctx = MatchContext(name, self_rule, tensor_adapter, classify)
    sort = (None if annotation is None else
            "static" if isinstance(annotation, _StaticAnnotation) else "annotated")
    for match in _RULES[bool(self_rule), sort]:
        got = match(value, annotation, ctx)
        if got is not None:
            return got
    raise AssertionError("rule 7 takes every value")        # unreachable: the last rule


# -- the hot path: per-parameter binders -----------------------------------------------------

def make_binder(annotation, self_rule: bool, adapter):
    """A function ``bind(value, keys, leaves) -> bool`` for one parameter, which appends its key
    part and ABI leaves exactly as ``classify`` gives them, or returns False when the value
    needs the full path: the binder of the kind its annotation names, else (a bare parameter)
    :func:`auto_binder`."""
    for kind in KINDS:
        binder = getattr(kind, "binder", None)
        got = binder(annotation, self_rule, adapter) if binder is not None else None
        if got is not None:
            return got
    return auto_binder(adapter)


def auto_binder(adapter):
    """The binder of a bare parameter: by the value's exact type, the kind that takes it
    (each kind's ``AUTO_TYPES``; a tuple or list binds its items by this same binder); else
    the kinds' fallbacks in the table's order (a tensor, through the tensor ``adapter``; a
    numpy scalar or a composite other than a tuple or list: False, the full path binds them; a
    dtype object), each True / False when it decides, None when the value is not its kind; else
    rule 7."""
    by_type = {t: getattr(kind, method) for kind in KINDS
               for t, method in getattr(kind, "AUTO_TYPES", {}).items()}

    def bind_auto(v, keys, leaves):
        t = type(v)
        bind = by_type.get(t)
        if bind is not None:
            return bind(v, keys, leaves)
        for fallback in fallbacks:
            took = fallback(v, keys, leaves)
            if took is not None:
                return took
        return StaticKind.bind_value(v, keys, leaves)
    by_type[tuple] = by_type[list] = CompositeKind.bind_sequence(bind_auto)
    fallbacks = [TensorKind.fallback(adapter), ScalarKind.bind_fallback,
                 CompositeKind.bind_fallback, DTypeKind.bind_fallback]
    return bind_auto


# -- the generated call path -----------------------------------------------------------------

def kind_of(annotation, self_rule: bool):
    """How the generated call path reads a parameter: 'static', 'tensor', 'auto',
    ('scalar', lo, hi, is_float) for an annotated scalar (what ``bind_scalar`` accepts), or None
    when it cannot (the kernel then always takes the full path)."""
    if annotation is None and not self_rule:
        return "auto"
    for kind in KINDS:
        got = kind.fast_kind(annotation, self_rule)
        if got is not None:
            return got
    return None


def fast_parts(i: int, v: str, kind) -> dict:
    """The generated code's pieces for parameter ``i`` (named ``v``) read as ``kind``: ``read``
    (lines), and where it has them ``sig`` (its part of the call signature), ``xs`` (its memo
    tail), ``leaves`` (its ABI values), ``auto_leaves`` (lines) and ``namespace`` (constants)."""
    if kind == "auto":
        return auto_parts(i, v)
    return FAST_KINDS[kind if isinstance(kind, str) else kind[0]].fast_parts(i, v, kind)


def auto_parts(i: int, v: str) -> dict:
    """A bare parameter read inline: one branch per exact type, each kind's ``AUTO`` in
    ``AUTO_READERS`` order, else the tensor adapter."""
    branches = [b for kind in AUTO_READERS for b in kind.AUTO]
    read = f"    t{i} = type({v})\n"
    for n, (cond, body) in enumerate(branches):
        read += f"    {'if' if n == 0 else 'elif'} {cond}:\n" + body
    read += "    else:\n" + TensorKind.AUTO_ELSE
    leaves = TensorKind.AUTO_LEAVES + DescriptorKind.AUTO_LEAVES
    fmt = dict(v=v, i=i, miss="{miss}")
    return {"read": read.format(**fmt), "sig": f"g{i}", "xs": f"x{i}", "leaves": f"*c{i}",
            "auto_leaves": leaves.format(**fmt)}
