"""Launcher pieces that need no GPU: dims normalization and limit checks (pure functions),
the parameter ABI (packed bytes and offsets), bf16 rounding, stream choice."""
import ctypes
import math
import struct
import sys
import types

import pytest

from warpstage.errors import ArgumentError, LaunchError
from warpstage.ir import types as T
from warpstage.runtime.launcher import (Launcher, LaunchLimits, check_cluster_dims,
                                        check_launch_dims, current_stream, float_to_bf16_bits,
                                        normalize_dims)
from warpstage.runtime.tensors import TensorArg

H200 = LaunchLimits(max_threads_per_block=1024, max_block_dims=(1024, 1024, 64),
                    max_grid_dims=(2**31 - 1, 65535, 65535), max_smem_per_block_optin=232448)


# -- dims -------------------------------------------------------------------------------------

@pytest.mark.parametrize("dims, expected", [
    (7, (7, 1, 1)), ((7,), (7, 1, 1)), ((7, 2), (7, 2, 1)), ([7, 2, 3], (7, 2, 3)),
])
def test_normalize_dims(dims, expected):
    assert normalize_dims(dims, "grid") == expected


@pytest.mark.parametrize("dims", [(), (1, 2, 3, 4), 2.0, (2.0,), "4", None, True])
def test_normalize_dims_rejects(dims):
    with pytest.raises(LaunchError, match=r"grid must be an int or a tuple of 1 to 3 ints"):
        normalize_dims(dims, "grid")


def test_block_too_many_threads():
    with pytest.raises(LaunchError) as info:
        check_launch_dims((1, 1, 1), (2048, 1, 1), H200)
    assert str(info.value) == ("block (2048, 1, 1) has 2048 threads; the device allows at most "
                               "1024 per block")


def test_block_product_too_many_threads():
    with pytest.raises(LaunchError, match=r"block \(32, 32, 2\) has 2048 threads"):
        check_launch_dims((1, 1, 1), (32, 32, 2), H200)


def test_block_z_over_limit():
    with pytest.raises(LaunchError) as info:
        check_launch_dims((1, 1, 1), (1, 1, 128), H200)
    assert str(info.value) == ("block (1, 1, 128) has 128 threads along z; the device allows at "
                               "most 64 along z")


@pytest.mark.parametrize("grid, axis, count", [
    ((1, 65536, 1), "y", 65536), ((1, 1, 70000), "z", 70000), ((2**31, 1, 1), "x", 2**31),
])
def test_grid_over_limit(grid, axis, count):
    with pytest.raises(LaunchError) as info:
        check_launch_dims(grid, (128, 1, 1), H200)
    msg = str(info.value)
    assert msg.startswith(f"grid {grid} has {count} CTAs along {axis}; the device allows at most")
    assert "Fix:" in msg


@pytest.mark.parametrize("grid, block", [((0, 1, 1), (1, 1, 1)), ((1, 1, 1), (32, 0, 1)),
                                         ((-1, 1, 1), (1, 1, 1))])
def test_zero_or_negative_dims(grid, block):
    with pytest.raises(LaunchError, match="every dimension must be at least 1"):
        check_launch_dims(grid, block, H200)


def test_kernel_thread_limit_names_registers():
    limits = H200._replace(kernel_max_threads=384, num_regs=168)
    check_launch_dims((132, 1, 1), (384, 1, 1), limits)
    with pytest.raises(LaunchError) as info:
        check_launch_dims((132, 1, 1), (512, 1, 1), limits)
    assert str(info.value).startswith("block (512, 1, 1) has 512 threads; this kernel can run at "
                                      "most 384 per block (it uses 168 registers per thread)")


def test_shared_memory_limit():
    check_launch_dims((1, 1, 1), (128, 1, 1), H200, 232448)
    with pytest.raises(LaunchError, match="asks for 300000 bytes of dynamic shared memory"):
        check_launch_dims((1, 1, 1), (128, 1, 1), H200, 300000)


def test_largest_legal_launch_passes():
    check_launch_dims((2**31 - 1, 65535, 65535), (1024, 1, 1), H200)
    check_launch_dims((1, 1, 1), (16, 1, 64), H200)


def test_cluster_dims():
    check_cluster_dims((8, 4, 1), (2, 2, 1))
    with pytest.raises(LaunchError, match="not a whole number of clusters"):
        check_cluster_dims((3, 1, 1), (2, 1, 1))
    with pytest.raises(LaunchError, match=r"cluster \(4, 4, 1\) has 16 CTAs; at most 8"):
        check_cluster_dims((16, 16, 1), (4, 4, 1))


def test_launcher_refuses_bad_block_before_touching_the_driver():
    launcher = Launcher(object(), [ctypes.c_void_p], limits=H200)
    with pytest.raises(LaunchError, match="2048 threads"):
        launcher.launch((1,), (2048,), 0, 0, [0])
    with pytest.raises(LaunchError, match="grid must be an int"):
        launcher.launch("many", (32,), 0, 0, [0])
    with pytest.raises(LaunchError, match="dynamic shared memory must be an int"):
        launcher.launch(1, 32, 1.5, 0, [0])


# -- parameter ABI ----------------------------------------------------------------------------

def test_pack_layout_every_slot_is_8_byte_aligned():
    types_ = [ctypes.c_void_p, ctypes.c_int32, ctypes.c_bool, ctypes.c_int64, ctypes.c_float,
              ctypes.c_double, ctypes.c_uint8, ctypes.c_uint32]
    launcher = Launcher(object(), types_)
    assert launcher.param_offsets == (0, 8, 16, 24, 32, 40, 48, 56)
    raw = launcher.pack([0xDEADBEEF00, -5, True, -2**40, 1.5, 2.25, 255, 2**32 - 1])
    assert len(raw) == 64
    assert struct.unpack_from("=Q", raw, 0)[0] == 0xDEADBEEF00
    assert struct.unpack_from("=i", raw, 8)[0] == -5
    assert raw[16:24] == b"\x01" + b"\0" * 7            # bool: one byte, zero padding
    assert struct.unpack_from("=q", raw, 24)[0] == -2**40
    assert struct.unpack_from("=f", raw, 32)[0] == 1.5
    assert struct.unpack_from("=d", raw, 40)[0] == 2.25
    assert raw[48] == 255
    assert struct.unpack_from("=I", raw, 56)[0] == 2**32 - 1


def test_pack_ir_types_half_and_bfloat16():
    launcher = Launcher(object(), [T.PointerType(T.f32), T.i32, T.f16, T.bf16, T.i1, T.u64, T.f64])
    raw = launcher.pack([4096, 7, 0.5, -2.0, False, 2**64 - 1, -0.0])
    offsets = launcher.param_offsets
    assert struct.unpack_from("=Q", raw, offsets[0])[0] == 4096
    assert struct.unpack_from("=i", raw, offsets[1])[0] == 7
    assert struct.unpack_from("=H", raw, offsets[2])[0] == 0x3800      # f16 0.5
    assert struct.unpack_from("=H", raw, offsets[3])[0] == 0xC000      # bf16 -2.0
    assert raw[offsets[4]] == 0
    assert struct.unpack_from("=Q", raw, offsets[5])[0] == 2**64 - 1
    assert struct.unpack_from("=Q", raw, offsets[6])[0] == 1 << 63     # -0.0 keeps its sign


def test_pack_by_value_blob():
    Desc = ctypes.c_uint8 * 128                       # e.g. a TMA descriptor (CUtensorMap)
    launcher = Launcher(object(), [ctypes.c_int32, Desc, ctypes.c_void_p])
    assert launcher.param_offsets == (0, 8, 136)
    blob = bytes(range(128))
    raw = launcher.pack([1, blob, 2])
    assert raw[8:136] == blob
    with pytest.raises(ArgumentError, match="by-value parameter of 128 bytes got 3 bytes"):
        launcher.pack([1, b"abc", 2])


def test_pack_errors_name_the_parameter():
    launcher = Launcher(object(), [ctypes.c_void_p, ctypes.c_int32], param_names=["x", "n"])
    with pytest.raises(ArgumentError) as info:
        launcher.pack([0, 2**40])
    assert str(info.value).startswith("kernel parameter n of type c_int cannot hold 1099511627776")
    with pytest.raises(ArgumentError, match="kernel parameter x of type c_void_p cannot hold -1"):
        launcher.pack([-1, 0])
    with pytest.raises(ArgumentError, match="the kernel takes 2 parameters; the launch passed 3"):
        launcher.pack([0, 1, 2])
    f16 = Launcher(object(), [T.f16], param_names=["h"])
    with pytest.raises(ArgumentError, match="kernel parameter h of type f16 cannot hold 100000.0"):
        f16.pack([1e5])


def test_kernel_without_parameters():
    launcher = Launcher(object(), [])
    assert launcher.pack([]) == b""
    assert launcher.param_offsets == ()


def test_unsupported_parameter_type():
    with pytest.raises(TypeError, match="unsupported kernel parameter"):
        Launcher(object(), [ctypes.c_char_p])
    with pytest.raises(TypeError, match="unsupported kernel parameter type"):
        Launcher(object(), [int])


@pytest.mark.parametrize("value, bits", [
    (1.0, 0x3F80), (-2.0, 0xC000), (3.140625, 0x4049), (0.0, 0x0000), (-0.0, 0x8000),
    (1.0 + 2**-8, 0x3F80),            # tie -> even (down)
    (1.0 + 3 * 2**-8, 0x3F82),        # tie -> even (up)
    (1.0 + 2**-8 + 2**-20, 0x3F81),   # above the tie -> up
    (math.inf, 0x7F80), (-math.inf, 0xFF80), (3.4e38, 0x7F80),   # rounds to infinity
])
def test_float_to_bf16_bits(value, bits):
    assert float_to_bf16_bits(value) == bits


def test_float_to_bf16_nan_stays_nan():
    bits = float_to_bf16_bits(math.nan)
    assert bits & 0x7F80 == 0x7F80 and bits & 0x007F


# -- stream choice ----------------------------------------------------------------------------

def _arg(kind, device="cuda", index=0):
    return TensorArg(0x1000, (4,), (1,), T.f32, device, index, None, kind)


def test_current_stream_defaults_to_legacy_stream():
    assert current_stream([]) == 0
    assert current_stream([_arg("cai"), _arg("dlpack")]) == 0


def test_current_stream_follows_torch(monkeypatch):
    calls = []

    def raw_stream(index):
        calls.append(index)
        return 0xABC

    fake = types.SimpleNamespace(_C=types.SimpleNamespace(_cuda_getCurrentRawStream=raw_stream))
    monkeypatch.setitem(sys.modules, "torch", fake)
    assert current_stream([_arg("cai"), _arg("torch")]) == 0xABC
    assert calls == [0]
    assert current_stream([_arg("torch", "cpu", None)]) == 0


def test_current_stream_falls_back_to_public_torch_api(monkeypatch):
    stream = types.SimpleNamespace(cuda_stream=0x55)
    fake = types.SimpleNamespace(_C=types.SimpleNamespace(),
                                 cuda=types.SimpleNamespace(current_stream=lambda index: stream))
    monkeypatch.setitem(sys.modules, "torch", fake)
    assert current_stream([_arg("torch")]) == 0x55
