"""The binding-time rules (docs/binding-time.md; ``RULES`` in specs.py), applied to one parameter
at a time, and ``ws.Static`` / ``ws.Constexpr``.

``classify(value, annotation, name)`` returns a ``Spec`` (specs.py): the rule that decided, the
binding time (static / dynamic / mixed), a type description, the cache-key part, the ABI slots,
how to turn the host value into ABI values (``host_leaves``) and how to build the traced value
from the kernel's IR arguments (``make``). The same Spec serves the cache key, the launch ABI,
``explain`` and tracing, so the rules are written once. This module also checks the values given
to dynamic annotations (range, dtype, rank).
"""
from __future__ import annotations

import dataclasses
import enum
import typing
from typing import Optional

from .. import ir
from ..errors import ArgumentError
from ..lang.pointer import Pointer, PointerSpec
from ..lang.scalars import (DTYPES, Boolean, Float32, HostScalar, Int32, Int64, Scalar,
                            TypePlaceholder, fits)
from ..lang.tensor import Tensor, TensorSpec
from ..runtime.tensormap import TensorMapArg
from .specs import (RULES, CompositeSpec, PointerArgSpec, ScalarSpec, Spec,  # noqa: F401
                    StaticSpec, TensorArgSpec, TensorMapSpec, _host_parts, _short, got_text,
                    _skeleton_static_key, tensor_key)
from ..core.values import has_protocol
from ..core.static import Constexpr, Static, StaticValue, _StaticAnnotation  # noqa: F401

__all__ = ["Static", "Constexpr", "Spec", "classify", "RULES"]


def _field_annotation(cls, name):
    try:
        hints = typing.get_type_hints(cls)
    except Exception:
        hints = getattr(cls, "__annotations__", {})
    return hints.get(name)


def classify(value, annotation=None, name: str = "arg", self_rule: bool = False,
             tensor_adapter=None) -> Spec:
    """The Spec of one parameter by the binding-time rules (see RULES, docs/binding-time.md)."""
    if self_rule:
        return StaticSpec(value, 0, name)
    if isinstance(value, StaticValue):
        return StaticSpec(value.value, 1, name)
    if isinstance(annotation, _StaticAnnotation):
        if annotation.tp is Tensor or isinstance(annotation.tp, (TensorSpec, PointerSpec)) or \
                annotation.tp is Pointer:
            raise ArgumentError(
                f"parameter '{name}' is annotated ws.Static[{_ann_name(annotation.tp)}], a "
                "contradiction: a tensor (or pointer) is dynamic by rule 4 — its data lives on "
                "the GPU and is read at run time; only its dtype, rank and strides are part of "
                f"the key.\nFix: annotate it {_ann_name(annotation.tp)} (or leave it bare).")
        annotation.check(value, name)
        return StaticSpec(value, 1, name)
    if annotation is not None:
        spec = _by_dynamic_annotation(value, annotation, name, tensor_adapter)
        if spec is not None:
            return spec
    if isinstance(value, enum.Enum):           # before rule 3: an IntEnum member is an int too
        return StaticSpec(value, 7, name)
    if isinstance(value, HostScalar):
        return ScalarSpec(value.dtype, 2)
    if _is_np_generic(value):                  # numpy scalars: rule 3 with their own dtype
        dtype = _NP_SCALARS.get(value.dtype.name)
        if dtype is None:
            raise ArgumentError(f"parameter '{name}': numpy scalar of dtype {value.dtype.name} is "
                                "not a warpstage dtype.\nFix: convert it, e.g. int(x) or float(x).")
        return ScalarSpec(dtype, 3)
    if isinstance(value, bool):
        return ScalarSpec(Boolean, 3)
    if isinstance(value, int):
        if not fits(ir.i64, value):
            raise ArgumentError(f"parameter '{name}': the int {value} does not fit in 64 bits.\n"
                                "Fix: pass a smaller value, or make it static with ws.Static[int].")
        return ScalarSpec(Int32 if fits(ir.i32, value) else Int64, 3)
    if isinstance(value, float):
        _check_float_range(value, Float32, name)
        return ScalarSpec(Float32, 3)
    if type(value) is TensorMapArg:
        return TensorMapSpec()
    ta = tensor_adapter(value) if tensor_adapter is not None else None
    if ta is not None:
        return TensorArgSpec(ta, 4)
    if has_protocol(value):
        parts = _host_parts(value, "proto", None)
        fields = getattr(type(value), "__ws_fields__", None)
        leaf_names = getattr(type(value), "__ws_leaf_names__", None)
        names = (list(fields[1]) if fields else list(leaf_names(value)) if leaf_names else
                 [str(i) for i in range(len(parts))])
        return CompositeSpec("proto", value, [classify(p, None, f"{name}[{i}]", tensor_adapter=tensor_adapter)
                                              for i, p in enumerate(parts)], names, 5)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        names = [f.name for f in dataclasses.fields(value)]
        t = type(value)
        return CompositeSpec("dataclass", value, [
            classify(getattr(value, n), _field_annotation(t, n), f"{name}.{n}",
                     tensor_adapter=tensor_adapter) for n in names], names, 5)
    if isinstance(value, tuple) and hasattr(type(value), "_fields"):
        t = type(value)
        names = list(t._fields)
        return CompositeSpec("namedtuple", value, [
            classify(v, _field_annotation(t, n), f"{name}.{n}", tensor_adapter=tensor_adapter)
            for n, v in zip(names, value)], names, 5)
    if type(value) in (tuple, list):
        names = [str(i) for i in range(len(value))]
        return CompositeSpec(type(value).__name__, value, [
            classify(v, None, f"{name}[{i}]", tensor_adapter=tensor_adapter)
            for i, v in enumerate(value)], names, 6)
    if type(value) is dict and all(isinstance(k, str) for k in value):
        names = list(value.keys())
        return CompositeSpec("dict", value, [
            classify(value[k], None, f"{name}[{k!r}]", tensor_adapter=tensor_adapter)
            for k in names], names, 6)
    if isinstance(value, (Scalar, Tensor, Pointer)):
        raise ArgumentError(f"parameter '{name}': a traced dynamic value cannot be passed to a "
                            "kernel launch from inside a kernel")
    if isinstance(value, type) and value.__name__ in ("TensorDescriptor", "TmaDescriptor") and \
            value.__module__.startswith("warpstage."):
        raise ArgumentError(
            f"parameter '{name}': got the class ws.tma.{value.__name__}, not a descriptor; a "
            "descriptor's dtype, box and swizzle are part of the kernel's specialization, so the "
            "class alone cannot be compiled.\nFix: pass a descriptor, "
            "ws.tma.TensorDescriptor(x, box=(32, 32)), or, to compile from types, "
            "ws.tma.TensorDescriptor.spec(ws.Float32, box=(32, 32), swizzle=128).")
    if isinstance(value, type) and value.__name__ == "Fragment" and \
            value.__module__ == "warpstage.lang.fragment":
        raise ArgumentError(
            f"parameter '{name}': got the class ws.mma.Fragment; a fragment is a per-thread "
            "register array that exists only inside a kernel (built by ws.mma / ws.wgmma calls "
            "or ws.mma.Fragment.filled), not a kernel parameter.\nFix: pass what the fragment "
            "is made from (a tensor, e.g. ws.Tensor[ws.Float32, 2], or scalars) and build the "
            "fragment inside the kernel, e.g. ws.mma.Fragment.filled(ws.Float32, 4, 0.0), or "
            "pass a fragment to a @ws.jit helper instead.")
    return StaticSpec(value, 7, name)


def _by_dynamic_annotation(value, ann, name, tensor_adapter) -> Optional[Spec]:
    if isinstance(ann, type) and issubclass(ann, Scalar) and ann.ir_type is not None:
        return ScalarSpec(ann, 2) if _check_scalar(value, ann, name) else None
    if ann is Tensor or isinstance(ann, TensorSpec):
        ta = tensor_adapter(value) if tensor_adapter is not None else None
        if ta is None:
            raise ArgumentError(f"parameter '{name}' is annotated {_ann_name(ann)} but got "
                                f"{got_text(value)}.\nFix: pass a tensor: "
                                "a numpy array or CPU torch tensor (simulator), a torch or cupy "
                                "CUDA tensor (GPU), or anything with __dlpack__ / __cuda_array_interface__.")
        spec = TensorArgSpec(ta, 2)
        if isinstance(ann, TensorSpec):
            if ann.dtype is not None and ann.dtype is not spec.dtype:
                raise ArgumentError(f"parameter '{name}' is annotated {ann!r} but got a tensor of "
                                    f"dtype {spec.dtype.__name__}.\nFix: convert it ("
                                    f"{_convert_hint(ann.dtype)}) or change the annotation.")
            if ann.ndim is not None and ann.ndim != spec.ndim:
                raise ArgumentError(f"parameter '{name}' is annotated {_ann_name(ann)} but got a "
                                    f"{spec.ndim}-d tensor.\nFix: reshape it or change the annotation.")
        return spec
    if isinstance(ann, PointerSpec):
        return PointerArgSpec(ann)
    return None


def _ann_name(ann) -> str:
    if isinstance(ann, type):
        return f"ws.{ann.__name__}" if ann.__module__.startswith("warpstage") else ann.__qualname__
    return repr(ann)


_NP_SCALARS = {"bool": Boolean, "int8": DTYPES[ir.i8], "int16": DTYPES[ir.i16], "int32": Int32,
               "int64": Int64, "uint8": DTYPES[ir.u8], "uint16": DTYPES[ir.u16],
               "uint32": DTYPES[ir.u32], "uint64": DTYPES[ir.u64], "float16": DTYPES[ir.f16],
               "float32": Float32, "float64": DTYPES[ir.f64], "bfloat16": DTYPES[ir.bf16],
               "float8_e4m3fn": DTYPES[ir.e4m3], "float8_e5m2": DTYPES[ir.e5m2]}
_FLOAT_MAX = {8: float("inf"), 16: 65504.0, 32: 3.4028234663852886e38, 64: float("inf")}
"""Finite values beyond these overflow to inf (an error); the 8-bit floats saturate instead."""


def _is_np_generic(value) -> bool:
    np = __import__("sys").modules.get("numpy")
    return np is not None and isinstance(value, np.generic)


def _check_float_range(v: float, dtype, name: str) -> None:
    """A finite float that becomes inf in ``dtype`` is an error, like an int overflow."""
    t = dtype.ir_type
    limit = _FLOAT_MAX[32] if t.name == "bf16" else _FLOAT_MAX[t.bits]   # bf16 has f32's range
    if v == v and abs(v) != float("inf") and abs(v) > limit:
        raise ArgumentError(f"parameter '{name}': the float {v!r} overflows {dtype.__name__} "
                            f"(largest finite value {limit:g}).\nFix: annotate the parameter "
                            "ws.Float64, or scale the value.")


def _torch_name(dtype) -> str:
    return {"f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64",
            "i32": "int32", "i64": "int64", "i8": "int8", "u8": "uint8", "i16": "int16",
            "e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2"}.get(dtype.ir_type.name,
                                                                 dtype.ir_type.name)


def _convert_hint(dtype) -> str:
    """How to convert a torch tensor or numpy array to ``dtype``, for a fix text."""
    t = _torch_name(dtype)
    if t in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
        return f"torch: x.to(torch.{t}); numpy: x.astype(ml_dtypes.{t})"
    n = {"u16": "uint16", "u32": "uint32", "u64": "uint64", "i1": "bool_"}.get(t, t)
    return f"torch: x.to(torch.{t}); numpy: x.astype(np.{n})"


def _check_scalar(value, dtype, name) -> bool:
    t = dtype.ir_type
    if isinstance(value, TypePlaceholder) and value.dtype is not dtype:
        raise ArgumentError(f"parameter '{name}' is annotated {_ann_name(dtype)} but got "
                            f"{got_text(value)}.\nFix: pass {_ann_name(dtype)}, or change the "
                            "annotation.")
    v = value.value if isinstance(value, HostScalar) else value
    if isinstance(v, bool) or isinstance(v, int):
        if t.is_int and not fits(t, int(v)):
            raise ArgumentError(f"parameter '{name}' is annotated {dtype.__name__} but the int "
                                f"{v} overflows it.\nFix: pass a value in range, or annotate a wider "
                                "type (ws.Int64).")
        return True
    if _is_np_generic(v):
        v = v.item()
        return _check_scalar(v, dtype, name)
    if isinstance(v, float):
        if not t.is_float:
            raise ArgumentError(f"parameter '{name}' is annotated {dtype.__name__} but got the "
                                f"float {v}.\nFix: pass an int, or annotate ws.Float32.")
        if t.bits < 64:
            _check_float_range(v, dtype, name)
        return True
    raise ArgumentError(f"parameter '{name}' is annotated {dtype.__name__} but got "
                        f"{got_text(v)}.\nFix: pass a Python number"
                        + (f" or the type ws.{dtype.__name__}" if getattr(
                            type(v), "placeholder_of", None) is not None else "") + ".")
