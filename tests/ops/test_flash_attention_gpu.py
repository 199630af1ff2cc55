"""The warp-specialized FlashAttention kernel on a real GPU against torch's
scaled_dot_product_attention on float64 copies of the inputs: D = 64 and 128, causal and not,
sequence lengths on and off the tiles, fp16 and bf16, strided (B, S, H, D) views, negative and
other scales, other policies (stages, one consumer warpgroup, tile sizes, ld/st copies)."""
import pytest

torch = pytest.importorskip("torch")

import warpstage as ws  # noqa: E402
from warpstage.ops import FlashAttention, flash_attention, flash_attention_kernel  # noqa: E402

pytestmark = [pytest.mark.gpu, pytest.mark.filterwarnings("ignore::warpstage.RecompileWarning")]
F = torch.nn.functional
TOL = {torch.float16: 3e-3, torch.bfloat16: 1e-2}       # on ||out - ref|| / ||ref||


@pytest.fixture(autouse=True)
def cuda_target():
    ws.set_target("cuda")
    yield
    ws.set_target(None)


def qkv(batch, heads, seq, head_dim, dtype, seq_k=None, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    shape_k = (batch, heads, seq_k or seq, head_dim)
    return (torch.randn(batch, heads, seq, head_dim, device="cuda", generator=g).to(dtype),
            torch.randn(shape_k, device="cuda", generator=g).to(dtype),
            torch.randn(shape_k, device="cuda", generator=g).to(dtype))


def relative_error(out, q, k, v, causal, scale=None):
    ref = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), is_causal=causal,
                                         scale=scale)
    assert torch.isfinite(out).all()
    return ((out.double() - ref).norm() / ref.norm()).item()


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("seq", [1, 100, 128, 1000, 1024])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("head_dim", [64, 128])
def test_matches_sdpa(head_dim, causal, seq, dtype):
    q, k, v = qkv(2, 3, seq, head_dim, dtype)
    out = flash_attention(q, k, v, causal=causal)
    torch.cuda.synchronize()
    assert out.shape == q.shape and out.dtype == dtype and out.is_contiguous()
    assert relative_error(out, q, k, v, causal) < TOL[dtype]


@pytest.mark.parametrize("head_dim", [64, 128])
def test_non_contiguous_bshd_view(head_dim):
    base = [torch.randn(2, 300, 4, head_dim, device="cuda").to(torch.bfloat16) for _ in range(3)]
    q, k, v = (x.transpose(1, 2) for x in base)          # (B, H, S, D), strides (S*H*D, D, H*D, 1)
    assert not q.is_contiguous()
    out = flash_attention(q, k, v, causal=True)
    torch.cuda.synchronize()
    assert relative_error(out, q, k, v, True) < TOL[torch.bfloat16]


@pytest.mark.parametrize("scale", [0.2, -0.3])
@pytest.mark.parametrize("causal", [False, True])
def test_fewer_queries_than_keys_and_scale(causal, scale):
    q, k, v = qkv(1, 2, 100, 64, torch.float16, seq_k=1000)
    out = flash_attention(q, k, v, causal=causal, scale=scale)
    torch.cuda.synchronize()
    assert relative_error(out, q, k, v, causal, scale=scale) < TOL[torch.float16]


def test_misaligned_view_uses_ld_st_copies():
    flat = torch.randn(1 + 2 * 333 * 64, device="cuda").to(torch.bfloat16)
    k = flat[1:].view(1, 2, 333, 64)                     # base 2 bytes past 16-byte alignment
    q = torch.randn(1, 2, 333, 64, device="cuda").to(torch.bfloat16)
    out = flash_attention(q, k, k)
    torch.cuda.synchronize()
    assert relative_error(out, q, k, k, False) < TOL[torch.bfloat16]


@pytest.mark.parametrize("policy", [
    dict(head_dim=64, num_stages=1), dict(head_dim=64, num_stages=4, tile_n=32),
    dict(head_dim=64, tile_m=64, tile_n=16), dict(head_dim=128, tile_m=64, num_stages=3),
    dict(head_dim=128, tile_n=64, num_stages=2), dict(head_dim=64, tile_n=256, num_stages=2),
    dict(head_dim=128, copy="ld/st"), dict(head_dim=64, producer_regs=24, mma_regs=240),
])
def test_other_policies(policy):
    fa = FlashAttention(dtype=ws.BFloat16, causal=True, **policy)
    q, k, v = qkv(2, 2, 777, fa.head_dim, torch.bfloat16)
    out = torch.full_like(q, float("nan"))
    flash_attention_kernel[fa.grid(2, 2, 777), fa.threads](fa, q, k, v, out)
    torch.cuda.synchronize()
    assert relative_error(out, q, k, v, True) < TOL[torch.bfloat16]


def test_repeated_calls_reuse_the_kernel():
    q, k, v = qkv(2, 8, 512, 64, torch.bfloat16)
    first = flash_attention(q, k, v, causal=True)
    before = flash_attention_kernel.trace_count
    for _ in range(3):
        again = flash_attention(q, k, v, causal=True)
    torch.cuda.synchronize()
    assert flash_attention_kernel.trace_count == before
    assert torch.equal(first, again)                     # deterministic
