"""numpy arrays of ``ml_dtypes.bfloat16`` (the numpy bf16 dtype, pypi ml_dtypes) as BFloat16
tensors: the adapter (matched by dtype name; ml_dtypes is imported only by whoever made the
array), kernel arguments in the simulator (loads, stores, views, annotations, repeated calls),
TMA descriptors and the BFloat16 tiles they fill, ws.ops.flash_attention in and out, and the
reference. Expected values come from ml_dtypes' own float32 -> bfloat16 rounding (nearest even),
independent of the simulator's."""
import subprocess
import sys

import numpy as np
import pytest

import warpstage as ws
from tma_kit import init_barrier, load_box
from warpstage.errors import ArgumentError
from warpstage.ir import types as T
from warpstage.runtime.tensors import as_tensor_arg

ml_dtypes = pytest.importorskip("ml_dtypes")
BF16 = np.dtype(ml_dtypes.bfloat16)
pytestmark = [pytest.mark.usefixtures("sim_target"),
              pytest.mark.filterwarnings("ignore::warpstage.RecompileWarning")]


def bf16(x):
    """float32 data rounded to bfloat16 by ml_dtypes."""
    return np.asarray(x, np.float32).astype(BF16)


# -- the adapter ------------------------------------------------------------------------------

def test_adapter_reads_bfloat16_arrays_and_views():
    a = bf16(np.arange(24).reshape(4, 6))
    arg = as_tensor_arg(a, "x")
    assert (arg.dtype, arg.shape, arg.strides, arg.kind) == (T.bf16, (4, 6), (6, 1), "numpy")
    assert arg.data_ptr == a.ctypes.data and arg.owner is a
    view = as_tensor_arg(a[1:, ::2].T)
    assert (view.dtype, view.shape, view.strides) == (T.bf16, (3, 3), (2, 6))
    assert view.data_ptr == a.ctypes.data + 6 * 2
    assert as_tensor_arg(ml_dtypes.bfloat16(1.5)) is None       # a scalar, not a 0-d tensor


def test_other_ml_dtypes_are_refused_by_name():
    x = np.zeros(4, ml_dtypes.float8_e4m3b11fnuz)      # e4m3fn and e5m2 are read (fp8)
    with pytest.raises(ArgumentError, match="parameter 'x' has dtype numpy float8_e4m3b11fnuz"):
        as_tensor_arg(x, "x")


def test_warpstage_does_not_import_ml_dtypes_for_other_arrays():
    code = ("import sys, numpy as np, warpstage as ws\n"
            "from warpstage.runtime.tensors import as_tensor_arg\n"
            "as_tensor_arg(np.zeros(3, np.float16))\n"
            "ws.tma.TensorDescriptor(np.zeros((8, 8), np.float16), (8, 8))\n"
            "print('ml_dtypes' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# -- kernels ----------------------------------------------------------------------------------

@ws.kernel
def axpy(x: ws.Tensor[ws.BFloat16, 2], y: ws.Tensor, out: ws.Tensor, alpha: ws.Float32):
    """out[i, j] = alpha * x[i, j] + y[i, j] (bf16 x; y and out any float dtype)."""
    i = ws.arch.block_idx()[0]
    j = ws.arch.thread_idx()[0]
    if j < x.shape[1]:
        out[i, j] = alpha * ws.Float32(x[i, j]) + ws.Float32(y[i, j])


def test_kernel_reads_and_writes_bfloat16_arrays():
    rng = np.random.default_rng(0)
    x = bf16(rng.standard_normal((5, 40)))
    y = bf16(rng.standard_normal((5, 40)))
    out = np.full((5, 40), np.nan, np.float32).astype(BF16)
    axpy[5, 64](x, y, out, 1.5)
    want = bf16(np.float32(1.5) * x.astype(np.float32) + y.astype(np.float32))
    assert out.dtype == BF16
    np.testing.assert_array_equal(out.view(np.uint16), want.view(np.uint16))
    # f32 output, strided bf16 inputs (a transposed view, every other column)
    wide = bf16(rng.standard_normal((40, 10)))
    out32 = np.zeros((5, 40), np.float32)
    axpy[5, 64](wide[:, ::2].T, y, out32, -2.0)
    want32 = np.float32(-2.0) * wide[:, ::2].T.astype(np.float32) + y.astype(np.float32)
    np.testing.assert_array_equal(out32, want32)
    # a second call with new data takes the cached specialization and sees the new values
    axpy[5, 64](y, x, out, 0.5)
    want = bf16(np.float32(0.5) * y.astype(np.float32) + x.astype(np.float32))
    np.testing.assert_array_equal(out.view(np.uint16), want.view(np.uint16))


def test_annotation_tells_bfloat16_from_its_bits():
    bits = np.zeros((2, 8), np.uint16)
    with pytest.raises(ArgumentError, match="parameter 'x'.*BFloat16"):
        axpy[2, 32](bits, bits, np.zeros((2, 8), np.float32), 1.0)
    out = np.zeros((2, 8), np.float32)
    axpy[2, 32](bits.view(BF16), np.ones((2, 8), np.float32), out, 1.0)   # the same bits, bf16
    np.testing.assert_array_equal(out, np.ones((2, 8), np.float32))


@ws.kernel
def times_three(out: ws.Tensor, v):
    out[0] = v * 3.0


def test_bfloat16_numpy_scalar_is_a_bfloat16_argument():
    out = np.zeros(1, np.float32)
    v = ml_dtypes.bfloat16(1.0078125)              # 1 + 2^-7: exact in bf16
    times_three[1, 1](out, v)                      # bf16 * 3.0 rounds to bf16 (a tie: to even)
    assert out[0] == np.float32(bf16(np.float32(v) * 3))
    assert out[0] == 3.03125
    ck = ws.compile(times_three, ws.Tensor[ws.Float32, 1], v, block=1)
    assert ".b16" in ck.ptx or "bf16" in ck.ptx


class Tile:
    tile: ws.smem.Array(ws.BFloat16, (64, 64), swizzle=128)
    bar: ws.smem.MbarrierArray[1]


@ws.kernel
def tma_scale(desc, out: ws.Tensor):
    """TMA-load box (64, 64) at row block_idx * 64 into a BFloat16 tile; out = 2 * tile."""
    s = ws.smem.allocate(Tile)
    tid = ws.arch.thread_idx()[0]
    row0 = ws.arch.block_idx()[0] * 64
    init_barrier(s.bar[0], tid)
    load_box(desc, s.tile, (row0, 0), s.bar[0], tid)
    s.bar[0].wait(0)
    for k in range(tid, 64 * 64, ws.arch.block_dim()[0]):
        out[row0 + k // 64, k % 64] = s.tile[k // 64, k % 64] * 2.0


def test_tma_descriptor_of_a_bfloat16_array_fills_a_bfloat16_tile():
    x = bf16(np.random.default_rng(1).standard_normal((128, 64)))
    desc = ws.tma.TensorDescriptor(x, box=(64, 64), swizzle=128)
    assert desc.dtype == T.bf16 and desc.smem_bytes == 64 * 64 * 2
    out = np.zeros_like(x)
    tma_scale[2, 128](desc, out)
    np.testing.assert_array_equal(out.astype(np.float32), 2 * x.astype(np.float32))


def test_tma_descriptor_of_uint16_bits_says_how_to_view_them_as_bfloat16():
    bits = np.zeros((64, 64), np.uint16)
    with pytest.raises(ws.OperandError, match=r"(?s)expected the descriptor's Uint16, got "
                                              r"'BFloat16'.*x.view\(ml_dtypes.bfloat16\)"):
        tma_scale[1, 128](ws.tma.TensorDescriptor(bits, box=(64, 64)), np.zeros((64, 64), BF16))


# -- ws.ops.flash_attention -------------------------------------------------------------------

@pytest.mark.parametrize("mma", ["mma.sync", "wgmma"])
def test_flash_attention_bfloat16_numpy_in_and_out(mma):
    rng = np.random.default_rng(2)
    q, k, v = (bf16(rng.standard_normal((1, 2, 70, 64))) for _ in range(3))
    out = ws.ops.flash_attention(q, k, v, causal=True, mma=mma)
    assert isinstance(out, np.ndarray) and out.dtype == BF16 and out.shape == q.shape
    want = ws.ops.reference(q, k, v, causal=True)          # takes bf16 arrays as they are
    want2 = ws.ops.reference(*(x.astype(np.float64) for x in (q, k, v)), causal=True)
    np.testing.assert_array_equal(want, want2)
    got = out.astype(np.float64)
    assert np.linalg.norm(got - want) / np.linalg.norm(want) < 1e-2


def test_flash_attention_refuses_mixed_16_bit_floats():
    q = np.zeros((1, 1, 16, 64), BF16)
    with pytest.raises(ArgumentError, match=r"have dtypes bfloat16, float16, bfloat16; expected "
                                            r"one of float16 or bfloat16 \(f16 / bf16\)"):
        ws.ops.flash_attention(q, q.astype(np.float16), q)
