"""The wgmma + TMA FlashAttention kernel (warpstage/ops/attention_wgmma.py) on the H200: the
simulator tests' cases (tests/examples/test_flash_attention_wgmma_sim.py, same kernels, same
policies) and larger shapes against torch's scaled_dot_product_attention on float64 copies; the
default dispatch (mma='auto' picks wgmma for TMA-compatible CUDA tensors on sm_90), strided
(B, S, H, D) views and the fallback for a misaligned view."""

import pytest

torch = pytest.importorskip("torch")

from warpstage.ops import attention, attention_plan  # noqa: E402
from warpstage.ops.attention import flash_attention  # noqa: E402

from test_flash_attention_wgmma_sim import CASES, ids, make_inputs, run_case  # noqa: E402

pytestmark = [pytest.mark.gpu, pytest.mark.filterwarnings("ignore::warpstage.RecompileWarning")]
F = torch.nn.functional
TOL = {torch.float16: 3e-3, torch.bfloat16: 1e-2}       # on ||out - ref|| / ||ref||
TOL.update({str(t).split(".")[-1]: tol for t, tol in TOL.items()})   # CASES name dtypes


def policy_id(fields) -> str:
    """A test id naming the policy's fields (``-k rescale_threshold`` selects by field)."""
    return ",".join(f"{k}={v}" for k, v in fields.items())


def relative_error(out, q, k, v, causal, scale=None):
    ref = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), is_causal=causal,
                                         scale=scale)
    assert torch.isfinite(out).all()
    return ((out.double() - ref).norm() / ref.norm()).item()


@pytest.mark.parametrize("case", CASES, ids=ids)
def test_simulator_cases(case):
    q, k, v = make_inputs(case, device="cuda")
    out = run_case(case, q, k, v)
    torch.cuda.synchronize()
    assert relative_error(out, q, k, v, case[5], case[7]) < TOL[case[6]]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("seq", [1, 100, 128, 1000, 1024])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("head_dim", [64, 128, 192, 256])
def test_matches_sdpa(head_dim, causal, seq, dtype):
    g = torch.Generator(device="cuda").manual_seed(seq)
    q, k, v = (torch.randn(2, 3, seq, head_dim, device="cuda", generator=g).to(dtype)
               for _ in range(3))
    out = flash_attention(q, k, v, causal=causal, mma="wgmma")
    torch.cuda.synchronize()
    assert out.shape == q.shape and out.dtype == dtype and out.is_contiguous()
    assert relative_error(out, q, k, v, causal) < TOL[dtype]


@pytest.mark.parametrize("policy", [dict(overlap=False), dict(tile_n=64, num_stages=4),
                                    dict(tile_n=176, num_stages=2),
                                    dict(num_stages=1, overlap=False),
                                    dict(fma_select=True), dict(overlap_tiles=True),
                                    dict(overlap_tiles=True, fma_select=True),
                                    dict(packed_p=True, rescale_at_wait=True),
                                    dict(overlap_tiles=True, fma_select=True, packed_p=True,
                                         rescale_at_wait=True),
                                    dict(fma_select=True, rescale_threshold=8.0),
                                    dict(overlap_tiles=True, fma_select=True, packed_p=True,
                                         rescale_threshold=8.0),
                                    dict(overlap_tiles=True, fma_select=True, packed_p=True,
                                         rescale_threshold=8.0, shared_boundary=True)],
                         ids=policy_id)
@pytest.mark.parametrize("head_dim", [64, 96, 128])
def test_other_policies_long_sequences(head_dim, policy):
    case = (2, 2, 1500, 1500, head_dim, True, "bfloat16", None, policy)
    q, k, v = make_inputs(case, device="cuda")
    out = run_case(case, q, k, v)
    torch.cuda.synchronize()
    assert relative_error(out, q, k, v, True) < TOL[torch.bfloat16]


@pytest.mark.parametrize("policy", [dict(fma_select=True), dict(fma_select=True,
                                                                  overlap_tiles=True),
                                    dict(fma_select=True, rescale_threshold=8.0)],
                         ids=policy_id)
def test_fma_select_large_magnitude_no_nan(policy):
    """|q . k| ~ 1e11 on the GPU (ex2.approx.ftz, the real FFMA): no NaN, SDPA's answer."""
    case = (1, 2, 700, 700, 64, True, "bfloat16", None, policy)
    q, k, v = make_inputs(case, device="cuda", seed=5)
    q, k = (x * 4e4 for x in (q, k))
    out = run_case(case, q, k, v)
    torch.cuda.synchronize()
    assert torch.isfinite(out).all()
    want = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(),
                                                            is_causal=True)
    assert (out.float() - want).abs().max().item() < 0.05


def test_auto_dispatch_strided_views_and_fallback(monkeypatch):
    base = [torch.randn(2, 300, 4, 128, device="cuda").to(torch.bfloat16) for _ in range(3)]
    q, k, v = (x.transpose(1, 2) for x in base)          # (B, H, S, D), strides (S*H*D, D, H*D, 1)
    monkeypatch.setattr(attention_plan, "WGMMA_MIN_WORK", 2 * 4 * 300 * 300 * 128)
    used = []
    real_wgmma, real_sync = attention.launch_wgmma, attention.launch
    monkeypatch.setattr(attention, "launch_wgmma",
                        lambda *a: (used.append("wgmma"), real_wgmma(*a)))
    monkeypatch.setattr(attention, "launch", lambda *a: (used.append("mma.sync"), real_sync(*a)))
    out = flash_attention(q, k, v, causal=True)
    small = flash_attention(q[:, :1, :100], k[:, :1, :100], v[:, :1, :100])   # below the work bar
    flat = torch.randn(1 + 2 * 333 * 64, device="cuda").to(torch.bfloat16)
    kk = flat[1:].view(1, 2, 333, 64)                     # base 2 bytes past 16-byte alignment
    qq = torch.randn(1, 2, 333, 64, device="cuda").to(torch.bfloat16)
    out2 = flash_attention(qq, kk, kk)
    torch.cuda.synchronize()
    assert used == ["wgmma", "mma.sync", "mma.sync"]
    assert relative_error(out, q, k, v, True) < TOL[torch.bfloat16]
    assert relative_error(small, q[:, :1, :100], k[:, :1, :100], v[:, :1, :100], False) < \
        TOL[torch.bfloat16]
    assert relative_error(out2, qq, kk, kk, False) < TOL[torch.bfloat16]
