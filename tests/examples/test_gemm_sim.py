"""examples/gemm.py (the warp-specialized persistent TMA GEMM in its plain form) in the CPU
simulator: tails in M, N and K, both tile widths the example's storage takes, several tiles per
persistent CTA."""
import pytest

from example_loader import load_example

pytestmark = pytest.mark.usefixtures("sim_target")
gemm = load_example("gemm", "sim_ex_gemm")


@pytest.mark.parametrize("m, n, k, bn", [(200, 320, 192, 256), (130, 72, 40, 64)])
def test_gemm_example(m, n, k, bn):
    pytest.importorskip("ml_dtypes")
    assert gemm.main(m, n, k, bn=bn) < 1e-2
