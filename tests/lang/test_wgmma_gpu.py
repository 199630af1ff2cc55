"""ws.wgmma on the H200: the simulator tests' own kernels (tests/lang/test_wgmma.py) and the GEMM
example, compared with numpy/torch references. Exact equality where the inputs make every
product and sum exact in f32 (small integers / 4); a tolerance for random normal inputs."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

import warpstage as ws  # noqa: E402
from example_loader import load_example  # noqa: E402

# The simulator tests' own kernels (this folder's: pytest puts it on sys.path).
from test_wgmma import (CASES, Case, bf16_bits, expected, host_arrays, make_inputs,  # noqa: E402
                        two_warpgroup_inputs, two_warpgroups, wgmma_tile)

pytestmark = [pytest.mark.gpu, pytest.mark.filterwarnings("ignore::warpstage.RecompileWarning")]
gemm = load_example("wgmma_gemm")


def to_cuda(x: np.ndarray, dtype):
    if dtype is ws.BFloat16:                    # uint16 bf16 bit patterns
        return torch.from_numpy(x.view(np.int16)).view(torch.bfloat16).cuda()
    return torch.from_numpy(x).cuda()


def run_case_gpu(case: Case, seed=0, integers=True, accumulate=1):
    a, b, c = make_inputs(case, seed, integers)
    a_h, b_h = host_arrays(case, a, b)
    d = torch.full((64, case.n), float("nan"), device="cuda")
    wgmma_tile[1, 128](case, to_cuda(a_h, case.dtype), to_cuda(b_h, case.dtype),
                       torch.from_numpy(c).cuda(), d, accumulate)
    torch.cuda.synchronize()
    return d.cpu().numpy(), expected(case, a, b, c, accumulate)


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_wgmma_tile(case):
    got, want = run_case_gpu(case)
    bad = np.argwhere(got != want.astype(np.float32))
    assert bad.size == 0, f"{len(bad)} wrong elements, first (row, col): {bad[:8].tolist()}"


@pytest.mark.parametrize("accumulate", [0, 1])
def test_wgmma_dynamic_scale_d(accumulate):
    case = Case(n=16, k=32, scale_d="dynamic", swizzle_a=64, swizzle_b=64)
    got, want = run_case_gpu(case, accumulate=accumulate)
    assert np.array_equal(got, want.astype(np.float32))


@pytest.mark.parametrize("dtype", [ws.BFloat16, ws.Float16])
def test_wgmma_random_inputs(dtype):
    case = Case(n=128, k=64, dtype=dtype)
    got, want = run_case_gpu(case, seed=5, integers=False)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_two_warpgroups_share_a_tile():
    a, b, want = two_warpgroup_inputs()
    d = torch.full((128, 64), float("nan"), device="cuda")
    two_warpgroups[1, 256](to_cuda(bf16_bits(a), ws.BFloat16), to_cuda(bf16_bits(b), ws.BFloat16),
                           d)
    assert np.array_equal(d.cpu().numpy(), want)


@pytest.mark.parametrize("m, n, k, bn", [(128, 256, 192, 128), (64, 64, 64, 64),
                                         (256, 512, 1024, 256)])
def test_gemm_example(m, n, k, bn):
    cfg = gemm.Gemm(bn=bn)
    g = torch.Generator().manual_seed(m + n + k)
    a = torch.randn(m, k, generator=g).to(torch.bfloat16)
    b = torch.randn(k, n, generator=g).to(torch.bfloat16)
    c = torch.full((m, n), float("nan"), device="cuda")
    gemm.launch(cfg, a.cuda(), b.cuda(), c)
    want = a.double() @ b.double()
    torch.testing.assert_close(c.cpu().double(), want, rtol=1e-4, atol=1e-3 * k ** 0.5)
