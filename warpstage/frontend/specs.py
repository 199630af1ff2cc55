"""What a parameter's binding time decides: the ``Spec`` classes that ``classify``
(binding_time.py) returns, and ``RULES``, the binding-time rules they cite (docs/binding-time.md).

A Spec holds the rule that decided, the binding time (static / dynamic / mixed), a type
description, the cache-key part, the ABI slots, how to turn the host value into ABI values
(``host_leaves``) and how to build the traced value from the kernel's IR arguments (``make``).
The same Spec serves the cache key, the launch ABI, ``explain`` and tracing, so the rules are
written once.
"""
from __future__ import annotations

from typing import Any, Optional

from ..errors import ArgumentError
from ..lang.pointer import Pointer, PointerSpec
from ..lang.scalars import DTYPES, HostScalar, Int32, Int64
from ..lang.tensor import make_tensor, tensor_abi
from ..ir.types import tensormap
from ..core.static_key import UnkeyableError, static_key
from ..core.trace import Origin
from ..core.values import extract, rebuild

__all__ = ["RULES", "Spec", "StaticSpec", "ScalarSpec", "PointerArgSpec", "TensorArgSpec",
           "TensorMapSpec", "CompositeSpec", "tensor_key"]

RULES = {
    0: "first parameter named `self` (compatibility rule)",
    1: "annotated ws.Static[T]",
    2: "annotated with a dynamic type",
    3: "bool/int/float with no annotation",
    4: "tensor (DLPack / CUDA array interface)",
    5: "value protocol / @ws.struct / dataclass / NamedTuple",
    6: "tuple/list/dict",
    7: "anything else: static (receiver rule)",
}


def _short(v, n=60) -> str:
    r = repr(v)
    return r if len(r) <= n else r[:n - 3] + "..."


def got_text(v) -> str:
    """What an error says it got: 'a int (5)'; for a type that ws.compile stands in for with a
    placeholder value ('placeholder_of': lang/scalars.TypePlaceholder, api._FakeTensor), 'the
    type ws.Int32' — never the stand-in's value."""
    if getattr(type(v), "placeholder_of", None) is not None:
        return f"the type {v.placeholder_of}"
    return f"a {type(v).__name__} ({_short(v)})"


class Spec:
    """How one parameter (or one part of a composite parameter) binds. See module docstring."""

    rule: int
    binding: str
    desc: str
    key: Any
    key_desc: Optional[str] = None      # the key part in words (ws.explain), where it has them

    def abi(self, name: str) -> list:
        return []

    def host_leaves(self, value, out: list) -> None:
        pass

    def make(self, it, name: str):
        raise NotImplementedError


class StaticSpec(Spec):
    def __init__(self, value, rule: int, name: str):
        self.value = value
        self.rule = rule
        self.binding = "static"
        self.desc = f"{type(value).__name__} = {_short(value, 40)}"
        try:
            self.key = ("static", static_key(value))
        except UnkeyableError as e:
            raise ArgumentError(
                f"parameter '{name}': its value {_short(value)} is static (rule {rule}: "
                f"{RULES[rule]}) but cannot be keyed for the compile cache ({e}).\nFix: give "
                f"{type(value).__name__} a __static_key__() method returning a hashable tuple of "
                "what affects code generation, or make it hashable.") from None

    def make(self, it, name):
        return self.value


class ScalarSpec(Spec):
    def __init__(self, dtype, rule: int):
        self.dtype = dtype
        self.rule = rule
        self.binding = "dynamic"
        self.desc = dtype.__name__
        self.key = ("scalar", dtype.ir_type.name)

    def abi(self, name):
        return [(name, self.dtype.ir_type)]

    def host_leaves(self, value, out):
        if isinstance(value, HostScalar):
            value = value.value
        out.append(value.item() if hasattr(value, "item") else value)

    def make(self, it, name):
        return self.dtype._wrap(next(it), Origin(f"parameter '{name}' ({self.desc}, rule {self.rule}: "
                                                 f"{RULES[self.rule]})"))


class PointerArgSpec(Spec):
    def __init__(self, spec: PointerSpec):
        self.spec = spec
        self.rule = 2
        self.binding = "dynamic"
        self.desc = repr(spec)
        self.key = ("ptr", spec.ir_type)

    def abi(self, name):
        return [(name, self.spec.ir_type)]

    def host_leaves(self, value, out):
        out.append(value)

    def make(self, it, name):
        return Pointer._wrap(next(it), Origin(f"parameter '{name}'"))


def tensor_key(ta) -> tuple:
    """The key part of a tensor argument (rule 4): dtype, rank, which strides are 1, index width
    (i32 when every offset fits in 31 bits), 16-byte alignment of the base."""
    extent = 0
    big = False
    for n, st in zip(ta.shape, ta.strides):
        if n > 1:
            extent += (n - 1) * (st if st >= 0 else -st)
        if n > 2147483647:
            big = True
    index = "i64" if big or extent > 2147483647 else "i32"
    return ("tensor", ta.dtype.name, len(ta.shape), tuple(st == 1 for st in ta.strides), index,
            ta.data_ptr % 16 == 0)


class TensorArgSpec(Spec):
    def __init__(self, ta, rule: int):
        self.rule = rule
        self.binding = "dynamic"
        self.key = tensor_key(ta)
        _, _, self.ndim, self.unit, index, self.aligned16 = self.key
        self.dtype = DTYPES[ta.dtype]
        self.index_dtype = Int64 if index == "i64" else Int32
        self.ta = ta       # this call's tensor; host_leaves reads it instead of re-adapting

    @property
    def desc(self) -> str:
        unit_desc = "".join("1" if u else "?" for u in self.unit)
        return (f"Tensor[{self.dtype.__name__}, {self.ndim}] strides=({unit_desc}) "
                f"index={self.index_dtype.__name__}{' align16' if self.aligned16 else ''}")

    def abi(self, name):
        return tensor_abi(self.dtype, self.ndim, self.unit, self.index_dtype, name)

    def host_leaves(self, value, out):
        ta = self.ta
        out.append(ta)
        out.extend(ta.shape)
        out.extend(s for s, u in zip(ta.strides, self.unit) if not u)

    def make(self, it, name):
        return make_tensor(it, self.dtype, self.ndim, self.unit, self.index_dtype,
                           Origin(f"parameter '{name}' (tensor)"))


class TensorMapSpec(Spec):
    """The dynamic leaf of a ``ws.tma.TensorDescriptor`` (rule 5's dynamic part): one
    ``!tensormap`` slot, the 128-byte CUtensorMap passed by value (the descriptor's static
    geometry is its skeleton's key)."""

    rule = 4
    binding = "dynamic"
    desc = "!tensormap (128-byte TMA descriptor)"
    key = ("tensormap",)

    def abi(self, name):
        return [(name, tensormap)]

    def host_leaves(self, value, out):
        out.append(value)

    def make(self, it, name):
        from ..lang.tma import TensorMap
        return TensorMap._wrap(next(it), Origin(f"parameter '{name}' (TMA descriptor)"))


class CompositeSpec(Spec):
    """Rules 5 and 6: a static skeleton with classified parts."""

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
            skel_key = (len(template) if kind in ("tuple", "list") else
                        tuple(template) if kind == "dict" else _skeleton_static_key(template, kind))
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

    def abi(self, name):
        out = []
        for n, p in zip(self.names, self.parts):
            out.extend(p.abi(f"{name}.{n}" if self.kind not in ("tuple", "list") else f"{name}[{n}]"))
        return out

    def host_leaves(self, value, out):
        for part_value, p in zip(_host_parts(value, self.kind, self.names), self.parts):
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


def _skeleton_static_key(template, kind):
    """The key of a composite's static skeleton: ``__static_key__()`` when defined; for a
    value-protocol object without one, its attributes other than the extracted dynamic leaves
    (so a static field such as a tag or a stage count is never silently ignored)."""
    from ..core.static_key import class_key
    t = type(template)
    if kind == "proto" and hasattr(t, "__static_key__"):
        return (class_key(t), static_key(template.__static_key__()))
    if kind == "proto" and hasattr(template, "__dict__"):
        leaves = [id(v) for v in _host_parts(template, "proto", None)]
        rest = tuple((n, static_key(v)) for n, v in sorted(vars(template).items())
                     if id(v) not in leaves)
        return (class_key(t), rest)
    return class_key(t)


def _host_parts(value, kind, names):
    if kind in ("tuple", "list", "namedtuple"):
        return list(value)
    if kind == "dict":
        return [value[n] for n in names]
    if kind == "dataclass":
        return [getattr(value, n) for n in names]
    return extract(value)
