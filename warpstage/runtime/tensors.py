"""Tensor adapters: read a host argument's data pointer, shape, strides, dtype and device.

Recognised, in this order (first match wins):

1. torch tensors — detected by ``type(x).__module__`` starting with 'torch' and read through their
   attributes (``data_ptr()``, ``shape``, ``stride()``, ``dtype``, ``device``); torch is never
   imported and ``__dlpack__`` is not used (attribute reads are several times faster);
2. objects with ``__cuda_array_interface__`` (cupy, numba, ...): GPU memory;
3. numpy arrays and other objects with ``__array_interface__``: host ('cpu') memory. numpy has no
   bfloat16 of its own: an array of ``ml_dtypes.bfloat16`` (pypi ml_dtypes) is bf16, matched by
   its dtype's name (ml_dtypes is never imported here); ``ml_dtypes.float8_e4m3fn`` /
   ``float8_e5m2`` likewise are e4m3 / e5m2 (torch's ``float8_e4m3fn`` / ``float8_e5m2`` too);
4. other objects with ``__dlpack__`` / ``__dlpack_device__`` (JAX, ...): the DLPack capsule is read
   with ctypes (the capsule, which owns the exported tensor, is kept alive in ``owner``);
5. a DLPack capsule itself ('dltensor' or 'dltensor_versioned'), read without consuming it.

Strides are in **elements** everywhere in warpstage (the interfaces that give bytes are
converted). Booleans are one byte per element in every framework; warpstage passes bool tensors as
**u8** storage (0 or 1), so kernels read and write them as ``u8``.
"""
from __future__ import annotations

import ctypes
import sys
from typing import Optional, Tuple

from ..errors import ArgumentError
from ..ir.types import (ScalarType, bf16, e4m3, e5m2, f16, f32, f64, i8, i16, i32, i64, u8, u16,
                        u32, u64)

__all__ = ["TensorArg", "as_tensor_arg", "is_tensor", "require_device", "SUPPORTED_DTYPES"]

SUPPORTED_DTYPES = ("float16", "bfloat16", "float32", "float64", "float8_e4m3fn", "float8_e5m2",
                    "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                    "bool")

_BY_NAME = {"float16": f16, "bfloat16": bf16, "float32": f32, "float64": f64, "int8": i8,
            "int16": i16, "int32": i32, "int64": i64, "uint8": u8, "uint16": u16, "uint32": u32,
            "uint64": u64, "bool": u8, "float8_e4m3fn": e4m3, "float8_e5m2": e5m2}


class TensorArg:
    """One tensor argument, as warpstage sees it. Treat as immutable.

    ``data_ptr``: address of element [0, ..., 0] (bytes; any storage/byte offset applied).
    ``shape``/``strides``: tuples of ints, strides in elements (may be 0 or negative).
    ``dtype``: a ``warpstage.ir.types.ScalarType`` (bool tensors: ``u8``).
    ``device``: 'cuda' or 'cpu'; ``device_index``: the GPU ordinal (None for 'cpu').
    ``owner``: the object that keeps the memory alive; ``kind``: how it was read — 'torch',
    'cupy' (cupy's ``__cuda_array_interface__``), 'cai' (any other such producer), 'numpy'
    (``__array_interface__``) or 'dlpack'.
    """

    __slots__ = ("data_ptr", "shape", "strides", "dtype", "device", "device_index", "owner", "kind")

    def __init__(self, data_ptr: int, shape: Tuple[int, ...], strides: Tuple[int, ...],
                 dtype: ScalarType, device: str, device_index: Optional[int], owner, kind: str):
        self.data_ptr = data_ptr
        self.shape = shape
        self.strides = strides
        self.dtype = dtype
        self.device = device
        self.device_index = device_index
        self.owner = owner
        self.kind = kind

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    def is_contiguous(self) -> bool:
        """Row-major (C) contiguous; size-1 dimensions may have any stride."""
        expected = 1
        for size, stride in zip(reversed(self.shape), reversed(self.strides)):
            if size != 1 and stride != expected:
                return False
            expected *= size
        return True

    def is_aligned(self, nbytes: int = 16) -> bool:
        """True when ``data_ptr`` is a multiple of ``nbytes`` (vector loads and TMA need 16)."""
        return self.data_ptr % nbytes == 0

    def __repr__(self) -> str:
        where = self.device if self.device_index is None else f"{self.device}:{self.device_index}"
        return (f"TensorArg({self.kind}, {self.dtype}, shape={self.shape}, strides={self.strides}, "
                f"{where}, ptr={self.data_ptr:#x})")


def _describe(obj) -> str:
    tp = type(obj)
    return f"{tp.__module__}.{tp.__qualname__}"


def _param(name: Optional[str]) -> str:
    return f"parameter {name!r}" if name else "a tensor argument"


def _unsupported_dtype(name: Optional[str], obj, spelled: str) -> ArgumentError:
    return ArgumentError(
        f"{_param(name)} has dtype {spelled}, which warpstage kernels do not support; expected one "
        f"of {', '.join(SUPPORTED_DTYPES)} ({_describe(obj)}). Fix: convert it first, e.g. "
        f"x.to(torch.float32) / x.astype('float32').")


# -- torch ------------------------------------------------------------------------------------

_TORCH_DTYPES: dict = {}   # torch.dtype object -> ScalarType, filled on first sight


def _torch_dtype(dtype, obj, name) -> ScalarType:
    spelled = str(dtype)                       # 'torch.float16'
    t = _BY_NAME.get(spelled[6:]) if spelled.startswith("torch.") else None
    if t is None:
        raise _unsupported_dtype(name, obj, spelled)
    _TORCH_DTYPES[dtype] = t
    return t


def _from_torch(obj, name) -> TensorArg:
    # the launch hot path: is_cuda/get_device() avoid building a torch.device (~0.3 us each)
    dtype = _TORCH_DTYPES.get(obj.dtype) or _torch_dtype(obj.dtype, obj, name)
    try:
        is_cuda, is_cpu = obj.is_cuda, obj.is_cpu
    except AttributeError:                       # torch-like objects without the properties
        dev = obj.device
        is_cuda, is_cpu = dev.type == "cuda", dev.type == "cpu"
    if is_cuda:
        dev_type, index = "cuda", (obj.get_device() if hasattr(obj, "get_device") else obj.device.index or 0)
    elif is_cpu:
        dev_type, index = "cpu", None
    else:
        raise ArgumentError(
            f"{_param(name)} is a torch tensor on device '{obj.device}'; warpstage reads tensors on "
            f"'cuda' (GPU target) or 'cpu' (simulator). Fix: x.to('cuda') or x.cpu().")
    try:
        strides = obj.stride()
    except RuntimeError as e:   # sparse and other non-strided layouts
        raise ArgumentError(f"{_param(name)} is a torch tensor with layout {obj.layout}; warpstage "
                            f"needs a strided (dense) tensor ({e}). Fix: x.to_dense().") from None
    return TensorArg(obj.data_ptr(), obj.shape, strides, dtype, dev_type, index, obj, "torch")


# -- __cuda_array_interface__ / __array_interface__ -----------------------------------------

_TYPESTR = {"f2": f16, "f4": f32, "f8": f64, "i1": i8, "i2": i16, "i4": i32, "i8": i64,
            "u1": u8, "u2": u16, "u4": u32, "u8": u64, "b1": u8}
_NATIVE_ORDER = "<" if sys.byteorder == "little" else ">"


def _typestr_dtype(typestr: str, obj, name) -> ScalarType:
    order, code = typestr[:1], typestr[1:]
    t = _TYPESTR.get(code)
    if t is None or (order not in ("|", "=", _NATIVE_ORDER) and t.bits > 8):
        raise _unsupported_dtype(name, obj, f"typestr {typestr!r}")
    return t


def _element_strides(shape, byte_strides, itemsize: int, obj, name) -> Tuple[int, ...]:
    if byte_strides is None:                    # C-contiguous
        strides, step = [], 1
        for size in reversed(shape):
            strides.append(step)
            step *= size
        return tuple(reversed(strides))
    if any(s % itemsize for s in byte_strides):
        raise ArgumentError(
            f"{_param(name)} has byte strides {tuple(byte_strides)} that are not multiples of its "
            f"{itemsize}-byte element size ({_describe(obj)}); warpstage needs element strides. "
            f"Fix: pass a contiguous copy.")
    return tuple(s // itemsize for s in byte_strides)


def _from_interface(obj, iface: dict, device: str, kind: str, name, dtype=None) -> TensorArg:
    if iface.get("mask") is not None:
        raise ArgumentError(f"{_param(name)} is a masked array ({_describe(obj)}); warpstage "
                            f"does not support masks. Fix: pass the unmasked data.")
    data = iface.get("data")
    if not isinstance(data, tuple):
        raise ArgumentError(f"{_param(name)} exposes its data through the buffer protocol, not "
                            f"an address ({_describe(obj)}); warpstage needs an address. "
                            f"Fix: pass a numpy/cupy/torch array.")
    if dtype is None:
        dtype = _typestr_dtype(iface["typestr"], obj, name)
    shape = tuple(int(s) for s in iface["shape"])
    strides = _element_strides(shape, iface.get("strides"), dtype.nbytes, obj, name)
    index = None
    if device == "cuda":
        dev = getattr(obj, "device", None)
        dev_id = getattr(dev, "id", 0)
        index = dev_id if isinstance(dev_id, int) else 0
    return TensorArg(int(data[0] or 0), shape, strides, dtype, device, index, obj, kind)


def _from_numpy(obj, name) -> Optional[TensorArg]:
    np = sys.modules.get("numpy")
    if np is not None and isinstance(obj, np.generic):
        return None                                # a numpy scalar is a scalar, not a tensor
    spelled = obj.dtype.name                       # bfloat16 (ml_dtypes) has no typestr
    dtype = _BY_NAME.get(spelled)
    if dtype is None:
        raise _unsupported_dtype(name, obj, f"numpy {spelled}")
    if not obj.dtype.isnative:                     # '>f2' on a little-endian host: the name
        raise ArgumentError(                       # is the same, the bytes are not
            f"{_param(name)} has dtype {obj.dtype.str} ({spelled} in "
            f"{'big' if obj.dtype.byteorder == '>' else 'little'}-endian byte order, "
            f"{_describe(obj)}); warpstage kernels read the host's byte order "
            f"({sys.byteorder}-endian). Fix: x.astype(x.dtype.newbyteorder('='))")
    return _from_interface(obj, obj.__array_interface__, "cpu", "numpy", name, dtype)


# -- DLPack -----------------------------------------------------------------------------------

class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p)]


class _DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32),
                ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p),
                ("flags", ctypes.c_uint64), ("dl_tensor", _DLTensor)]


_capsule_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_IsValid", ctypes.pythonapi))
_capsule_get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))

_DL_CPU, _DL_CUDA, _DL_CUDA_HOST, _DL_CUDA_MANAGED = 1, 2, 3, 13
_DL_DEVICES = {_DL_CPU: "cpu", _DL_CUDA: "cuda", _DL_CUDA_HOST: "cpu", _DL_CUDA_MANAGED: "cuda"}
_DL_CODES = {(0, 8): i8, (0, 16): i16, (0, 32): i32, (0, 64): i64, (1, 8): u8, (1, 16): u16,
             (1, 32): u32, (1, 64): u64, (2, 16): f16, (2, 32): f32, (2, 64): f64, (4, 16): bf16,
             (6, 8): u8}
_DL_CODE_NAMES = {0: "int", 1: "uint", 2: "float", 3: "opaque", 4: "bfloat", 5: "complex",
                  6: "bool"}


def from_dlpack_capsule(capsule, owner, name: Optional[str] = None) -> TensorArg:
    """Read a DLPack capsule ('dltensor' or 'dltensor_versioned') without consuming it.

    The capsule stays unconsumed, so its destructor still calls the producer's deleter; it is
    kept alive in ``owner`` (as ``(owner, capsule)``) for as long as the ``TensorArg`` lives.
    """
    if _capsule_is_valid(capsule, b"dltensor"):
        managed = _DLManagedTensor.from_address(_capsule_get_pointer(capsule, b"dltensor"))
    elif _capsule_is_valid(capsule, b"dltensor_versioned"):
        managed = _DLManagedTensorVersioned.from_address(
            _capsule_get_pointer(capsule, b"dltensor_versioned"))
    else:
        raise ArgumentError(f"{_param(name)}: __dlpack__() did not return a DLPack capsule named "
                            f"'dltensor' ({_describe(owner)}); it may have been consumed already.")
    t = managed.dl_tensor
    code, bits, lanes = t.dtype.code, t.dtype.bits, t.dtype.lanes
    dtype = _DL_CODES.get((code, bits)) if lanes == 1 else None
    if dtype is None:
        lanes_suffix = f"x{lanes}" if lanes != 1 else ""
        spelled = f"DLPack {_DL_CODE_NAMES.get(code, code)}{bits}{lanes_suffix}"
        raise _unsupported_dtype(name, owner, spelled)
    device = _DL_DEVICES.get(t.device.device_type)
    if device is None:
        raise ArgumentError(f"{_param(name)} lives on DLPack device type {t.device.device_type} "
                            f"({_describe(owner)}); warpstage reads CUDA (2) or CPU (1) memory. "
                            f"Fix: move it to a CUDA device or to the host.")
    ndim = t.ndim
    shape = tuple(t.shape[i] for i in range(ndim))
    if t.strides:
        strides = tuple(t.strides[i] for i in range(ndim))
    else:
        strides = _element_strides(shape, None, dtype.nbytes, owner, name)
    ptr = (t.data or 0) + t.byte_offset
    index = t.device.device_id if device == "cuda" else None
    return TensorArg(ptr, shape, strides, dtype, device, index, (owner, capsule), "dlpack")


def _from_dlpack(obj, name) -> TensorArg:
    device_type = None
    get_device = getattr(obj, "__dlpack_device__", None)
    if get_device is not None:
        device_type = int(get_device()[0])
    if device_type in (_DL_CUDA, _DL_CUDA_MANAGED):
        try:   # stream 1 = the legacy default stream, where warpstage launches for non-torch args
            capsule = obj.__dlpack__(stream=1)
        except (TypeError, ValueError, BufferError):
            capsule = obj.__dlpack__()
    else:
        capsule = obj.__dlpack__()
    return from_dlpack_capsule(capsule, obj, name)


# -- dispatch ---------------------------------------------------------------------------------

_NOT_TENSOR_TYPES = frozenset({int, float, bool, complex, str, bytes, type(None), tuple, list,
                               dict, type})
_KIND_BY_TYPE: dict = {}   # type -> 'torch' | 'numpy', for types whose instances all agree


def as_tensor_arg(obj, name: Optional[str] = None) -> Optional[TensorArg]:
    """``obj`` as a :class:`TensorArg`, or None when ``obj`` is not a tensor.

    ``name`` (the kernel parameter) is only used in error messages. Raises ``ArgumentError`` for
    a tensor with an unsupported dtype, device, layout or strides.
    """
    tp = type(obj)
    kind = _KIND_BY_TYPE.get(tp)
    if kind == "torch":
        return _from_torch(obj, name)
    if kind == "numpy":
        return _from_numpy(obj, name)
    if tp in _NOT_TENSOR_TYPES:
        return None
    module = tp.__module__ or ""
    if module.startswith("torch") and hasattr(tp, "data_ptr") and hasattr(tp, "stride"):
        _KIND_BY_TYPE[tp] = "torch"
        return _from_torch(obj, name)
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is not None:
        kind = "cupy" if module.startswith("cupy") else "cai"
        return _from_interface(obj, cai, "cuda", kind, name)
    if module.startswith("numpy") and hasattr(obj, "__array_interface__") and hasattr(obj, "dtype"):
        if tp.__name__ == "ndarray":
            _KIND_BY_TYPE[tp] = "numpy"
        return _from_numpy(obj, name)
    ai = getattr(obj, "__array_interface__", None)
    if ai is not None:
        np = sys.modules.get("numpy")
        if np is not None and isinstance(obj, np.generic):
            return None            # a scalar of a dtype defined elsewhere (ml_dtypes.bfloat16(1))
        return _from_interface(obj, ai, "cpu", "numpy", name)
    if hasattr(obj, "__dlpack__"):
        return _from_dlpack(obj, name)
    if tp.__name__ == "PyCapsule" and tp.__module__ == "builtins":   # a bare DLPack capsule
        return from_dlpack_capsule(obj, obj, name)
    return None


def is_tensor(obj) -> bool:
    """Whether :func:`as_tensor_arg` takes ``obj`` for a tensor (binding-time rule 4), without
    reading it: a torch or cupy tensor, a numpy array, anything with ``__dlpack__``,
    ``__cuda_array_interface__`` or ``__array_interface__``. A numpy scalar (``np.float64(0.5)``)
    has an ``__array_interface__`` but is a number, not a tensor."""
    tp = type(obj)
    if tp in _NOT_TENSOR_TYPES:
        return False
    if tp in _KIND_BY_TYPE:
        return True
    np = sys.modules.get("numpy")
    if np is not None and isinstance(obj, np.generic):
        return False
    return (hasattr(obj, "__dlpack__") or hasattr(obj, "__cuda_array_interface__")
            or hasattr(obj, "__array_interface__")
            or (tp.__name__ == "PyCapsule" and tp.__module__ == "builtins"))


_MOVE_HINT = {
    "torch": "{p}.cuda()",
    "numpy": "torch.from_numpy({p}).cuda() / cupy.asarray({p})",
}


def require_device(arg: TensorArg, param_name: str, device_index: int = 0) -> None:
    """Raise ``ArgumentError`` unless ``arg`` is in GPU memory of device ``device_index``.

    A launch runs on the device of its tensors (docs/distributed.md, "Devices"); this checks one
    tensor against a given device (CUDA_VISIBLE_DEVICES picks which physical GPU an ordinal is).
    """
    if arg.device != "cuda":
        what = {"torch": "CPU torch tensor", "numpy": "CPU numpy array"}.get(
            arg.kind, f"host-memory {arg.kind} tensor")
        hint = _MOVE_HINT.get(arg.kind, "its framework's copy to the GPU")
        hint = hint.replace("{p}", param_name)
        raise ArgumentError(
            f"parameter {param_name!r} is a {what}; the cuda target needs a tensor in GPU "
            f"memory.\nExpected: a GPU tensor (torch/cupy CUDA, __cuda_array_interface__); got a "
            f"{what}.\nFix: move it with {hint}, or run in the simulator with "
            "ws.set_target('sim').")
    if arg.device_index is not None and arg.device_index != device_index:
        raise ArgumentError(
            f"parameter {param_name!r} is on GPU cuda:{arg.device_index}; warpstage launches on "
            f"cuda:{device_index} and a kernel cannot read another GPU's memory this way — move it "
            f"with {param_name}.to('cuda:{device_index}'), or make that GPU device {device_index} "
            f"with CUDA_VISIBLE_DEVICES={arg.device_index}")
