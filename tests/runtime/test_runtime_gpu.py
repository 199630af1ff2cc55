"""The runtime against a real GPU: driver wrappers, PTX JIT and cubin loading, launches (plain,
large dynamic smem, clusters, other threads), the parameter ABI as the kernel sees it, torch
interop. Skipped without a usable CUDA device (tests/conftest.py)."""
import ctypes
import shutil
import struct
import subprocess
import threading

import numpy as np
import pytest

from warpstage.errors import ArgumentError, DeviceError, LaunchError
from warpstage.ir import types as T
from warpstage.runtime import driver
from warpstage.runtime.launcher import Launcher, current_stream
from warpstage.runtime.target import device_properties
from warpstage.runtime.tensors import as_tensor_arg, require_device

pytestmark = pytest.mark.gpu

KERNELS = r"""
.visible .entry add_one(
    .param .u64 add_one_x,
    .param .u32 add_one_n
)
{
    .reg .pred  %p<2>;
    .reg .b32   %r<6>;
    .reg .f32   %f<3>;
    .reg .b64   %rd<5>;

    ld.param.u64        %rd1, [add_one_x];
    ld.param.u32        %r1, [add_one_n];
    mov.u32             %r2, %ctaid.x;
    mov.u32             %r3, %ntid.x;
    mov.u32             %r4, %tid.x;
    mad.lo.s32          %r5, %r2, %r3, %r4;
    setp.ge.u32         %p1, %r5, %r1;
    @%p1 bra            ADD_ONE_DONE;
    cvta.to.global.u64  %rd2, %rd1;
    mul.wide.u32        %rd3, %r5, 4;
    add.s64             %rd4, %rd2, %rd3;
    ld.global.f32       %f1, [%rd4];
    add.f32             %f2, %f1, 0f3F800000;
    st.global.f32       [%rd4], %f2;
ADD_ONE_DONE:
    ret;
}

.visible .entry empty()
{
    ret;
}

.visible .entry store_params(
    .param .u64 sp_out,
    .param .u8  sp_b,
    .param .s32 sp_i,
    .param .s64 sp_l,
    .param .f32 sp_f,
    .param .b16 sp_h,
    .param .b16 sp_bh,
    .param .f64 sp_d
)
{
    .reg .b16   %rs<4>;
    .reg .b32   %r<3>;
    .reg .b64   %rd<4>;
    .reg .f32   %f<2>;
    .reg .f64   %fd<2>;

    ld.param.u64        %rd1, [sp_out];
    cvta.to.global.u64  %rd2, %rd1;
    ld.param.u8         %rs1, [sp_b];
    cvt.u32.u16         %r1, %rs1;
    st.global.u32       [%rd2], %r1;
    ld.param.s32        %r2, [sp_i];
    st.global.u32       [%rd2+4], %r2;
    ld.param.s64        %rd3, [sp_l];
    st.global.u64       [%rd2+8], %rd3;
    ld.param.f32        %f1, [sp_f];
    st.global.f32       [%rd2+16], %f1;
    ld.param.b16        %rs2, [sp_h];
    st.global.b16       [%rd2+20], %rs2;
    ld.param.b16        %rs3, [sp_bh];
    st.global.b16       [%rd2+22], %rs3;
    ld.param.f64        %fd1, [sp_d];
    st.global.f64       [%rd2+24], %fd1;
    ret;
}

.extern .shared .align 16 .b8 smem_probe_buf[];

.visible .entry smem_probe(
    .param .u64 smem_probe_out,
    .param .u32 smem_probe_off
)
{
    .reg .b32   %r<5>;
    .reg .b64   %rd<3>;

    ld.param.u64        %rd1, [smem_probe_out];
    ld.param.u32        %r1, [smem_probe_off];
    mov.u32             %r2, smem_probe_buf;
    add.s32             %r3, %r2, %r1;
    st.shared.u32       [%r3], %r1;
    bar.sync            0;
    ld.shared.u32       %r4, [%r3];
    cvta.to.global.u64  %rd2, %rd1;
    st.global.u32       [%rd2], %r4;
    ret;
}
"""


def _ptx() -> str:
    props = device_properties(0)
    if props.compute_capability == (9, 0):
        header = ".version 8.0\n.target sm_90a\n.address_size 64\n"
    else:   # sm_80 PTX JIT-compiles for any newer GPU
        header = ".version 7.0\n.target sm_80\n.address_size 64\n"
    return header + KERNELS


@pytest.fixture(scope="module")
def module():
    return driver.load_module(_ptx(), is_ptx=True)


@pytest.fixture
def device_buffer():
    allocations = []

    def alloc(host: np.ndarray) -> int:
        ptr = driver.mem_alloc(host.nbytes)
        allocations.append(ptr)
        driver.memcpy_htod(ptr, host)
        return ptr

    yield alloc
    for ptr in allocations:
        driver.mem_free(ptr)


def _read(ptr: int, like: np.ndarray) -> np.ndarray:
    out = np.empty_like(like)
    driver.memcpy_dtoh(out, ptr)
    return out


def test_device_properties():
    p = device_properties(0)
    assert p.name and p.sm_count > 0 and p.warp_size == 32
    assert p.cc_major >= 7
    assert p.max_threads_per_block == 1024
    assert p.max_block_dims == (1024, 1024, 64)
    assert p.max_grid_dims == (2**31 - 1, 65535, 65535)
    assert p.max_smem_per_block_optin >= p.max_smem_per_block == 48 * 1024
    assert p.driver_version >= 12000
    assert device_properties(0) is p


def test_context_is_the_primary_context():
    cu = driver.cuda()
    ctx = driver.context()
    err, current = cu.cuCtxGetCurrent()
    assert not err and int(current) == int(ctx)
    err, primary = cu.cuDevicePrimaryCtxRetain(driver.device(0))
    assert not err and int(primary) == int(ctx)
    cu.cuDevicePrimaryCtxRelease(driver.device(0))


def test_memory_round_trip(device_buffer):
    host = np.arange(257, dtype=np.float64)
    assert np.array_equal(_read(device_buffer(host), host), host)


def test_add_one_through_ptx_jit(module, device_buffer):
    n = 1000
    host = np.arange(n, dtype=np.float32)
    x = device_buffer(host)
    launcher = Launcher(driver.get_function(module, "add_one"), [ctypes.c_void_p, ctypes.c_uint32])
    launcher.launch(((n + 255) // 256,), (256,), 0, 0, [x, n])
    launcher.launch(((n + 127) // 128, 1, 1), (128, 1, 1), 0, 0, [x, n])
    driver.synchronize()
    assert np.array_equal(_read(x, host), host + 2)


def test_add_one_respects_n(module, device_buffer):
    host = np.zeros(64, dtype=np.float32)
    x = device_buffer(host)
    launcher = Launcher(driver.get_function(module, "add_one"), [T.PointerType(T.f32), T.u32])
    launcher.launch(1, 64, 0, 0, [x, 10])
    driver.synchronize()
    out = _read(x, host)
    assert np.array_equal(out[:10], np.ones(10)) and not out[10:].any()


def test_parameter_abi_as_the_kernel_sees_it(module, device_buffer):
    out = device_buffer(np.zeros(32, dtype=np.uint8))
    launcher = Launcher(driver.get_function(module, "store_params"),
                        [ctypes.c_void_p, ctypes.c_bool, ctypes.c_int32, ctypes.c_int64,
                         ctypes.c_float, T.f16, T.bf16, ctypes.c_double])
    launcher.launch(1, 1, 0, 0, [out, True, -7, -2**40 - 3, 1.5, 0.5, -2.0, 2.5])
    driver.synchronize()
    raw = _read(out, np.zeros(32, dtype=np.uint8)).tobytes()
    assert struct.unpack("=IiqfHHd", raw) == (1, -7, -2**40 - 3, 1.5, 0x3800, 0xC000, 2.5)


def test_empty_kernel_and_no_parameters(module):
    launcher = Launcher(driver.get_function(module, "empty"), [])
    for _ in range(10):
        launcher.launch((4, 2, 3), (32, 2, 1), 0, 0, [])
    driver.synchronize()


def test_large_dynamic_shared_memory_is_opted_in(module, device_buffer):
    out = device_buffer(np.zeros(1, dtype=np.uint32))
    fn = driver.get_function(module, "smem_probe")
    launcher = Launcher(fn, [ctypes.c_void_p, ctypes.c_uint32])
    nbytes = 100 * 1024                        # over the 48 KiB default
    launcher.launch(1, 32, nbytes, 0, [out, nbytes - 4])
    driver.synchronize()
    assert _read(out, np.zeros(1, dtype=np.uint32))[0] == nbytes - 4
    assert driver.func_attributes(fn).max_dynamic_smem_bytes >= nbytes
    too_much = device_properties(0).max_smem_per_block_optin + 1
    with pytest.raises(LaunchError, match="bytes of dynamic shared memory"):
        launcher.launch(1, 32, too_much, 0, [out, 0])


def test_launch_refuses_too_big_block_before_the_driver(module):
    launcher = Launcher(driver.get_function(module, "empty"), [])
    with pytest.raises(LaunchError) as info:
        launcher.launch(1, (2048, 1, 1), 0, 0, [])
    assert str(info.value) == ("block (2048, 1, 1) has 2048 threads; the device allows at most "
                               "1024 per block")
    with pytest.raises(LaunchError, match=r"grid \(1, 70000, 1\) has 70000 CTAs along y"):
        launcher.launch((1, 70000), 32, 0, 0, [])


def test_bad_value_is_refused_before_the_driver(module):
    launcher = Launcher(driver.get_function(module, "add_one"), [ctypes.c_void_p, ctypes.c_uint32],
                        param_names=["x", "n"])
    with pytest.raises(ArgumentError, match="kernel parameter n of type c_uint cannot hold -1"):
        launcher.launch(1, 32, 0, 0, [0, -1])


def test_launch_from_another_thread(module, device_buffer):
    host = np.zeros(256, dtype=np.float32)
    x = device_buffer(host)
    launcher = Launcher(driver.get_function(module, "add_one"), [ctypes.c_void_p, ctypes.c_uint32])
    launcher.launch(1, 256, 0, 0, [x, 256])
    errors = []

    def work():
        try:
            launcher.launch(1, 256, 0, 0, [x, 256])
            driver.synchronize()
        except Exception as e:  # surfaced below
            errors.append(e)

    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert not errors
    driver.synchronize()
    assert np.array_equal(_read(x, host), host + 2)


def test_cluster_launch(module, device_buffer):
    if not device_properties(0).cluster_launch:
        pytest.skip("this GPU cannot launch thread-block clusters")
    n = 8 * 128
    host = np.arange(n, dtype=np.float32)
    x = device_buffer(host)
    launcher = Launcher(driver.get_function(module, "add_one"), [ctypes.c_void_p, ctypes.c_uint32])
    launcher.launch_cluster((8, 1, 1), (128, 1, 1), (2, 1, 1), 0, 0, [x, n])
    launcher.launch_cluster((8, 1, 1), (128, 1, 1), (4, 1, 1), 0, 0, [x, n])
    driver.synchronize()
    assert np.array_equal(_read(x, host), host + 2)
    with pytest.raises(LaunchError, match="not a whole number of clusters"):
        launcher.launch_cluster((6, 1, 1), (128, 1, 1), (4, 1, 1), 0, 0, [x, n])


def test_func_attributes(module):
    attrs = driver.func_attributes(driver.get_function(module, "add_one"))
    assert 0 < attrs.num_regs <= 255
    assert attrs.local_bytes == 0 and attrs.static_smem_bytes == 0
    assert attrs.max_threads_per_block >= 256
    assert attrs.ptx_version >= 70 and attrs.binary_version >= 70


def test_missing_kernel_name(module):
    with pytest.raises(DeviceError) as info:
        driver.get_function(module, "no_such_kernel")
    assert "CUDA_ERROR_NOT_FOUND" in str(info.value)
    assert "'no_such_kernel'" in str(info.value)


def test_bad_ptx_raises_device_error():
    bad = _ptx() + "\n.visible .entry broken() { bogus.instruction %r1; ret; }\n"
    with pytest.raises(DeviceError) as info:
        driver.load_module(bad, is_ptx=True)
    assert "CUDA_ERROR_INVALID_PTX" in str(info.value)


def test_bad_ptx_error_carries_the_jit_log():
    bad = _ptx() + "\n.visible .entry broken() { bogus.instruction %r1; ret; }\n"
    with pytest.raises(DeviceError) as info:
        driver.load_module(bad, is_ptx=True)
    assert "JIT log:" in str(info.value)
    assert "error" in str(info.value).split("JIT log:", 1)[1]


def test_cubin_path(tmp_path, device_buffer):
    ptxas = shutil.which("ptxas")
    if ptxas is None:
        pytest.skip("ptxas is not on PATH")
    props = device_properties(0)
    src = tmp_path / "k.ptx"
    src.write_text(_ptx())
    arch = f"sm_{props.cc_major}{props.cc_minor}"
    arch += "a" if props.compute_capability == (9, 0) else ""
    subprocess.run([ptxas, f"-arch={arch}", str(src), "-o", str(tmp_path / "k.cubin")], check=True)
    mod = driver.load_module((tmp_path / "k.cubin").read_bytes(), is_ptx=False)
    assert mod.kind == "cubin"
    host = np.arange(100, dtype=np.float32)
    x = device_buffer(host)
    Launcher(driver.get_function(mod, "add_one"), [ctypes.c_void_p, ctypes.c_uint32]).launch(
        1, 128, 0, 0, [x, 100])
    driver.synchronize()
    assert np.array_equal(_read(x, host), host + 1)


# -- torch interop ----------------------------------------------------------------------------

def test_torch_tensors(module):
    torch = pytest.importorskip("torch")
    x = torch.arange(1000, dtype=torch.float32, device="cuda")
    arg = as_tensor_arg(x, "x")
    require_device(arg, "x")
    assert (arg.kind, arg.device, arg.device_index) == ("torch", "cuda", 0)
    assert arg.data_ptr == x.data_ptr() and arg.dtype == T.f32
    launcher = Launcher(driver.get_function(module, "add_one"), [ctypes.c_void_p, ctypes.c_uint32])
    launcher.launch(4, 256, 0, current_stream([arg]), [arg.data_ptr, 1000])
    torch.cuda.synchronize()
    assert torch.equal(x, torch.arange(1000, dtype=torch.float32, device="cuda") + 1)


def test_torch_side_stream_orders_the_launch(module):
    torch = pytest.importorskip("torch")
    x = torch.zeros(1 << 20, dtype=torch.float32, device="cuda")
    launcher = Launcher(driver.get_function(module, "add_one"), [ctypes.c_void_p, ctypes.c_uint32])
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())     # x's zero-fill happened on the default stream
    with torch.cuda.stream(side):
        x.fill_(5.0)
        arg = as_tensor_arg(x, "x")
        stream = current_stream([arg])
        assert stream == side.cuda_stream
        launcher.launch(x.numel() // 256, 256, 0, stream, [arg.data_ptr, x.numel()])
    side.synchronize()
    assert bool((x == 6.0).all())


def test_torch_view_and_bf16_arguments():
    torch = pytest.importorskip("torch")
    base = torch.zeros(8, 6, dtype=torch.bfloat16, device="cuda")
    arg = as_tensor_arg(base[2:, ::3], "v")
    assert (arg.shape, arg.strides, arg.dtype) == ((6, 2), (6, 3), T.bf16)
    assert arg.data_ptr == base.data_ptr() + 2 * 6 * 2
    cpu = as_tensor_arg(torch.zeros(3), "c")
    with pytest.raises(ArgumentError, match="parameter 'c' is a CPU torch tensor"):
        require_device(cpu, "c")
