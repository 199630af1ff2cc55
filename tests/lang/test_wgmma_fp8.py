"""ws.wgmma with 8-bit float operands (m64nNk32, e4m3/e5m2, K-major tiles from shared memory) in
the simulator, against numpy on the decoded inputs; and the errors for fp8 operands wgmma does
not take (MN-major tiles, fp8 mixed with 16-bit)."""
import numpy as np
import pytest

import warpstage as ws
from warpstage.errors import OperandError
from warpstage.ir.fp8 import FORMATS
from warpstage.lang.wgmma import TileLayout
from test_wgmma import stage_tiles    # cp.async of the A and B tiles into smem, waited for

try:
    import ml_dtypes          # the numpy fp8 dtypes; the GPU test reuses the kernel with torch
except ImportError:
    ml_dtypes = None
pytestmark = pytest.mark.filterwarnings("ignore::warpstage.RecompileWarning")


def _np_dtype(dtype):
    if ml_dtypes is None:
        pytest.skip("numpy fp8 arrays need ml_dtypes")
    return {ws.Float8E4M3FN: ml_dtypes.float8_e4m3fn, ws.Float8E5M2: ml_dtypes.float8_e5m2}[dtype]


class Fp8Case:
    """D (64 x n, f32) = A (64 x k, ``a_dtype``) @ B (k x n, ``b_dtype``), A stored (64, k) and
    B stored (n, k) (K contiguous, the only fp8 form), each swizzled ``swizzle`` bytes."""

    def __init__(self, n=64, k=128, a_dtype=ws.Float8E4M3FN, b_dtype=ws.Float8E4M3FN, swizzle=128):
        self.n, self.k, self.a_dtype, self.b_dtype = n, k, a_dtype, b_dtype
        self.la = TileLayout(64, k, a_dtype, swizzle)
        self.lb = TileLayout(n, k, b_dtype, swizzle)
        self.Storage = ws.smem.make_storage("Fp8Tiles", a=self.la.spec, b=self.lb.spec)

    def __repr__(self):
        return (f"Fp8Case(n={self.n}, k={self.k}, {self.a_dtype.__name__} x "
                f"{self.b_dtype.__name__}, swizzle {self.la.swizzle})")


@ws.kernel
def wgmma_fp8(case: ws.Static[Fp8Case], a_g: ws.Tensor, b_g: ws.Tensor, d_g: ws.Tensor):
    st = stage_tiles(case, a_g, b_g)
    a = ws.wgmma.tile_descriptor(st.a, major="K", swizzle=case.la.swizzle)
    b = ws.wgmma.tile_descriptor(st.b, major="K", swizzle=case.lb.swizzle)
    acc = ws.wgmma.fence(ws.wgmma.zeros(case.n))
    for kk in ws.static_range(case.k // 32):
        acc = ws.wgmma.mma(a.k_step(kk), b.k_step(kk), acc)
    ws.wgmma.commit_group()
    acc = ws.wgmma.wait_group(0, acc)
    coords = ws.wgmma.accumulator_coords(case.n)
    for i in ws.static_range(case.n // 2):
        d_g[coords[i][0], coords[i][1]] = acc[i]


def random_bits(rng, shape, dtype):
    """Random bit patterns of finite values of ``dtype`` (uint8; NaN/inf replaced by 1.0 or
    0.5; e5m2 limited to |x| <= 2^3 and e4m3's 448 at most, so no f32 sum overflows)."""
    fmt = FORMATS[dtype.ir_type.name]
    bits = rng.integers(0, 256, shape).astype(np.uint8)
    if fmt.name == "e5m2":
        bits &= 0xEF
    bits[~np.isfinite(np.array(fmt.values)[bits])] = 0x38
    return bits


def reference(a_vals, bt_vals, k):
    """D in f32 as the simulator computes it: each k32 product exact, added to D rounded."""
    want = np.zeros((a_vals.shape[0], bt_vals.shape[0]), np.float32)
    for k0 in range(0, k, 32):
        part = a_vals[:, k0:k0 + 32].astype(np.float64) @ bt_vals[:, k0:k0 + 32].astype(
            np.float64).T
        want = (want + part).astype(np.float32)
    return want


def run_case(case, seed=0):
    rng = np.random.default_rng(seed)
    a = random_bits(rng, (64, case.k), case.a_dtype).view(_np_dtype(case.a_dtype))
    bt = random_bits(rng, (case.n, case.k), case.b_dtype).view(_np_dtype(case.b_dtype))
    d = np.zeros((64, case.n), np.float32)
    wgmma_fp8[(1, 1, 1), 128](case, a, bt, d)
    want = reference(a.astype(np.float32), bt.astype(np.float32), case.k)
    np.testing.assert_allclose(d, want, rtol=1e-6, atol=1e-30)
    return d


@pytest.mark.parametrize("case", [
    Fp8Case(), Fp8Case(n=8), Fp8Case(n=256), Fp8Case(n=24, k=32, swizzle=0),
    Fp8Case(n=16, k=64, swizzle=0), Fp8Case(n=64, k=64, swizzle=64),
    Fp8Case(n=16, k=32, swizzle=32), Fp8Case(a_dtype=ws.Float8E5M2, b_dtype=ws.Float8E5M2),
    Fp8Case(n=32, k=64, a_dtype=ws.Float8E4M3FN, b_dtype=ws.Float8E5M2, swizzle=64),
    Fp8Case(n=32, k=64, a_dtype=ws.Float8E5M2, b_dtype=ws.Float8E4M3FN, swizzle=64),
], ids=repr)
def test_fp8_wgmma_matches_numpy(case):
    d = run_case(case)
    assert np.count_nonzero(d) > d.size // 2          # the products are not all zero


def test_fp8_k_steps_read_distinct_slices():
    """A wrong K-step (k16 instead of k32 for 1-byte elements) would sum one slice twice."""
    case = Fp8Case(n=8, k=64, swizzle=64)
    a = np.zeros((64, 64), np.float32)
    a[:, 32:] = 1.0
    bt = np.ones((8, 64), np.float32)
    d = np.zeros((64, 8), np.float32)
    e4m3 = _np_dtype(ws.Float8E4M3FN)
    wgmma_fp8[(1, 1, 1), 128](case, a.astype(e4m3), bt.astype(e4m3), d)
    assert (d == 32.0).all()


@ws.kernel
def mn_major_fp8(tile_dtype: ws.Static[object]):
    st = ws.smem.allocate(ws.smem.make_storage(
        "MnTile", a=TileLayout(32, 128, tile_dtype, 128).spec))
    ws.wgmma.tile_descriptor(st.a, major="MN", swizzle=128)


def test_fp8_tile_must_be_k_major():
    with pytest.raises(OperandError) as e:
        ws.compile(mn_major_fp8, ws.Static(ws.Float8E4M3FN), block=(128, 1, 1), target="sm_90a")
    msg = str(e.value)
    assert "K-major" in msg and "Float8E4M3FN" in msg and "test_wgmma_fp8.py" in msg


@ws.kernel
def mixed_fp8_bf16():
    st = ws.smem.allocate(ws.smem.make_storage(
        "Mixed", a=TileLayout(64, 128, ws.Float8E4M3FN, 128).spec,
        b=TileLayout(64, 64, ws.BFloat16, 128).spec))
    a = ws.wgmma.tile_descriptor(st.a, major="K", swizzle=128)
    b = ws.wgmma.tile_descriptor(st.b, major="K", swizzle=128)
    acc = ws.wgmma.fence(ws.wgmma.zeros(64))
    acc = ws.wgmma.mma(a, b, acc)
    ws.wgmma.commit_group()
    ws.wgmma.wait_group(0, acc)


def test_fp8_with_bf16_is_an_error():
    with pytest.raises(OperandError) as e:
        ws.compile(mixed_fp8_bf16, block=(128, 1, 1), target="sm_90a")
    msg = str(e.value)
    assert "Float8E4M3FN" in msg and "BFloat16" in msg and "test_wgmma_fp8.py" in msg


def test_fp8_wgmma_ptx_and_cubin():
    """The PTX names the k32 fp8 form without transpose immediates, and ptxas takes it."""
    case = Fp8Case(n=64, k=64, a_dtype=ws.Float8E4M3FN, b_dtype=ws.Float8E5M2, swizzle=64)
    T = ws.Tensor
    c = ws.compile(wgmma_fp8, ws.Static(case), T[ws.Float8E4M3FN, 2], T[ws.Float8E5M2, 2],
                   T[ws.Float32, 2], block=(128, 1, 1), target="sm_90a")
    lines = [ln for ln in c.ptx.splitlines() if "wgmma.mma_async" in ln]
    assert len(lines) == 2
    assert all("m64n64k32.f32.e4m3.e5m2" in ln for ln in lines)
    assert all(ln.rstrip().endswith("%ws_p, 1, 1;") for ln in lines)
    if c.cubin is not None:
        assert len(c.cubin) > 0
