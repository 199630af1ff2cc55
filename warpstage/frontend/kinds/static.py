"""The static kind: a value that exists only while compiling (rules 0, 1 and 7 of DESIGN §2,
and rule 7's enum case, which the table places before rule 3: an ``IntEnum`` member is an int
too). Its key part is ``("static", static_key(value))``; it has no ABI slots."""
from __future__ import annotations

import enum

from ...core.static import REJECTED, StaticValue, _StaticAnnotation
from ...core.static_key import UnkeyableError, static_key
from ...errors import ArgumentError
from ...lang.pointer import Pointer, PointerSpec
from ...lang.scalars import Scalar
from ...lang.tensor import Tensor, TensorSpec
from .base import RULES, Kind, mismatch, short

__all__ = ["StaticKind", "ann_name"]


def ann_name(ann) -> str:
    """An annotation as the user wrote it: 'ws.Int32', 'ws.Tensor[Float32, 2]', 'Config'."""
    if isinstance(ann, type):
        return f"ws.{ann.__name__}" if ann.__module__.startswith("warpstage") else ann.__qualname__
    return repr(ann)


class StaticKind(Kind):
    """A static parameter: the value itself is the traced value."""

    STORED_TAG = "static"
    FAST_TAG = "static"

    def __init__(self, value, rule: int, name: str):
        self.value = value
        self.rule = rule
        self.binding = "static"
        self.desc = f"{type(value).__name__} = {short(value, 40)}"
        try:
            self.key = ("static", static_key(value))
        except UnkeyableError as e:
            raise ArgumentError(
                f"parameter '{name}': its value {short(value)} is static (rule {rule}: "
                f"{RULES[rule]}) but cannot be keyed for the compile cache ({e}).\nFix: give "
                f"{type(value).__name__} a __static_key__() method returning a hashable tuple of "
                "what affects code generation, or make it hashable.") from None

    def make(self, it, name):
        return self.value

    # -- match rules (table.py) -----------------------------------------------------------------
    @classmethod
    def match_self(cls, value, ann, ctx):
        """Rule 0: the first parameter, named ``self``."""
        return cls(value, 0, ctx.name) if ctx.self_rule else None

    @classmethod
    def match_wrapped(cls, value, ann, ctx):
        """Rule 1: passed as ``ws.Static(v)``."""
        return cls(value.value, 1, ctx.name) if isinstance(value, StaticValue) else None

    @classmethod
    def match_annotated(cls, value, ann, ctx):
        """Rule 1: annotated ``ws.Static[T]`` (value checked against ``T``)."""
        if not isinstance(ann, _StaticAnnotation):
            return None
        tp = ann.tp
        if tp is Tensor or isinstance(tp, (TensorSpec, PointerSpec)) or tp is Pointer:
            raise ArgumentError(
                f"parameter '{ctx.name}' is annotated ws.Static[{ann_name(tp)}], a "
                "contradiction: a tensor (or pointer) is dynamic by rule 4 — its data lives on "
                "the GPU and is read at run time; only its dtype, rank and strides are part of "
                f"the key.\nFix: annotate it {ann_name(tp)} (or leave it bare).")
        return cls(ann.check(value, ctx.name), 1, ctx.name)

    @classmethod
    def match_enum(cls, value, ann, ctx):
        """Rule 7 for an enum member, checked before rule 3 (an ``IntEnum`` member is an int)."""
        return cls(value, 7, ctx.name) if isinstance(value, enum.Enum) else None

    @classmethod
    def match_kernel_only(cls, value, ann, ctx):
        """Not a kind: values that exist only inside a kernel, or a class given where its
        instance is meant, are errors with the fix, before rule 7 would key them."""
        name = ctx.name
        if isinstance(value, (Scalar, Tensor, Pointer)):
            raise ArgumentError(f"parameter '{name}': a traced dynamic value cannot be passed to a "
                                "kernel launch from inside a kernel")
        if isinstance(value, type) and value.__name__ in ("TensorDescriptor", "TmaDescriptor") \
                and value.__module__.startswith("warpstage."):
            raise ArgumentError(
                f"parameter '{name}': got the class ws.tma.{value.__name__}, not a descriptor; a "
                "descriptor's dtype, box and swizzle are part of the kernel's specialization, so "
                "the class alone cannot be compiled.\nFix: pass a descriptor, "
                "ws.tma.TensorDescriptor(x, box=(32, 32)), or, to compile from types, "
                "ws.tma.TensorDescriptor.spec(ws.Float32, box=(32, 32), swizzle=128).")
        if isinstance(value, type) and value.__name__ == "Fragment" and \
                value.__module__ == "warpstage.lang.fragment":
            raise ArgumentError(
                f"parameter '{name}': got the class ws.mma.Fragment; a fragment is a per-thread "
                "register array that exists only inside a kernel (built by ws.mma / ws.wgmma "
                "calls or ws.mma.Fragment.filled), not a kernel parameter.\nFix: pass what the "
                "fragment is made from (a tensor, e.g. ws.Tensor[ws.Float32, 2], or scalars) and "
                "build the fragment inside the kernel, e.g. ws.mma.Fragment.filled(ws.Float32, 4, "
                "0.0), or pass a fragment to a @ws.jit helper instead.")
        return None

    @classmethod
    def match_any(cls, value, ann, ctx):
        """Rule 7: anything else is static (the receiver rule)."""
        return cls(value, 7, ctx.name)

    # -- disk -----------------------------------------------------------------------------------
    def stored(self):
        return {"k": "static", "key": repr(self.key), "desc": self.desc}

    @classmethod
    def bind_stored(cls, d, value, name, out):
        try:
            got = repr(("static", static_key(value)))
        except (UnkeyableError, RecursionError):
            got = None
        if got != d["key"]:
            raise mismatch(name, f"the static value {d['desc']}", repr(value)[:60])

    # -- recompile reasons ----------------------------------------------------------------------
    def change(self, new):
        from .diff import static_fields_change
        a, b = self.value, new.value
        fields = static_fields_change(self.key[1], new.key[1])
        if fields is not None:
            return fields
        if type(a) is not type(b):
            return f"{type(a).__name__} {short(a, 40)} -> {type(b).__name__} {short(b, 40)}"
        if short(a, 40) != short(b, 40):
            return f"{short(a, 40)} -> {short(b, 40)}"
        return f"a static field of {type(a).__name__} {short(a, 40)} changed"

    def kind_text(self):
        return f"static {type(self.value).__name__} {short(self.value, 30)}"

    # -- the fast paths -------------------------------------------------------------------------
    @classmethod
    def fast_kind(cls, annotation, self_rule):
        return "static" if self_rule or isinstance(annotation, _StaticAnnotation) else None

    @classmethod
    def binder(cls, annotation, self_rule, adapter):
        if not self_rule and isinstance(annotation, _StaticAnnotation):
            return cls.annotated_binder(annotation)
        return cls.bind_value if self_rule else None

    @staticmethod
    def annotated_binder(annotation):
        """The hot-path binder of ``ws.Static[T]``: the value as rule 1 takes it
        (``_StaticAnnotation.accept``, the full path's own check: a numpy scalar of ``T`` keys as
        its Python number), keyed; a value it rejects takes the full path, which explains."""
        accept = annotation.accept

        def bind_annotated(v, keys, leaves):
            v = accept(v)
            return v is not REJECTED and StaticKind.bind_value(v, keys, leaves)
        return bind_annotated

    @staticmethod
    def bind_value(v, keys, leaves):
        """The hot-path binder of a static value (rules 0 and 1; rule 7 for a bare parameter
        whose value no other kind's fast binder took): its key, no leaves."""
        try:
            keys.append(("static", static_key(v)))
        except UnkeyableError:
            return False
        return True

    FAST = '''\
    try:
        k{i} = _static_key({v})
    except _Unkeyable:
        {miss}
'''
    AUTO = (("{v} is None", '''\
        g{i} = 4
        c{i} = ()
        e{i} = None
'''),)

    @classmethod
    def fast_parts(cls, i, v, kind):
        """The value's type and key: with both in the call signature a memo hit is a value rule
        1 accepts (``_StaticAnnotation.accept`` decides by them) keyed as the accepted one was
        (``3 + 0j`` keys equal to ``3``, but is no ``ws.Static[int]``)."""
        return {"read": cls.FAST.format(v=v, i=i, miss="{miss}"), "sig": f"type({v}), k{i}"}
