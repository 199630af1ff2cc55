"""Type placeholders of ``ws.compile``: the arguments may be types instead of values
(``ws.Int32``, ``ws.Tensor[ws.BFloat16, 2]``, inside tuples, dicts, NamedTuples and dataclasses);
``placeholders`` replaces each with a stand-in the binding-time rules classify like a value of
that type (``_FakeTensor``: a contiguous, aligned tensor described by dtype and rank).
``tensor_adapter`` is the rules' tensor reader, which takes those stand-ins as they are."""
from __future__ import annotations

import copy
import dataclasses

from ..errors import ArgumentError

__all__ = ["placeholders", "tensor_adapter"]


class _FakeTensor:
    """A tensor described by type only (``ws.Tensor[ws.BFloat16, 2]`` in ws.compile): contiguous,
    16-byte aligned, Int32 indexing. Errors name it by ``placeholder_of`` (the type)."""

    placeholder_of = "ws.Tensor"

    def __init__(self, dtype, ndim, placeholder_of: str = ""):
        self.placeholder_of = placeholder_of or f"ws.Tensor[ws.{dtype.__name__}, {ndim}]"
        self.data_ptr = 0
        self.shape = (2,) * ndim
        self.strides = tuple(2 ** (ndim - 1 - k) for k in range(ndim))
        self.dtype = dtype.ir_type
        self.device = "cuda"


_as_tensor_arg = None


def tensor_adapter(value):
    """TensorArg of ``value`` or None (runtime.tensors, imported on first use)."""
    global _as_tensor_arg
    if _as_tensor_arg is None:
        from ..runtime.tensors import as_tensor_arg
        _as_tensor_arg = as_tensor_arg
    if type(value) is _FakeTensor:
        return value
    return _as_tensor_arg(value)


def placeholders(value, ann=None, name: str = "arg"):
    """``value`` with every type placeholder (see _type_placeholder) replaced, also inside
    tuples, lists, dicts, NamedTuples and dataclasses / ``@ws.struct`` objects. ``name``: the
    parameter (and the path inside it) an error names."""
    v = _type_placeholder(value, ann, name)
    if v is not value:
        return v
    t = type(value)
    if t is tuple or t is list:
        return t(placeholders(x, None, f"{name}[{i}]") for i, x in enumerate(value))
    if t is dict:
        return {k: placeholders(x, None, f"{name}[{k!r}]") for k, x in value.items()}
    if isinstance(value, tuple) and hasattr(t, "_fields"):
        return t(*(placeholders(x, None, f"{name}.{f}") for f, x in zip(t._fields, value)))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = [f.name for f in dataclasses.fields(value)]
        new = {n: placeholders(getattr(value, n), None, f"{name}.{n}") for n in fields}
        if all(new[n] is getattr(value, n) for n in fields):
            return value
        out = copy.copy(value)
        for n, x in new.items():
            object.__setattr__(out, n, x)
        return out
    return value


def _type_placeholder(value, ann, name: str = "arg"):
    """ws.compile accepts types: ws.Int32, ws.Tensor[dtype, ndim], ws.Pointer[...]. A tensor
    type that names no dtype or rank (``ws.Tensor``, ``ws.Tensor[ws.Float32]``) is an
    ArgumentError naming the parameter, with the full type to write (the parameter's own
    annotation when that is one)."""
    from ..lang.scalars import Scalar, TypePlaceholder
    from ..lang.tensor import Tensor, TensorSpec
    if isinstance(value, type) and issubclass(value, Scalar) and value.ir_type is not None:
        return TypePlaceholder(value, 0 if not value.ir_type.is_float else 0.0)
    partial = isinstance(value, TensorSpec) and (value.dtype is None or value.ndim is None)
    if value is Tensor or partial:
        full = isinstance(ann, TensorSpec) and ann.dtype is not None and ann.ndim is not None
        example = repr(ann) if full else "ws.Tensor[ws.Float32, 1]"
        given = "ws.Tensor" if value is Tensor else repr(value)
        raise ArgumentError(
            f"ws.compile: parameter '{name}' was given the type {given}, which does not say the "
            "tensor's dtype and rank; a kernel is specialized on both, so it cannot compile "
            f"from it.\nExpected: a full tensor type ws.Tensor[dtype, ndim] (or an example "
            f"array); got {given}.\nFix: pass {example} for '{name}'"
            + (" (its annotation)" if full else ", with the dtype and rank you will launch "
               "with") + ".")
    if isinstance(value, TensorSpec):
        return _FakeTensor(value.dtype, value.ndim, repr(value))
    return value
