"""What changed between two specializations of a kernel, in a few words per parameter: the
reasons a ``RecompileWarning`` lists (jit/kernel.py).

``closest(specs, earlier)`` picks, among the specializations compiled before, the one whose
parameters differ from ``specs`` in the fewest places (the latest on a tie), and
``param_change(old, new)`` says what changed in one parameter: a tensor's dtype, rank, unit
strides, index width or base alignment; a scalar's dtype; a static value old -> new; a TMA
descriptor's box / swizzle / fill / L2 promotion; a composite's changed parts by name.

A static object's fields are named when its key names them: a ``__static_key__()`` that returns
a tuple of ``(name, value)`` pairs (``("softmax_scale", 0.125), ...``: the FlashAttention
policies do) or the structural key of an object without one (its attributes) gives
"softmax_scale 0.125 -> 0.2" instead of "a static field of ... changed".
"""
from __future__ import annotations

from typing import Optional

from ..runtime.tensormap import TensorDescriptor
from .specs import (CompositeSpec, PointerArgSpec, ScalarSpec, StaticSpec, TensorArgSpec,
                    TensorMapSpec)

__all__ = ["param_change", "closest", "describe_changes"]


def _short(v, n: int = 40) -> str:
    r = repr(v)
    return r if len(r) <= n else r[:n - 3] + "..."


def _alignment(ta) -> int:
    """The base address's alignment in bytes, up to 16 (what the key records)."""
    p = int(getattr(ta, "data_ptr", 0) or 0) % 16
    return 16 if p == 0 else p & -p


def _tensor_change(old: TensorArgSpec, new: TensorArgSpec) -> str:
    out = []
    if old.dtype is not new.dtype:
        out.append(f"dtype {old.dtype.__name__} -> {new.dtype.__name__}")
    if old.ndim != new.ndim:
        out.append(f"rank {old.ndim} -> {new.ndim}")
    elif old.unit != new.unit:
        for k, (a, b) in enumerate(zip(old.unit, new.unit)):
            if a != b:
                out.append(f"dim {k} stride {old.ta.strides[k]} -> {new.ta.strides[k]} elements "
                           f"({'no longer' if a else 'now'} contiguous)")
    if old.index_dtype is not new.index_dtype:
        out.append(f"index {old.index_dtype.__name__} -> {new.index_dtype.__name__}")
    if old.aligned16 != new.aligned16:
        out.append(f"base alignment {_alignment(old.ta)} -> {_alignment(new.ta)} bytes")
    return ", ".join(out) or "layout changed"


_DESCRIPTOR_FIELDS = ("dtype", "rank", "box", "swizzle", "element_strides", "oob_fill",
                      "l2_promotion")


def _composite_change(old: CompositeSpec, new: CompositeSpec) -> str:
    t_old, t_new = type(old.template), type(new.template)
    if old.kind != new.kind or t_old is not t_new:
        return f"{old.desc} -> {new.desc}" if len(old.desc) + len(new.desc) < 80 else (
            f"type {t_old.__name__} -> {t_new.__name__}")
    out = []
    if old.key[1] != new.key[1]:
        if isinstance(old.template, TensorDescriptor):
            for f in _DESCRIPTOR_FIELDS:
                a, b = getattr(old.template, f), getattr(new.template, f)
                if a != b:
                    out.append(f"{f} {a!r} -> {b!r}" if f != "dtype" else f"dtype {a} -> {b}")
        elif old.key_desc and new.key_desc:                 # it describes its key (a layout)
            out.append(f"{old.key_desc} -> {new.key_desc}")
        elif old.kind in ("tuple", "list", "dict"):
            out.append(f"length {len(old.parts)} -> {len(new.parts)}" if old.kind != "dict"
                       else f"keys {list(old.names)} -> {list(new.names)}")
        else:
            skel_a, skel_b = old.key[1], new.key[1]     # (class key, encoded static key)
            fields = (_field_changes(skel_a[1], skel_b[1], encoded=True)
                      if isinstance(skel_a, tuple) and isinstance(skel_b, tuple)
                      and len(skel_a) == len(skel_b) == 2 else None)
            out.append(fields or f"its static fields ({_short(old.template)} -> "
                                 f"{_short(new.template)})")
    if len(old.parts) == len(new.parts):
        sep = "[{}]" if old.kind in ("tuple", "list") else ".{}"
        for n, a, b in zip(new.names, old.parts, new.parts):
            c = param_change(a, b)
            if c is not None:
                out.append(f"{sep.format(n)}: {c}")
    return "; ".join(out) or "its static parts changed"


def _named_pairs(k) -> Optional[tuple]:
    """``k`` if it is a non-empty tuple of (str, value) pairs, else None."""
    if isinstance(k, tuple) and k and all(
            isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], str) for p in k):
        return k
    return None


def _decoded(k):
    """A value encoded by static_key() shown as plain data again (floats and bools lose their
    type tags, tuples and lists their kind), for display only."""
    if isinstance(k, tuple) and len(k) == 2 and k[0] in ("float", "bool"):
        return k[1]
    if isinstance(k, tuple) and k and k[0] in ("tuple", "list"):
        items = tuple(_decoded(x) for x in k[1:])
        return items if k[0] == "tuple" else list(items)
    return k


def _field_changes(a, b, encoded: bool = False) -> Optional[str]:
    """'softmax_scale 0.125 -> 0.2, tile_n 128 -> 64' for two keys that are tuples of
    (name, value) pairs (``encoded``: made by static_key()); None when they are not, or when no
    named value differs."""
    if encoded:
        a, b = _decoded(a), _decoded(b)
    pa, pb = _named_pairs(a), _named_pairs(b)
    if pa is None or pb is None:
        return None
    da, db = dict(pa), dict(pb)
    out = []
    for n, v in pb:
        if n not in da:
            out.append(f"{n} added ({_short(v, 30)})")
        elif da[n] != v or type(da[n]) is not type(v):
            out.append(f"{n} {_short(da[n], 30)} -> {_short(v, 30)}")
    out.extend(f"{n} removed" for n, _ in pa if n not in db)
    return ", ".join(out) or None


def _static_fields_change(ka, kb) -> Optional[str]:
    """The named fields that changed between two static keys of objects of one class: a
    ``__static_key__()`` of (name, value) pairs (``("sk", class, key)``), or an object's
    attributes (``("obj", class, (name, key), ...)``)."""
    if not (isinstance(ka, tuple) and isinstance(kb, tuple) and len(ka) >= 2 and len(kb) >= 2
            and ka[0] == kb[0] and ka[1] == kb[1]):
        return None
    if ka[0] == "sk" and len(ka) == 3 and len(kb) == 3:
        return _field_changes(ka[2], kb[2])
    if ka[0] == "obj" and _named_pairs(ka[2:]) and _named_pairs(kb[2:]):
        return _field_changes(*(tuple((n, _decoded(v)) for n, v in k[2:]) for k in (ka, kb)))
    return None


def param_change(old, new) -> Optional[str]:
    """What changed from spec ``old`` to spec ``new`` of one parameter, in a few words; None
    when their key parts are equal."""
    if old.key == new.key:
        return None
    if type(old) is type(new):
        if isinstance(old, StaticSpec):
            a, b = old.value, new.value
            fields = _static_fields_change(old.key[1], new.key[1])
            if fields is not None:
                return fields
            if type(a) is not type(b):
                return f"{type(a).__name__} {_short(a)} -> {type(b).__name__} {_short(b)}"
            if _short(a) != _short(b):
                return f"{_short(a)} -> {_short(b)}"
            return f"a static field of {type(a).__name__} {_short(a)} changed"
        if isinstance(old, ScalarSpec):
            return f"{old.dtype.__name__} -> {new.dtype.__name__}"
        if isinstance(old, TensorArgSpec):
            return _tensor_change(old, new)
        if isinstance(old, CompositeSpec):
            return _composite_change(old, new)
        if isinstance(old, (PointerArgSpec, TensorMapSpec)):
            return f"{old.desc} -> {new.desc}"
    return f"{_kind(old)} -> {_kind(new)}"


def _kind(spec) -> str:
    if isinstance(spec, StaticSpec):
        return f"static {type(spec.value).__name__} {_short(spec.value, 30)}"
    if isinstance(spec, TensorArgSpec):
        return f"tensor of {spec.dtype.__name__}"
    return spec.desc if len(spec.desc) <= 40 else spec.desc[:37] + "..."


def _key_distance(a, b) -> int:
    """How many leaves of two key parts differ (tuples of one length compared item by item)."""
    if a == b:
        return 0
    if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b):
        return sum(_key_distance(x, y) for x, y in zip(a, b))
    return 1


def _differing(a: list, b: list) -> tuple:
    return (sum(x.key != y.key for x, y in zip(a, b)),
            sum(_key_distance(x.key, y.key) for x, y in zip(a, b)))


def closest(specs: list, earlier: list) -> int:
    """Index in ``earlier`` (lists of specs) of the one differing from ``specs`` in the fewest
    parameters (then in the fewest parts of them: a tensor's alignment, a descriptor's box...);
    the latest one on a tie."""
    best, best_n = len(earlier) - 1, None
    for i in range(len(earlier) - 1, -1, -1):
        n = _differing(specs, earlier[i])
        if best_n is None or n < best_n:
            best, best_n = i, n
    return best


def describe_changes(names: list, old: list, new: list) -> str:
    """'steps: 1 -> 2; x: base alignment 16 -> 4 bytes' for the parameters that differ."""
    out = []
    for n, a, b in zip(names, old, new):
        c = param_change(a, b)
        if c is not None:
            out.append(f"{n}: {c}")
    return "; ".join(out)
