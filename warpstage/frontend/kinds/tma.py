"""The TMA-descriptor kind: a ``ws.tma.TensorDescriptor`` (runtime/tensormap.py) is a rule-5
composite whose static skeleton is its geometry (dtype, box, swizzle, element strides, fill, L2
promotion: ``__static_key__()``) and whose one dynamic leaf is the 128-byte CUtensorMap, passed
by value as a ``!tensormap`` kernel parameter (``.param .align 64 .b8 [128]``, PTX ISA
"Tensor-map"; CUDA driver API ``cuTensorMapEncodeTiled``). The map is encoded at the
descriptor's first launch and kept in it."""
from __future__ import annotations

import itertools

from ...core.trace import Origin
from ...ir.types import tensormap
from ...runtime.tensormap import TensorDescriptor, TensorMapArg
from .base import Kind, mismatch
from .composite import CompositeKind

__all__ = ["TensorMapKind", "DescriptorKind", "descriptor_key"]

_DESCRIPTOR_FIELDS = ("dtype", "rank", "box", "swizzle", "element_strides", "oob_fill",
                      "l2_promotion")


class TensorMapKind(Kind):
    """The dynamic leaf of a descriptor: one ``!tensormap`` slot, the CUtensorMap by value (the
    descriptor's static geometry is its skeleton's key)."""

    STORED_TAG = "tensormap"
    rule = 4
    binding = "dynamic"
    desc = "!tensormap (128-byte TMA descriptor)"
    key = ("tensormap",)

    def abi(self, name):
        return [(name, tensormap)]

    def host_leaves(self, value, out):
        out.append(value)

    def make(self, it, name):
        from ...lang.tma import TensorMap
        return TensorMap._wrap(next(it), Origin(f"parameter '{name}' (TMA descriptor)"))

    @classmethod
    def match(cls, value, ann, ctx):
        return cls() if type(value) is TensorMapArg else None

    def stored(self):
        return {"k": "tensormap"}

    @classmethod
    def bind_stored(cls, d, value, name, out):
        if type(value) is not TensorMapArg:         # a part of the descriptor checked above
            raise mismatch(name, "a TMA descriptor's tensor map", type(value).__name__)
        out.append(value)


class DescriptorKind(CompositeKind):
    """A ``ws.tma.TensorDescriptor`` argument (its exact type): the composite of rule 5, with
    the descriptor's geometry in its stored form and its recompile reasons, and fast forms of
    its own (a key per geometry, computed once: :func:`descriptor_key`)."""

    @classmethod
    def match_descriptor(cls, value, ann, ctx):
        """Rule 5 for a descriptor of exactly this class (a subclass is any protocol object)."""
        return super().match_protocol(value, ann, ctx) if type(value) is TensorDescriptor else None

    def stored(self):
        out = super().stored()
        t = self.template
        if out is not None:
            out["what"] = (f"a ws.tma.TensorDescriptor of {t.dtype} with box {t.box}, swizzle "
                           f"{t.swizzle}, element_strides {t.element_strides}, oob_fill "
                           f"{t.oob_fill!r}, l2_promotion {t.l2_promotion}")
        return out

    def skeleton_change(self, new):
        out = []
        for f in _DESCRIPTOR_FIELDS:
            a, b = getattr(self.template, f), getattr(new.template, f)
            if a != b:
                out.append(f"{f} {a!r} -> {b!r}" if f != "dtype" else f"dtype {a} -> {b}")
        return "; ".join(out)

    # -- the fast paths -------------------------------------------------------------------------
    @classmethod
    def fast_kind(cls, annotation, self_rule):
        return "auto" if annotation is TensorDescriptor else None   # read as a bare value

    @staticmethod
    def bind_auto(v, keys, leaves):
        keys.append((v._launch_key or descriptor_key(v))[0])
        leaves.append(v.tensormap)
        return True

    AUTO_TYPES = {TensorDescriptor: "bind_auto"}
    AUTO = (("t{i} is _Descriptor", '''\
        a{i} = {v}.tensor_arg
        if a{i}.kind != "torch" or a{i}.device != "cuda":
            {miss}
        e{i} = a{i}.device_index
        g{i} = ({v}._launch_key or _descriptor_key({v}))[1]
        c{i} = False
'''),)
    AUTO_LEAVES = "    elif c{i} is False:\n        c{i} = ({v}._encoded or {v}.encode(),)\n"


_DESCRIPTOR_KEYS: dict = {}    # a descriptor's __static_key__() -> (its key part, its token)
_TOKENS = itertools.count()


def descriptor_key(desc) -> tuple:
    """``(key part, token)`` of a ``ws.tma.TensorDescriptor`` argument (its exact type), kept in
    the descriptor (``_launch_key``; a descriptor is not changed after it is built, like its
    encoded map). The key part is what ``classify`` gives it (a composite: the descriptor's
    static key, then its one ``!tensormap`` leaf), a pure function of ``__static_key__()`` for
    this class, so it is computed once per geometry. The token is a small tuple that stands for
    the key part in the generated call path's call signature: equal tokens mean equal key parts
    (tokens are never reused, even after the table is cleared)."""
    from .table import classify
    sk = desc.__static_key__()
    got = _DESCRIPTOR_KEYS.get(sk)
    if got is None:
        if len(_DESCRIPTOR_KEYS) > 1024:
            _DESCRIPTOR_KEYS.clear()
        got = _DESCRIPTOR_KEYS[sk] = (classify(desc).key, ("TensorDescriptor", next(_TOKENS)))
    desc._launch_key = got
    return got
