"""The composite kind: a static skeleton with parts classified by the same rules. Rule 5: an
object with the value protocol (``__extract_values__``), a ``@ws.struct`` / dataclass, a
NamedTuple; rule 6: a tuple, list or dict with str keys. Key part ``(kind, skeleton key, parts'
keys)``; ABI slots: the parts', in order."""
from __future__ import annotations

import dataclasses
import typing

from ...core.static_key import UnkeyableError, class_key, static_key
from ...core.values import extract, has_protocol, rebuild
from ...errors import ArgumentError
from .base import Kind, bind_stored, mismatch, param_change, short

__all__ = ["CompositeKind", "host_parts", "skeleton_static_key"]


def skeleton_static_key(template, kind):
    """The key of a composite's static skeleton: ``__static_key__()`` when defined; for a
    value-protocol object without one, its attributes other than the extracted dynamic leaves
    (so a static field such as a tag or a stage count is never silently ignored)."""
    t = type(template)
    if kind == "proto" and hasattr(t, "__static_key__"):
        return (class_key(t), static_key(template.__static_key__()))
    if kind == "proto" and hasattr(template, "__dict__"):
        leaves = [id(v) for v in host_parts(template, "proto", None)]
        rest = tuple((n, static_key(v)) for n, v in sorted(vars(template).items())
                     if id(v) not in leaves)
        return (class_key(t), rest)
    return class_key(t)


def _skeleton(value, kind):
    if kind in ("tuple", "list"):
        return len(value)
    if kind == "dict":
        return tuple(value)
    return skeleton_static_key(value, kind)


def host_parts(value, kind, names):
    """The parts of a composite host value, in its parts' order."""
    if kind in ("tuple", "list", "namedtuple"):
        return list(value)
    if kind == "dict":
        return [value[n] for n in names]
    if kind == "dataclass":
        return [getattr(value, n) for n in names]
    return extract(value)


def _field_annotation(cls, name):
    try:
        hints = typing.get_type_hints(cls)
    except Exception:
        hints = getattr(cls, "__annotations__", {})
    return hints.get(name)


class CompositeKind(Kind):
    """Rules 5 and 6: a static skeleton with classified parts."""

    STORED_TAG = "composite"

    def __init__(self, kind: str, template, parts: list, names: list, rule: int):
        self.kind = kind
        self.template = template
        self.parts = parts
        self.names = names
        self.rule = rule
        dyn = [p.binding != "static" for p in parts]
        if kind == "proto" and any(dyn):
            self.binding = "mixed"          # a static skeleton with dynamic leaves, by definition
        else:
            self.binding = ("mixed" if any(dyn) and not all(dyn) else
                            "dynamic" if all(dyn) and parts else "static")
        try:
            skel_key = _skeleton(template, kind)
        except UnkeyableError as e:
            raise ArgumentError(
                f"an argument of type {type(template).__name__} has static parts that cannot be "
                f"keyed for the compile cache ({e}).\nFix: give {type(template).__name__} a "
                "__static_key__() method returning a hashable tuple of its static fields.") from None
        self.key = (kind, skel_key, tuple(p.key for p in parts))
        tname = kind if kind in ("tuple", "list", "dict") else type(template).__name__
        self.desc = f"{tname}(" + ", ".join(f"{n}: {p.desc}" for n, p in zip(names, parts)) + ")"
        describe = getattr(template, "__ws_describe__", None) if kind == "proto" else None
        if describe is not None:
            self.desc, self.key_desc = describe()

    def _part_name(self, name, n):
        return f"{name}[{n}]" if self.kind in ("tuple", "list") else f"{name}.{n}"

    def abi(self, name):
        out = []
        for n, p in zip(self.names, self.parts):
            out.extend(p.abi(self._part_name(name, n)))
        return out

    def host_leaves(self, value, out):
        for part_value, p in zip(host_parts(value, self.kind, self.names), self.parts):
            p.host_leaves(part_value, out)

    def make(self, it, name):
        vals = [p.make(it, f"{name}.{n}") for n, p in zip(self.names, self.parts)]
        k = self.kind
        if k == "tuple":
            return tuple(vals)
        if k == "list":
            return vals
        if k == "dict":
            return dict(zip(self.names, vals))
        if k == "namedtuple":
            return type(self.template)(*vals)
        if k == "dataclass":
            obj = object.__new__(type(self.template))
            for n, v in zip(self.names, vals):
                object.__setattr__(obj, n, v)
            return obj
        return rebuild(self.template, vals)

    # -- match rules ----------------------------------------------------------------------------
    @classmethod
    def match_protocol(cls, value, ann, ctx):
        """Rule 5: an object with the value protocol; its leaves are the parts."""
        if not has_protocol(value):
            return None
        parts = host_parts(value, "proto", None)
        fields = getattr(type(value), "__ws_fields__", None)
        leaf_names = getattr(type(value), "__ws_leaf_names__", None)
        names = (list(fields[1]) if fields else list(leaf_names(value)) if leaf_names else
                 [str(i) for i in range(len(parts))])
        return cls("proto", value, [ctx.part(p, None, f"{ctx.name}[{i}]")
                                    for i, p in enumerate(parts)], names, 5)

    @classmethod
    def match_record(cls, value, ann, ctx):
        """Rule 5: a dataclass instance or a NamedTuple; fields keep their annotations."""
        t = type(value)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            names = [f.name for f in dataclasses.fields(value)]
            return cls("dataclass", value, [
                ctx.part(getattr(value, n), _field_annotation(t, n), f"{ctx.name}.{n}")
                for n in names], names, 5)
        if isinstance(value, tuple) and hasattr(t, "_fields"):
            names = list(t._fields)
            return cls("namedtuple", value, [
                ctx.part(v, _field_annotation(t, n), f"{ctx.name}.{n}")
                for n, v in zip(names, value)], names, 5)
        return None

    @classmethod
    def match_container(cls, value, ann, ctx):
        """Rule 6: a tuple or list (items by these rules), or a dict with str keys."""
        t = type(value)
        if t in (tuple, list):
            return cls(t.__name__, value, [ctx.part(v, None, f"{ctx.name}[{i}]")
                                           for i, v in enumerate(value)],
                       [str(i) for i in range(len(value))], 6)
        if t is dict and all(isinstance(k, str) for k in value):
            names = list(value.keys())
            return cls("dict", value, [ctx.part(value[k], None, f"{ctx.name}[{k!r}]")
                                       for k in names], names, 6)
        return None

    # -- disk -----------------------------------------------------------------------------------
    def stored(self):
        parts = [p.stored() for p in self.parts]
        if any(p is None for p in parts):
            return None
        return {"k": "composite", "kind": self.kind, "names": list(self.names),
                "skel": repr(self.key[1]), "parts": parts}

    @classmethod
    def bind_stored(cls, d, value, name, out):
        kind = d["kind"]
        try:
            skel = repr(_skeleton(value, kind))
            parts = host_parts(value, kind, d["names"])
        except (AttributeError, KeyError, TypeError, UnkeyableError):
            skel, parts = None, None
        if skel != d["skel"] or parts is None or len(parts) != len(d["parts"]):
            if "what" in d:                      # the kind said what it was (a descriptor)
                raise mismatch(name, d["what"], cls.got_stored(value))
            raise mismatch(name, f"a {kind} argument whose static part is {d['skel']}",
                           repr(value)[:80])
        sep = "[{}]" if kind in ("tuple", "list") else ".{}"
        for n, part_d, part in zip(d["names"], d["parts"], parts):
            bind_stored(part_d, part, name + sep.format(n), out)

    @staticmethod
    def got_stored(value) -> str:
        """What a mismatch error with a stored "what" says it got."""
        from ...runtime.tensormap import TensorDescriptor
        return repr(value) if type(value) is TensorDescriptor else f"a {type(value).__name__}"

    # -- recompile reasons ----------------------------------------------------------------------
    def change(self, new):
        old = self
        t_old, t_new = type(old.template), type(new.template)
        if old.kind != new.kind or t_old is not t_new:
            return f"{old.desc} -> {new.desc}" if len(old.desc) + len(new.desc) < 80 else (
                f"type {t_old.__name__} -> {t_new.__name__}")
        out = []
        if old.key[1] != new.key[1]:
            out.append(self.skeleton_change(new))
        if len(old.parts) == len(new.parts):
            sep = "[{}]" if old.kind in ("tuple", "list") else ".{}"
            for n, a, b in zip(new.names, old.parts, new.parts):
                c = param_change(a, b)
                if c is not None:
                    out.append(f"{sep.format(n)}: {c}")
        return "; ".join(out) or "its static parts changed"

    def skeleton_change(self, new) -> str:
        """What changed in the static skeleton (the keys' second items differ)."""
        from .diff import field_changes
        old = self
        if old.key_desc and new.key_desc:                 # it describes its key (a layout)
            return f"{old.key_desc} -> {new.key_desc}"
        if old.kind in ("tuple", "list", "dict"):
            return (f"length {len(old.parts)} -> {len(new.parts)}" if old.kind != "dict"
                    else f"keys {list(old.names)} -> {list(new.names)}")
        skel_a, skel_b = old.key[1], new.key[1]     # (class key, encoded static key)
        fields = (field_changes(skel_a[1], skel_b[1], encoded=True)
                  if isinstance(skel_a, tuple) and isinstance(skel_b, tuple)
                  and len(skel_a) == len(skel_b) == 2 else None)
        return fields or (f"its static fields ({short(old.template, 40)} -> "
                          f"{short(new.template, 40)})")

    # -- the fast paths -------------------------------------------------------------------------
    @staticmethod
    def bind_sequence(bind_auto):
        """The hot-path binder of a bare tuple or list (rule 6): its structure, then each
        item's key part by ``bind_auto``; a dict, a NamedTuple, a dataclass or a value-protocol
        object takes the full path."""
        def bind(v, keys, leaves):
            parts: list = []
            for x in v:
                if not bind_auto(x, parts, leaves):
                    return False
            keys.append((type(v).__name__, len(v), tuple(parts)))
            return True
        return bind

    @staticmethod
    def bind_fallback(v, keys, leaves):
        """Rules 5 and 6 other than a bare tuple or list take the full path (False); None for a
        value of no composite type."""
        t = type(v)
        if (t is dict or hasattr(t, "__extract_values__") or hasattr(t, "__extract_mlir_values__")
                or hasattr(t, "__dataclass_fields__") or hasattr(t, "_fields")):
            return False
        return None
