"""``narrow_last`` (warpstage/ops/attention_wgmma_consumer.py): a consumer warpgroup whose
last K/V tile of an output tile holds every key it may see in the tile's first half issues
that tile's S = Q K^T with wgmma N = tile_n / 2 and its last P V over those keys' k-steps. In
the CPU simulator: which wgmmas are narrow (counted per N and per A source), the output
against the reference with bottom-right alignment (the half decided at run time per
warpgroup), and that nothing narrows where a warpgroup sees its whole last tile. The outputs
of more shapes: tests/examples/test_flash_attention_wgmma_sim.py's CASES."""
import importlib

import numpy as np
import pytest

import warpstage as ws
from dtypes_helper import empty_like, randn, to_float64
from warpstage.ops import attention
from warpstage.ops.attention_wgmma import FlashAttentionWgmma

pytestmark = pytest.mark.filterwarnings("ignore::warpstage.RecompileWarning")


def run(monkeypatch, fields, seq_q, seq_k, causal, align="top_left", heads=1):
    """(output, reference, [(n, A from registers)] per warpgroup-wide wgmma) of one launch."""
    ops = importlib.import_module("warpstage.sim.ops_wgmma")
    calls = []
    real = ops._compute
    fa = FlashAttentionWgmma(head_dim=64, dtype=ws.BFloat16, causal=causal,
                             causal_align=align, **fields)
    q = randn((1, heads, seq_q, 64), "bfloat16", 1)
    k, v = (randn((1, heads, seq_k, 64), "bfloat16", i) for i in (2, 3))
    o = empty_like(q)
    with monkeypatch.context() as m:                 # counted for this launch only
        m.setattr(ops, "_compute", lambda op, *a: (
            calls.append((op.attrs["n"], bool(op.attrs["a_regs"]))), real(op, *a))[1])
        attention.launch_wgmma(fa, q, k, v, o)
    want = attention.reference(*(to_float64(x) for x in (q, k, v)), causal=causal,
                               causal_align=align)
    return to_float64(o), want, calls


def kinds(calls):
    """{(n, a_regs): count} of wgmma k-steps (S: A from smem, P V: A from registers)."""
    out = {}
    for c in calls:
        out[c] = out.get(c, 0) + 1
    return out


@pytest.mark.parametrize("persistent", [True, False])
def test_causal_diagonal_narrows_warpgroup_0_only(sim_target, monkeypatch, persistent):
    # S = 256, 128-row tiles, 128-key tiles, top-left: row block m's last K/V tile is the
    # diagonal one; warpgroup 0 (rows 128 m .. + 63) sees its first 64 keys, warpgroup 1 all
    # 128. So per row block one S of D/16 = 4 k-steps at N = 64 (not 128) and one last P V
    # of 4 k-steps (not 8) over 64-row halves; everything else as without the field
    got, want, calls = run(monkeypatch, dict(narrow_last=True, persistent=persistent), 256, 256,
                           True)
    base = kinds(run(monkeypatch, dict(persistent=persistent), 256, 256, True)[2])
    assert np.abs(got - want).max() < 2e-2
    k = kinds(calls)
    blocks = 2
    assert k.get((64, False), 0) == 4 * blocks                      # narrow S k-steps
    assert k[(128, False)] == base[(128, False)] - 4 * blocks
    assert k[(64, True)] == base[(64, True)] - 4 * blocks           # P V: N = D = 64
    assert sum(k.values()) < sum(base.values())


def test_nothing_narrows_when_every_warpgroup_sees_its_last_tile(sim_target, monkeypatch):
    # non-causal S_k = 200: the last K/V tile holds keys 128..199, 72 > 64 of them
    got, want, calls = run(monkeypatch, dict(narrow_last=True), 130, 200, False)
    base = run(monkeypatch, {}, 130, 200, False)[2]
    assert np.abs(got - want).max() < 2e-2
    assert kinds(calls) == kinds(base) and (64, False) not in kinds(calls)


def test_short_key_tail_narrows_every_warpgroup(sim_target, monkeypatch):
    # non-causal S_k = 170: the last tile has 42 keys, in its first half for both warpgroups
    got, want, calls = run(monkeypatch, dict(narrow_last=True), 128, 170, False)
    assert np.abs(got - want).max() < 2e-2
    assert kinds(calls)[(64, False)] == 2 * 4                        # both warpgroups' S


def test_bottom_right_decides_per_warpgroup_at_run_time(sim_target, monkeypatch):
    # S_q = 128, S_k = 200, bottom-right: offset 72, warpgroup 0 sees keys < 64 + 72 = 136
    # (tile 1 holds 128..199: 8 keys, first half: narrow), warpgroup 1 keys < 200 (72 keys of
    # tile 1: wide). A top-left reading of the same shapes would narrow both
    got, want, calls = run(monkeypatch, dict(narrow_last=True), 128, 200, True, "bottom_right",
                           heads=2)
    assert np.abs(got - want).max() < 2e-2
    assert kinds(calls)[(64, False)] == 2 * 4                        # 2 heads x warpgroup 0


@pytest.mark.gpu
@pytest.mark.parametrize("fields", [dict(persistent=False), dict(dynamic_tiles=True)],
                         ids=["one_cta", "dynamic_tiles"])
@pytest.mark.parametrize("align", ["top_left", "bottom_right"])
def test_device_causal_diagonals(fields, align):
    # 8 row blocks per batch-head: warpgroup 0 narrows on every diagonal (top-left); with
    # S_q = 1000 < S_k = 1024 bottom-right the diagonal is shifted by 24 keys and the half is
    # decided per warpgroup at run time
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a GPU")
    fa = FlashAttentionWgmma(head_dim=128, dtype=ws.BFloat16, causal=True, causal_align=align,
                             fma_select=True, packed_p=True, rescale_threshold=8.0,
                             narrow_last=True, **fields)
    g = torch.Generator().manual_seed(5)
    sq = 1024 if align == "top_left" else 1000
    q = torch.randn(2, 16, sq, 128, generator=g).to(torch.bfloat16).cuda()
    k, v = (torch.randn(2, 16, 1024, 128, generator=g).to(torch.bfloat16).cuda()
            for _ in range(2))
    o = torch.full_like(q, float("nan"))
    attention.launch_wgmma(fa, q, k, v, o)
    torch.cuda.synchronize()
    want = attention.reference(*(x.double().cpu().numpy() for x in (q, k, v)), causal=True,
                               causal_align=align)
    got = o.double().cpu().numpy()
    assert np.isfinite(got).all()
    assert np.linalg.norm(got - want) / np.linalg.norm(want) < 1e-2
