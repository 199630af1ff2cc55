"""Recompile reasons that name fields: two static keys compared field by field, where the keys
name their fields (a ``__static_key__()`` of ``(name, value)`` pairs, or the structural key of an
object's attributes). The kinds' ``change`` methods (static.py, composite.py) use these."""
from __future__ import annotations

from typing import Optional

from .base import short

__all__ = ["field_changes", "static_fields_change"]


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
    if isinstance(k, tuple) and len(k) == 3 and k[0] == "np" and isinstance(k[1], str):
        return k[2]                                 # a numpy scalar: ("np", dtype, value)
    if isinstance(k, tuple) and k and k[0] in ("tuple", "list"):
        items = tuple(_decoded(x) for x in k[1:])
        return items if k[0] == "tuple" else list(items)
    return k


def field_changes(a, b, encoded: bool = False) -> Optional[str]:
    """'softmax_scale 0.125 -> 0.2, tile_n 128 -> 64' for two keys that are tuples of
    (name, value) pairs (``encoded``: made by static_key()); None when they are not, or when no
    named value differs. A field whose value is itself an object keyed by named fields (a
    policy's epilogue) is followed into: 'epilogue.scale 1.0 -> 2.0'."""
    out = _changes(a, b, encoded)
    return ", ".join(out) if out else None


def _changes(a, b, encoded: bool, depth: int = 0) -> list:
    if encoded:
        a, b = _decoded(a), _decoded(b)
    pa, pb = _named_pairs(a), _named_pairs(b)
    if pa is None or pb is None:
        return []
    if encoded:                 # each field's value too: ('float', 1.0) shows as 1.0
        pa, pb = (tuple((n, _decoded(v)) for n, v in p) for p in (pa, pb))
    da, db = dict(pa), dict(pb)
    out = []
    for n, v in pb:
        if n not in da:
            out.append(f"{n} added ({_shown(v)})")
        elif da[n] != v or type(da[n]) is not type(v):
            na, nb = _nested(da[n]), _nested(v)
            inner = _changes(na[1], nb[1], True, depth + 1) \
                if na is not None and nb is not None and na[0] == nb[0] and depth < 4 else []
            out.extend(f"{n}.{c}" for c in inner) if inner else \
                out.append(f"{n} {_shown(da[n])} -> {_shown(v)}")
    out.extend(f"{n} removed" for n, _ in pa if n not in db)
    return out


def _shown(v) -> str:
    """A field's value for a recompile reason: a nested object's key as ``Bias(has_bias=True)``
    (not the key's tuples), anything else by its repr, cut to 30 characters."""
    nested = _nested(v)
    if nested is None:
        return short(v, 30)
    cls = nested[0]
    name = cls[2] if isinstance(cls, tuple) and len(cls) > 2 else "?"
    fields = ", ".join(f"{n}={short(_decoded(x), 12)}" for n, x in nested[1])
    text = f"{str(name).rsplit('.', 1)[-1]}({fields})"
    return text if len(text) <= 40 else text[:37] + "..."


def _nested(k):
    """(class key, field pairs) of a static key that names an object's fields: ``("sk", class,
    pairs)`` (a ``__static_key__()`` of pairs) or ``("obj", class, (name, key), ...)``; else
    None."""
    if not (isinstance(k, tuple) and len(k) >= 3):
        return None
    if k[0] == "sk" and len(k) == 3 and _named_pairs(k[2]):
        return k[1], k[2]
    if k[0] == "obj" and _named_pairs(k[2:]):
        return k[1], k[2:]
    return None


def static_fields_change(ka, kb) -> Optional[str]:
    """The named fields that changed between two static keys of objects of one class: a
    ``__static_key__()`` of (name, value) pairs (``("sk", class, key)``), or an object's
    attributes (``("obj", class, (name, key), ...)``)."""
    if not (isinstance(ka, tuple) and isinstance(kb, tuple) and len(ka) >= 2 and len(kb) >= 2
            and ka[0] == kb[0] and ka[1] == kb[1]):
        return None
    if ka[0] == "sk" and len(ka) == 3 and len(kb) == 3:
        return field_changes(ka[2], kb[2])
    if ka[0] == "obj" and _named_pairs(ka[2:]) and _named_pairs(kb[2:]):
        return field_changes(*(tuple((n, _decoded(v)) for n, v in k[2:]) for k in (ka, kb)))
    return None
