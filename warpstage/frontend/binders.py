"""The launch hot path: per-parameter binders that compute a parameter's key part and ABI leaves
without building Spec objects.

Each binder gives exactly the key that ``binding_time.classify`` gives for the same value (a test
checks this), so both paths share one cache. A binder returns False for a value it does not
handle quickly (composites other than a ``ws.tma.TensorDescriptor``, unusual types); the caller
then classifies every parameter in full.
Annotation checks (dtype, rank, Static[T]) need no fast version: a value that would fail one has a
key that was never cached, so it always takes the full path, which raises.
"""
from __future__ import annotations

import itertools

from ..lang.pointer import PointerSpec
from ..runtime.tensormap import TensorDescriptor
from ..runtime.tensors import _KIND_BY_TYPE, _TORCH_DTYPES, TensorArg
from ..lang.scalars import HostScalar, Scalar
from ..lang.tensor import Tensor, TensorSpec
from ..core.static import _StaticAnnotation
from .binding_time import classify
from .specs import tensor_key
from ..core.static_key import UnkeyableError, static_key

__all__ = ["make_binder", "descriptor_key"]

_I32_KEY = ("scalar", "i32")
_I64_KEY = ("scalar", "i64")
_F32_KEY = ("scalar", "f32")
_BOOL_KEY = ("scalar", "i1")
_I32_MIN, _I32_MAX, _I64_MIN, _I64_MAX = -2 ** 31, 2 ** 31 - 1, -2 ** 63, 2 ** 63 - 1
_F32_MAX, _INF = 3.4028234663852886e38, float("inf")


def _range_of(t):
    """(lo, hi) of the values a parameter of scalar type ``t`` takes without an error (floats:
    the finite range, with inf and nan let through)."""
    if t.is_float:
        return ((-float("inf"), float("inf")) if t.bits in (8, 64) else   # fp8: saturates
                (-65504.0, 65504.0) if t.bits == 16 and t.name == "f16" else (-_F32_MAX, _F32_MAX))
    if t.is_bool:
        return (0, 1)
    if t.is_signed:
        return (-2 ** (t.bits - 1), 2 ** (t.bits - 1) - 1)
    return (0, 2 ** t.bits - 1)


def make_binder(annotation, self_rule: bool, adapter):
    """A function ``bind(value, keys, leaves) -> bool`` for one parameter."""
    if self_rule or isinstance(annotation, _StaticAnnotation):
        def bind_static(v, keys, leaves):
            try:
                keys.append(("static", static_key(v)))
            except UnkeyableError:
                return False
            return True
        return bind_static
    if isinstance(annotation, type) and issubclass(annotation, Scalar) and annotation.ir_type is not None:
        key = ("scalar", annotation.ir_type.name)

        lo, hi = _range_of(annotation.ir_type)
        is_float = annotation.ir_type.is_float

        def bind_scalar(v, keys, leaves):
            t = type(v)
            if t is HostScalar:
                if v.dtype is not annotation:
                    return False
                v = v.value
            elif t is not int and t is not float and t is not bool:
                return False                   # numpy scalars etc.: checked on the full path
            elif t is float and not is_float:
                return False                   # a float for an int parameter: the full path explains
            if not lo <= v <= hi:
                return False                   # out of range: the full path explains it
            keys.append(key)
            leaves.append(v)
            return True
        return bind_scalar
    if annotation is Tensor or isinstance(annotation, TensorSpec):
        def bind_tensor(v, keys, leaves):
            if _KIND_BY_TYPE.get(type(v)) == "torch" and _bind_torch(v, keys, leaves):
                return True
            ta = adapter(v)
            if ta is None:
                return False
            keys.append(tensor_key(ta))
            _tensor_leaves(ta, leaves)
            return True
        return bind_tensor
    if annotation is not None and (isinstance(annotation, PointerSpec) or _is_dynamic_annotation(annotation)):
        return lambda v, keys, leaves: False

    def bind_auto(v, keys, leaves):
        t = type(v)
        if t is int:
            if _I32_MIN <= v <= _I32_MAX:
                keys.append(_I32_KEY)
            elif _I64_MIN <= v <= _I64_MAX:
                keys.append(_I64_KEY)
            else:
                return False
            leaves.append(v)
            return True
        if t is float:
            if not -_F32_MAX <= v <= _F32_MAX and v == v and v not in (_INF, -_INF):
                return False                   # overflows Float32: the full path explains it
            keys.append(_F32_KEY)
            leaves.append(v)
            return True
        if t is bool:
            keys.append(_BOOL_KEY)
            leaves.append(v)
            return True
        if t is TensorDescriptor:              # a TMA descriptor: its geometry, then its map
            keys.append((v._launch_key or descriptor_key(v))[0])
            leaves.append(v.tensormap)
            return True
        if _KIND_BY_TYPE.get(t) == "torch" and _bind_torch(v, keys, leaves):
            return True
        ta = adapter(v)
        if ta is not None:
            keys.append(tensor_key(ta))
            _tensor_leaves(ta, leaves)
            return True
        if t.__module__ == "numpy":            # numpy scalars: rule 3 on the full path
            return False
        if t is tuple or t is list:            # rule 6: the structure, then each leaf's part
            parts: list = []
            for x in v:
                if not bind_auto(x, parts, leaves):
                    return False
            keys.append((t.__name__, len(v), tuple(parts)))
            return True
        if t is dict or hasattr(t, "__extract_values__") or hasattr(
                t, "__extract_mlir_values__") or hasattr(t, "__dataclass_fields__") or hasattr(t, "_fields"):
            return False
        try:
            keys.append(("static", static_key(v)))
        except UnkeyableError:
            return False
        return True
    return bind_auto


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
    sk = desc.__static_key__()
    got = _DESCRIPTOR_KEYS.get(sk)
    if got is None:
        if len(_DESCRIPTOR_KEYS) > 1024:
            _DESCRIPTOR_KEYS.clear()
        got = _DESCRIPTOR_KEYS[sk] = (classify(desc).key, ("TensorDescriptor", next(_TOKENS)))
    desc._launch_key = got
    return got


_GEOMETRY_KEYS: dict = {}   # (dtype, shape, strides, base address mod 16) -> the tensor's key


def _bind_torch(v, keys, leaves) -> bool:
    """A torch tensor's key and leaves in one pass (the common launch argument): the same
    result as ``as_tensor_arg`` + ``tensor_key``, with the key memoized by geometry. False for
    anything unusual (an unseen dtype, another device type); the caller then takes the general
    path, which explains the problem."""
    dt = _TORCH_DTYPES.get(v.dtype)
    if dt is None:
        return False
    if v.is_cuda:
        device, index = "cuda", v.get_device()
    elif v.is_cpu:
        device, index = "cpu", None
    else:
        return False
    shape = v.shape
    try:
        strides = v.stride()
    except RuntimeError:            # sparse and other layouts without strides: explained there
        return False
    ptr = v.data_ptr()
    ta = TensorArg(ptr, shape, strides, dt, device, index, v, "torch")
    g = (dt.name, shape, strides, ptr & 15)
    key = _GEOMETRY_KEYS.get(g)
    if key is None:
        if len(_GEOMETRY_KEYS) > 4096:
            _GEOMETRY_KEYS.clear()
        key = _GEOMETRY_KEYS[g] = tensor_key(ta)
    keys.append(key)
    leaves.append(ta)
    leaves.extend(shape)
    for s in strides:
        if s != 1:
            leaves.append(s)
    return True


def _tensor_leaves(ta, leaves) -> None:
    leaves.append(ta)
    leaves.extend(ta.shape)
    for s in ta.strides:
        if s != 1:
            leaves.append(s)


def _is_dynamic_annotation(a) -> bool:
    return isinstance(a, type) and issubclass(a, Scalar)

