"""``ws.ops.flash_attention`` on the H200 over what users run: S from 1 to 16384, D 64 and 128,
causal with both alignments, grouped K/V heads (8:1, 4:1), fp16 and bf16, non-contiguous views,
large-magnitude inputs (no NaN), and the log-sum-exp (``return_lse``), against a float64
reference computed on the GPU (fresh random inputs per case, so an unwritten or misplaced row
is a mismatch)."""
import math

import pytest

torch = pytest.importorskip("torch")

from warpstage.ops.attention import flash_attention  # noqa: E402

pytestmark = [pytest.mark.gpu, pytest.mark.filterwarnings("ignore::warpstage.RecompileWarning")]
TOL = {torch.float16: 3e-3, torch.bfloat16: 1e-2}       # on ||out - ref|| / ||ref||


def reference(q, k, v, causal, align="top_left"):
    """(out, lse) in float64: q (B, Hq, Sq, D), k, v (B, Hkv, Sk, D)."""
    group = q.shape[1] // k.shape[1]
    q, k, v = (x.double() for x in (q, k, v))
    k, v = (x.repeat_interleave(group, dim=1) for x in (k, v))
    s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        sq, sk = q.shape[2], k.shape[2]
        offset = sk - sq if align == "bottom_right" else 0
        i = torch.arange(sq, device=q.device)[:, None]
        j = torch.arange(sk, device=q.device)[None, :]
        s = s.masked_fill(j > i + offset, -math.inf)
    lse = torch.logsumexp(s, dim=-1)
    p = torch.exp(s - torch.where(torch.isfinite(lse), lse, 0.0)[..., None])
    return p @ v, lse


def check(out, lse, q, k, v, causal, align="top_left"):
    torch.cuda.synchronize()
    want, want_lse = reference(q, k, v, causal, align)
    assert torch.isfinite(out).all()
    err = ((out.double() - want).norm() / want.norm().clamp_min(1e-30)).item()
    assert err < TOL[q.dtype], err
    if lse is not None:
        finite = torch.isfinite(want_lse)
        assert (torch.isneginf(lse) == ~finite).all()
        assert (lse.double()[finite] - want_lse[finite]).abs().max().item() < 1e-3


@pytest.mark.parametrize("seq", [1, 17, 128, 1000, 4096,
                                 *(pytest.param(s, marks=pytest.mark.big_gpu_memory)
                                   for s in (8192, 16384))])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("head_dim", [64, 96, 128, 192, 256])
def test_sequence_lengths(seq, causal, head_dim):
    g = torch.Generator(device="cuda").manual_seed(seq + head_dim)
    heads = 2 if seq <= 4096 else 1
    q, k, v = (torch.randn(1, heads, seq, head_dim, device="cuda", generator=g)
               .to(torch.bfloat16) for _ in range(3))
    out, lse = flash_attention(q, k, v, causal=causal, return_lse=True)
    check(out, lse, q, k, v, causal)


@pytest.mark.parametrize("sq, sk", [(1, 1000), (17, 300), (300, 17), (1000, 1000), (128, 4096)])
@pytest.mark.parametrize("align", ["top_left", "bottom_right"])
@pytest.mark.parametrize("head_dim", [64, 128, 256])
def test_causal_alignment(sq, sk, align, head_dim):
    g = torch.Generator(device="cuda").manual_seed(sq * 7 + sk)
    q = torch.randn(2, 2, sq, head_dim, device="cuda", generator=g).to(torch.float16)
    k, v = (torch.randn(2, 2, sk, head_dim, device="cuda", generator=g).to(torch.float16)
            for _ in range(2))
    out, lse = flash_attention(q, k, v, causal=True, causal_align=align, return_lse=True)
    check(out, lse, q, k, v, True, align)


@pytest.mark.parametrize("hq, hkv", [(8, 1), (8, 2), (16, 4)])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("causal", [False, True])
def test_grouped_kv_heads(hq, hkv, dtype, causal):
    g = torch.Generator(device="cuda").manual_seed(hq * hkv)
    q = torch.randn(2, hq, 777, 128, device="cuda", generator=g).to(dtype)
    k, v = (torch.randn(2, hkv, 777, 128, device="cuda", generator=g).to(dtype)
            for _ in range(2))
    out = flash_attention(q, k, v, causal=causal)
    check(out, None, q, k, v, causal)


def test_transposed_bshd_views_gqa_and_a_misaligned_fallback():
    base_q = torch.randn(2, 500, 8, 64, device="cuda").to(torch.bfloat16)
    base_kv = [torch.randn(2, 500, 2, 64, device="cuda").to(torch.bfloat16) for _ in range(2)]
    q = base_q.transpose(1, 2)                             # (B, H, S, D) views of (B, S, H, D)
    k, v = (x.transpose(1, 2) for x in base_kv)
    out, lse = flash_attention(q, k, v, causal=True, return_lse=True)
    check(out, lse, q, k, v, True)
    flat = torch.randn(1 + 2 * 2 * 300 * 64, device="cuda").to(torch.bfloat16)
    kk = flat[1:].view(2, 2, 300, 64)                     # 2 bytes off 16-byte alignment: copied
    qq = torch.randn(2, 4, 300, 64, device="cuda").to(torch.bfloat16)
    out, lse = flash_attention(qq, kk, kk, return_lse=True)
    check(out, lse, qq, kk, kk, False)


@pytest.mark.parametrize("magnitude", [1e3, 1e5])
def test_large_magnitude_inputs_give_no_nan(magnitude):
    g = torch.Generator(device="cuda").manual_seed(5)
    q, k, v = (torch.randn(1, 2, 500, 128, device="cuda", generator=g) for _ in range(3))
    q, k = ((x * magnitude).to(torch.bfloat16) for x in (q, k))
    v = v.to(torch.bfloat16)
    out = flash_attention(q, k, v, causal=True)
    torch.cuda.synchronize()
    assert torch.isfinite(out).all()
    want, _ = reference(q, k, v, True)
    assert (out.double() - want).abs().max().item() < 0.05
