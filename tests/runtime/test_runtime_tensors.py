"""Tensor adapters on the CPU: numpy, fake __cuda_array_interface__ producers, DLPack capsules,
fake torch tensors (duck-typed, so torch need not be installed), and the error messages."""
import ctypes
import gc
import types

import numpy as np
import pytest

from warpstage.errors import ArgumentError
from warpstage.ir import types as T
from warpstage.runtime.tensors import TensorArg, as_tensor_arg, from_dlpack_capsule, require_device


# -- numpy ------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype, expected", [
    ("float16", T.f16), ("float32", T.f32), ("float64", T.f64), ("int8", T.i8),
    ("int16", T.i16), ("int32", T.i32), ("int64", T.i64), ("uint8", T.u8), ("uint16", T.u16),
    ("uint32", T.u32), ("uint64", T.u64), ("bool", T.u8),
])
def test_numpy_dtypes(dtype, expected):
    a = np.zeros((2, 3), dtype=dtype)
    arg = as_tensor_arg(a)
    assert arg.dtype == expected
    assert (arg.shape, arg.strides) == ((2, 3), (3, 1))
    assert (arg.device, arg.device_index, arg.kind) == ("cpu", None, "numpy")
    assert arg.data_ptr == a.ctypes.data
    assert arg.owner is a


def test_numpy_views_have_element_strides_and_offset_pointer():
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    view = as_tensor_arg(a[1:, ::2])
    assert view.shape == (3, 3)
    assert view.strides == (6, 2)
    assert view.data_ptr == a.ctypes.data + 6 * 4
    assert not view.is_contiguous()
    t = as_tensor_arg(a.T)
    assert (t.shape, t.strides) == ((6, 4), (1, 6))
    assert as_tensor_arg(a).is_contiguous()
    rev = as_tensor_arg(a[::-1])
    assert rev.strides == (-6, 1)
    assert rev.data_ptr == a.ctypes.data + 3 * 6 * 4


def test_tensor_arg_helpers():
    a = np.zeros((2, 3, 4), dtype=np.float16)
    arg = as_tensor_arg(a)
    assert (arg.ndim, arg.numel) == (3, 24)
    assert arg.is_aligned(2)
    assert "f16" in repr(arg) and "shape=(2, 3, 4)" in repr(arg)
    assert as_tensor_arg(np.zeros((5, 1))).is_contiguous()


def test_zero_dim_array_is_a_tensor():
    arg = as_tensor_arg(np.array(3.0, dtype=np.float32))
    assert (arg.shape, arg.strides) == ((), ())


@pytest.mark.parametrize("value", [3, 2.5, True, None, "x", (1, 2), [np.zeros(2)], np.float32(1.0),
                                   np.int64(3), object()])
def test_non_tensors_give_none(value):
    assert as_tensor_arg(value) is None


def test_numpy_unsupported_dtype_message():
    with pytest.raises(ArgumentError) as info:
        as_tensor_arg(np.zeros(3, dtype=np.complex64), "x")
    msg = str(info.value)
    assert msg.startswith("parameter 'x' has dtype numpy complex64, which warpstage kernels do "
                          "not support; expected one of float16, bfloat16, float32")
    assert "Fix: convert it first" in msg


@pytest.mark.parametrize("dtype", [">f2", ">f4", ">i4"] if np.little_endian else ["<f2", "<f4"])
def test_numpy_foreign_byte_order_is_refused(dtype):
    x = np.arange(6, dtype=dtype)
    with pytest.raises(ArgumentError) as info:
        as_tensor_arg(x, "q")
    msg = str(info.value)
    assert msg.startswith(f"parameter 'q' has dtype {x.dtype.str} ({x.dtype.name} in ")
    assert "Fix: x.astype(x.dtype.newbyteorder('='))" in msg
    fixed = x.astype(x.dtype.newbyteorder("="))
    assert as_tensor_arg(fixed, "q").shape == (6,)
    assert as_tensor_arg(np.zeros(3, dtype="|u1"), "q").shape == (3,)    # one byte: no order


# -- __cuda_array_interface__ -----------------------------------------------------------------

class FakeCuda:
    """A minimal __cuda_array_interface__ (version 3) producer."""

    def __init__(self, shape, typestr, strides=None, ptr=0x7F0000001000, **extra):
        self.__cuda_array_interface__ = dict(shape=shape, typestr=typestr, strides=strides,
                                             data=(ptr, False), version=3, **extra)


@pytest.mark.parametrize("typestr, expected", [
    ("<f2", T.f16), ("<f4", T.f32), ("<f8", T.f64), ("|i1", T.i8), ("<i2", T.i16), ("<i4", T.i32),
    ("<i8", T.i64), ("|u1", T.u8), ("<u2", T.u16), ("<u4", T.u32), ("<u8", T.u64), ("|b1", T.u8),
])
def test_cai_typestrs(typestr, expected):
    arg = as_tensor_arg(FakeCuda((4, 5), typestr))
    assert arg.dtype == expected
    assert (arg.device, arg.device_index, arg.kind) == ("cuda", 0, "cai")
    assert (arg.shape, arg.strides) == ((4, 5), (5, 1))
    assert arg.data_ptr == 0x7F0000001000


def test_cai_byte_strides_become_element_strides():
    arg = as_tensor_arg(FakeCuda((4, 5), "<f4", strides=(4, 80)))
    assert arg.strides == (1, 20)
    assert not arg.is_contiguous()


def test_cai_without_strides_key_is_contiguous():
    obj = FakeCuda((2, 3, 4), "<f2")
    del obj.__cuda_array_interface__["strides"]
    assert as_tensor_arg(obj).strides == (12, 4, 1)


def test_cai_device_index_and_cupy_kind():
    cupy_like = type("ndarray", (FakeCuda,), {"__module__": "cupy._core.core"})
    obj = cupy_like((8,), "<f4")
    obj.device = types.SimpleNamespace(id=1)
    arg = as_tensor_arg(obj)
    assert (arg.kind, arg.device_index) == ("cupy", 1)


def test_cai_null_pointer_for_empty_array():
    assert as_tensor_arg(FakeCuda((0,), "<f4", ptr=0)).data_ptr == 0


@pytest.mark.parametrize("typestr", ["<c8", "<V2", ">f4", "<f16"])
def test_cai_unsupported_typestr(typestr):
    with pytest.raises(ArgumentError, match=rf"parameter 'q' has dtype typestr '{typestr}'"):
        as_tensor_arg(FakeCuda((4,), typestr), "q")


def test_cai_misaligned_byte_strides():
    with pytest.raises(ArgumentError) as info:
        as_tensor_arg(FakeCuda((4, 5), "<f4", strides=(22, 4)), "k")
    msg = str(info.value)
    assert "byte strides (22, 4) that are not multiples of its 4-byte element size" in msg


def test_cai_mask_is_refused():
    with pytest.raises(ArgumentError, match="masked array"):
        as_tensor_arg(FakeCuda((4,), "<f4", mask=object()), "m")


# -- DLPack -----------------------------------------------------------------------------------

class FakeDLPack:
    """Exports a numpy array through the DLPack protocol only (no array interfaces)."""

    def __init__(self, array, versioned=False):
        self.array, self.versioned = array, versioned

    def __dlpack__(self, stream=None):
        if self.versioned:
            return self.array.__dlpack__(max_version=(1, 0))
        return self.array.__dlpack__()

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


@pytest.mark.parametrize("versioned", [False, True])
def test_dlpack_contiguous(versioned):
    a = np.arange(6, dtype=np.int64).reshape(2, 3)
    arg = as_tensor_arg(FakeDLPack(a, versioned))
    assert (arg.kind, arg.device, arg.device_index) == ("dlpack", "cpu", None)
    assert (arg.shape, arg.strides, arg.dtype) == ((2, 3), (3, 1), T.i64)
    assert arg.data_ptr == a.ctypes.data


def test_dlpack_non_contiguous_view():
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    v = a[1:, ::2]
    arg = as_tensor_arg(FakeDLPack(v))
    assert (arg.shape, arg.strides, arg.dtype) == ((3, 3), (6, 2), T.f32)
    assert arg.data_ptr == v.ctypes.data == a.ctypes.data + 24


@pytest.mark.parametrize("dtype, expected", [
    ("float16", T.f16), ("float64", T.f64), ("int8", T.i8), ("uint16", T.u16), ("int32", T.i32),
    ("uint64", T.u64), ("bool", T.u8),
])
def test_dlpack_dtypes(dtype, expected):
    a = np.zeros((3, 1, 2), dtype=dtype)
    arg = from_dlpack_capsule(a.__dlpack__(), a)
    assert arg.dtype == expected
    assert arg.shape == (3, 1, 2)
    assert arg.data_ptr == a.ctypes.data


def test_dlpack_capsule_keeps_memory_alive():
    arg = as_tensor_arg(FakeDLPack(np.full(1000, 7.0, dtype=np.float64)))
    gc.collect()
    owner, capsule = arg.owner
    assert type(capsule).__name__ == "PyCapsule"
    # the exported buffer is still valid: read it back through the address
    assert (ctypes.c_double * 1000).from_address(arg.data_ptr)[999] == 7.0


def test_dlpack_unsupported_dtype():
    a = np.zeros(3, dtype=np.complex64)
    with pytest.raises(ArgumentError, match="parameter 'z' has dtype DLPack complex64"):
        from_dlpack_capsule(a.__dlpack__(), a, "z")


def test_dlpack_consumed_capsule_is_reported():
    with pytest.raises(ArgumentError, match="did not return a DLPack capsule"):
        from_dlpack_capsule(object(), None, "c")


# -- torch, duck-typed ------------------------------------------------------------------------

class _Dtype:
    def __init__(self, name):
        self.name = name

    def __str__(self):
        return f"torch.{self.name}"

    def __hash__(self):
        return hash(self.name)

    def __eq__(self, other):
        return isinstance(other, _Dtype) and other.name == self.name


class Tensor:
    """Mimics the torch.Tensor attributes warpstage reads."""

    def __init__(self, shape, strides, dtype="float16", device="cuda", index=0, ptr=0x7F00DEAD0000):
        self.shape, self._strides, self.dtype = shape, strides, _Dtype(dtype)
        self.device = types.SimpleNamespace(type=device, index=index)
        self._ptr = ptr
        self.layout = "torch.strided"

    def data_ptr(self):
        return self._ptr

    def stride(self):
        return self._strides


Tensor.__module__ = "torch"


@pytest.mark.parametrize("dtype, expected", [
    ("float16", T.f16), ("bfloat16", T.bf16), ("float32", T.f32), ("float64", T.f64),
    ("int8", T.i8), ("int32", T.i32), ("int64", T.i64), ("uint8", T.u8), ("bool", T.u8),
])
def test_torch_duck_typed(dtype, expected):
    t = Tensor((4, 8), (8, 1), dtype)
    arg = as_tensor_arg(t, "q")
    assert (arg.kind, arg.device, arg.device_index, arg.dtype) == ("torch", "cuda", 0, expected)
    assert (arg.shape, arg.strides, arg.data_ptr) == ((4, 8), (8, 1), 0x7F00DEAD0000)
    assert arg.owner is t


def test_torch_cpu_tensor_has_no_device_index():
    arg = as_tensor_arg(Tensor((3,), (1,), device="cpu", index=None))
    assert (arg.device, arg.device_index) == ("cpu", None)


def test_torch_unsupported_dtype_and_device():
    with pytest.raises(ArgumentError, match="parameter 'w' has dtype torch.complex64"):
        as_tensor_arg(Tensor((3,), (1,), "complex64"), "w")
    with pytest.raises(ArgumentError, match="torch tensor on device"):
        as_tensor_arg(Tensor((3,), (1,), device="meta", index=None), "w")


def test_torch_module_objects_that_are_not_tensors():
    Size = type("Size", (tuple,), {"__module__": "torch"})
    dtype_like = type("dtype", (), {"__module__": "torch"})
    assert as_tensor_arg(Size((2, 3))) is None
    assert as_tensor_arg(dtype_like()) is None


# -- require_device ---------------------------------------------------------------------------

def test_require_device_numpy_message():
    arg = as_tensor_arg(np.zeros(4, dtype=np.float32))
    with pytest.raises(ArgumentError) as info:
        require_device(arg, "x")
    assert str(info.value) == (
        "parameter 'x' is a CPU numpy array; the cuda target needs a tensor in GPU memory.\n"
        "Expected: a GPU tensor (torch/cupy CUDA, __cuda_array_interface__); got a CPU numpy "
        "array.\nFix: move it with torch.from_numpy(x).cuda() / cupy.asarray(x), or run in the "
        "simulator with ws.set_target('sim').")


def test_require_device_torch_cpu_message():
    arg = as_tensor_arg(Tensor((3,), (1,), device="cpu", index=None))
    with pytest.raises(ArgumentError) as info:
        require_device(arg, "q")
    assert str(info.value).startswith("parameter 'q' is a CPU torch tensor; the cuda target needs "
                                      "a tensor in GPU memory.\n")
    assert "Fix: move it with q.cuda(), or run" in str(info.value)


def test_require_device_other_gpu_message():
    arg = as_tensor_arg(Tensor((3,), (1,), index=1))
    with pytest.raises(ArgumentError) as info:
        require_device(arg, "k")
    msg = str(info.value)
    assert msg.startswith("parameter 'k' is on GPU cuda:1; warpstage launches on cuda:0")
    assert "k.to('cuda:0')" in msg and "CUDA_VISIBLE_DEVICES=1" in msg


def test_require_device_accepts_device_zero():
    require_device(as_tensor_arg(Tensor((3,), (1,))), "ok")
    require_device(as_tensor_arg(FakeCuda((3,), "<f4")), "ok")


def test_tensor_arg_is_slotted():
    arg = TensorArg(0, (1,), (1,), T.f32, "cpu", None, None, "numpy")
    with pytest.raises(AttributeError):
        arg.extra = 1
