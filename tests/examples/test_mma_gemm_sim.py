"""examples/mma_gemm.py in the simulator at small sizes: cp.async double buffering, ldmatrix
(.x4 and .x4.trans) and mma.sync m16n8k16 over a K loop, against numpy; its shape checks."""
import numpy as np
import pytest

from dtypes_helper import cast
from example_loader import load_example

pytestmark = pytest.mark.usefixtures("sim_target")
gemm = load_example("mma_gemm", "sim_ex_mma_gemm")


@pytest.mark.parametrize("m,n,k", [(64, 64, 32), (128, 64, 96), (64, 192, 64)])
def test_f16_gemm_matches_numpy(m, n, k):
    rng = np.random.default_rng(m + n + k)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c = np.full((m, n), np.nan, np.float32)
    gemm.launch(a, b, c)
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c, want, rtol=1e-6, atol=1e-5)


@pytest.mark.parametrize("cfg,k", [(gemm.GemmConfig(stages=3), 96), (gemm.GemmConfig(stages=4), 32),
                                   (gemm.LARGE, 64)])
def test_deeper_pipelines_and_the_large_tiling(cfg, k):
    rng = np.random.default_rng(k)
    m, n = cfg.bm, 2 * cfg.bn
    a = rng.integers(-3, 4, (m, k)).astype(np.float16)
    b = rng.integers(-3, 4, (k, n)).astype(np.float16)
    c = np.full((m, n), np.nan, np.float32)
    gemm.launch(a, b, c, cfg)
    np.testing.assert_array_equal(c, (a.astype(np.int64) @ b.astype(np.int64)).astype(np.float32))


def test_bf16_gemm_of_small_integers_is_exact():
    rng = np.random.default_rng(1)
    a = rng.integers(-3, 4, (64, 128))
    b = rng.integers(-3, 4, (128, 128))
    c = np.full((64, 128), np.nan, np.float32)
    gemm.launch(cast(a, "bfloat16"), cast(b, "bfloat16"), c)
    np.testing.assert_array_equal(c, (a @ b).astype(np.float32))


def test_bf16_gemm_on_cpu_torch_tensors():
    """torch interop: CPU torch bf16 tensors in the simulator."""
    torch = pytest.importorskip("torch", reason="torch interop: torch is not installed")
    rng = np.random.default_rng(2)
    a = rng.integers(-3, 4, (64, 64))
    b = rng.integers(-3, 4, (64, 64))
    c = torch.zeros(64, 64)
    gemm.launch(torch.tensor(a).to(torch.bfloat16), torch.tensor(b).to(torch.bfloat16), c)
    np.testing.assert_array_equal(c.numpy(), (a @ b).astype(np.float32))


def test_shapes_off_the_tile_are_refused():
    a = np.zeros((64, 40), np.float16)
    with pytest.raises(ValueError, match="K of 32; got M=64, N=64, K=40"):
        gemm.launch(a, np.zeros((40, 64), np.float16), np.zeros((64, 64), np.float32))
