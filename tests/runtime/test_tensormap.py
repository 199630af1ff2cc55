"""ws.tma.TensorDescriptor on the host, without a GPU: the driver's constraints checked up front
with errors that name the rule and the fix, the static/dynamic split (what is in the cache key,
what is in the 128 bytes), the binding-time classification and the simulator's view."""
import numpy as np
import pytest

import warpstage as ws
from warpstage.frontend.binding_time import classify
from warpstage.ir.types import tensormap
from warpstage.runtime.tensormap import SimTensorMap, TensorMapArg
from warpstage.runtime.tensors import as_tensor_arg


def f32(rows, cols):
    return np.zeros((rows, cols), np.float32)


def test_geometry_in_elements_outermost_first():
    d = ws.tma.TensorDescriptor(f32(100, 72), (64, 32), swizzle=128)
    assert (d.rank, d.shape, d.strides, d.box) == (2, (100, 72), (72, 1), (64, 32))
    assert d.smem_shape == (64, 32) and d.smem_bytes == 64 * 32 * 4
    e = ws.tma.TensorDescriptor(np.zeros((8, 40, 64), np.float16), (4, 16, 64), swizzle=128,
                                element_strides=(1, 3, 1))
    assert e.smem_shape == (4, 6, 64) and e.smem_bytes == 4 * 6 * 64 * 2


@pytest.mark.parametrize("make,kwargs,error,message", [
    (lambda: f32(10, 70), dict(box=(8, 32)), ws.ArgumentError,
     r"dimension 0 has a stride of 280 bytes \(70 elements of 4 bytes\).*multiples of 16 bytes"
     r"(?s:.*)Fix: pad the rows to a multiple of 4 elements"),
    (lambda: f32(64, 64).T, dict(box=(8, 32)), ws.ArgumentError,
     r"innermost dimension has stride 64 \(elements\); TMA needs it contiguous"),
    (lambda: np.zeros(100, np.float32)[1:], dict(box=(32,)), ws.ArgumentError,
     r"address 0x[0-9a-f]+ is not 16-byte aligned"),
    (lambda: np.zeros((2,) * 6, np.float32), dict(box=(1,) * 5 + (4,)), ws.ArgumentError,
     r"rank 1 to 5, got a 6-d tensor"),
    (lambda: f32(64, 64), dict(box=(300, 32)), ws.OperandError,
     r"dimension 0 is 300; TMA boxes have 1 to 256 elements"),
    (lambda: f32(64, 64), dict(box=(8, 6)), ws.OperandError,
     r"inner extent is 6 elements = 24 bytes; TMA needs a multiple of 16 bytes"
     r"(?s:.*)Fix: make box\[-1\] a multiple of 4"),
    (lambda: f32(64, 64), dict(box=(8, 64)), ws.OperandError,
     r"inner extent is 256 bytes, more than the 128-byte swizzle span(?s:.*)box\[-1\] = 32"),
    (lambda: f32(64, 64), dict(box=(8, 8), swizzle=48), ws.OperandError,
     r"swizzle: expected one of \(0, 32, 64, 128\)"),
    (lambda: f32(64, 64), dict(box=(8, 32), element_strides=(9, 1)), ws.OperandError,
     r"traversal strides are 1 to 8"),
    (lambda: f32(64, 64), dict(box=(8, 32), element_strides=(1, 2)), ws.OperandError,
     r"no traversal stride in the innermost dimension"),
    (lambda: np.zeros((64, 64), np.int32), dict(box=(8, 32), oob_fill="nan"), ws.OperandError,
     r"'nan' needs a float dtype"),
    (lambda: f32(64, 64), dict(box=(8, 32), l2_promotion=32), ws.OperandError,
     r"l2_promotion: expected one of \(0, 64, 128, 256\)"),
    (lambda: f32(64, 64), dict(box=(8, 32), interleave="16B"), ws.OperandError,
     r"interleave: expected 'none'"),
    (lambda: f32(64, 64), dict(box=(8,)), ws.OperandError,
     r"box: expected a tuple of 2 static ints"),
    (lambda: [1, 2, 3], dict(box=(8,)), ws.ArgumentError, r"needs a tensor"),
])
def test_the_driver_constraints_are_checked_without_a_gpu(make, kwargs, error, message):
    with pytest.raises(error, match=message):
        ws.tma.TensorDescriptor(make(), **kwargs)


def test_size_one_dimensions_may_have_any_stride():
    x = np.zeros((1, 3, 8), np.float32)          # outer strides 24 and 8 floats: not 16-byte
    d = ws.tma.TensorDescriptor(x[:, :1], (1, 1, 8), swizzle=0)
    assert d.shape == (1, 1, 8)


def test_static_key_holds_the_geometry_not_the_tensor_size():
    a = classify(ws.tma.TensorDescriptor(f32(64, 64), (16, 32)), None, "d",
                 tensor_adapter=as_tensor_arg)
    b = classify(ws.tma.TensorDescriptor(f32(1000, 8), (16, 8), swizzle=32), None, "d",
                 tensor_adapter=as_tensor_arg)
    c = classify(ws.tma.TensorDescriptor(f32(128, 128), (16, 32)), None, "d",
                 tensor_adapter=as_tensor_arg)
    assert a.rule == 5 and a.binding == "mixed"
    assert a.abi("d") == [("d.tensormap", tensormap)]
    assert a.key == c.key and a.key != b.key
    leaves = []
    a.host_leaves(ws.tma.TensorDescriptor(f32(64, 64), (16, 32)), leaves)
    assert len(leaves) == 1 and isinstance(leaves[0], TensorMapArg)


def test_the_simulator_view():
    x = np.zeros((30, 40), np.float16)
    d = ws.tma.TensorDescriptor(x, (8, 16), swizzle=32, oob_fill="nan")
    m = d.sim_map(0x10000000)
    assert isinstance(m, SimTensorMap)
    assert (m.address, m.shape, m.byte_strides, m.box, m.swizzle, m.oob_nan) == (
        0x10000000, (30, 40), (80, 2), (8, 16), 32, True)


def test_encoding_a_cpu_tensor_for_the_gpu_is_an_error():
    d = ws.tma.TensorDescriptor(f32(64, 64), (16, 32))
    with pytest.raises(ws.ArgumentError, match=r"describes a cpu tensor, which the GPU cannot "
                                               r"read(?s:.*)ws.set_target\('sim'\)"):
        bytes(d.tensormap)
