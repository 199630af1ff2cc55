"""ws.mma on a real GPU: the simulator tests' kernels (tests/lang/test_mma.py) with CUDA tensors,
against numpy references computed from the same inputs, and the mma.sync GEMM example against
torch.matmul."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

from example_loader import load_example  # noqa: E402

# The kernels are the simulator tests' own (this folder's: pytest puts it on sys.path): the
# same code runs on both targets.
from test_mma import (COMBOS, TORCH, gemm_fragments, gemm_ldmatrix, ldmatrix_expected,  # noqa: E402
                      ldmatrix_raw, mma_stmatrix, operands, reference)

pytestmark = [pytest.mark.gpu, pytest.mark.filterwarnings("ignore::warpstage.RecompileWarning")]


def run_fragments(shape, ab, acc, k_tiles, small, seed=0):
    (a, b, c), (an, bn, cn) = operands(shape, ab, acc, k_tiles, seed, "cuda", small)
    d = torch.zeros(16, 8, dtype=TORCH[acc], device="cuda")
    gemm_fragments[1, 32](a, b, c, d, shape, k_tiles)
    torch.cuda.synchronize()
    got = d.cpu().to(torch.int64 if acc == "s32" else torch.float64).numpy()
    return got, reference(shape, ab, acc, an, bn, cn)


@pytest.mark.parametrize("shape,ab,acc", COMBOS)
def test_each_shape_and_type_exact_on_small_integers(shape, ab, acc):
    got, want = run_fragments(shape, ab, acc, 3, small=True)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("shape,ab,acc", [c for c in COMBOS if c[2] == "f32"])
def test_random_inputs_within_f32_accumulation_error(shape, ab, acc):
    got, want = run_fragments(shape, ab, acc, 4, small=False, seed=5)
    assert np.abs(got - want).max() <= 1e-5 * np.abs(want).max()


def test_tf32_reads_the_top_19_bits_of_unrounded_f32():
    """The simulator drops the low 13 mantissa bits of tf32 operands; the GPU must agree."""
    rng = np.random.default_rng(7)
    a = rng.standard_normal((16, 8)).astype(np.float32)
    b = rng.standard_normal((8, 8)).astype(np.float32)
    d = torch.zeros(16, 8, device="cuda")
    ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
    gemm_fragments[1, 32](ta, tb, torch.zeros(16, 8, device="cuda"), d, "m16n8k8", 1)
    got = d.cpu().double().numpy()
    trunc = [(x.view(np.uint32) & 0xFFFFE000).view(np.float32).astype(np.float64) for x in (a, b)]
    rnd = [x.astype(np.float64) for x in (a, b)]
    err_trunc = np.abs(got - trunc[0] @ trunc[1]).max()
    err_exact = np.abs(got - rnd[0] @ rnd[1]).max()
    print(f"tf32: max |gpu - truncated model| {err_trunc:.3g}, max |gpu - f32 inputs| {err_exact:.3g}")
    assert err_trunc <= 1e-5 * np.abs(got).max()


@pytest.mark.parametrize("a_km", [False, True])
@pytest.mark.parametrize("b_nk", [False, True])
def test_ldmatrix_gemm_tile(a_km, b_nk):
    (a, b, _), (an, bn, _) = operands("m16n8k16", "bf16", "f32", 3, 3, "cuda")
    d = torch.zeros(16, 8, device="cuda")
    gemm_ldmatrix[1, 32](a.T.contiguous() if a_km else a, b.T.contiguous() if b_nk else b, d,
                         48, a_km, b_nk)
    np.testing.assert_array_equal(d.cpu().double().numpy(), an @ bn)


@pytest.mark.parametrize("trans", [False, True])
def test_stmatrix(trans):
    (a, b, _), (an, bn, _) = operands("m16n8k16", "bf16", "f32", 1, 4, "cuda")
    out = torch.zeros((8, 16) if trans else (16, 8), dtype=torch.bfloat16, device="cuda")
    mma_stmatrix[1, 32](a, b, out, trans)
    want = an @ bn
    np.testing.assert_array_equal(out.cpu().double().numpy(), want.T if trans else want)


@pytest.mark.parametrize("num", [1, 2, 4])
@pytest.mark.parametrize("trans", [False, True])
def test_ldmatrix_layout(num, trans):
    src = np.arange(64 * num, dtype=np.float16).reshape(8 * num, 8)
    out = torch.zeros(32, 2 * num, dtype=torch.float16, device="cuda")
    ldmatrix_raw[1, 32](torch.from_numpy(src).cuda(), out, num, trans)
    np.testing.assert_array_equal(out.cpu().numpy(), ldmatrix_expected(src, num, trans))


GEMM = load_example("mma_gemm")


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("cfg,m,n,k", [(GEMM.DEFAULT, 64, 64, 32), (GEMM.DEFAULT, 256, 192, 320),
                                       (GEMM.DEFAULT, 1024, 512, 768),
                                       (GEMM.GemmConfig(stages=4), 128, 128, 64),
                                       (GEMM.LARGE, 256, 384, 96), (GEMM.LARGE, 1024, 1024, 1024)])
def test_gemm_example_matches_torch(cfg, m, n, k, dtype):
    g = torch.Generator(device="cuda").manual_seed(m + n + k)
    a = torch.randn(m, k, device="cuda", generator=g).to(dtype)
    b = torch.randn(k, n, device="cuda", generator=g).to(dtype)
    c = torch.full((m, n), float("nan"), device="cuda")
    GEMM.launch(a, b, c, cfg)
    ref = a.double() @ b.double()
    err = ((c.double() - ref).abs().max() / ref.abs().max()).item()
    assert err < 1e-5, err
