"""The wgmma + TMA FlashAttention kernel (warpstage/ops/attention_wgmma.py) in the CPU simulator
against the float64 numpy reference: D = 64, 128, 192 and 256, fp16 and bf16, causal and not,
sequence lengths off the tiles, S_q != S_k, scales, strided (B, S, H, D) views, both consumer loops
(FlashAttention-3's overlapped one and the serial one), other tilings, NaN-filled shared memory
with the race detector, the dispatch rule and the policy's errors; plus the PTX/ptxas facts.
``CASES`` and ``make_inputs`` are shared with tests/examples/test_flash_attention_wgmma_gpu.py (which
asks for torch CUDA tensors); here the inputs are numpy arrays (bf16: ml_dtypes,
tests/dtypes_helper.py), so this runs without torch, except the one torch-interop test."""
import importlib
import re

import numpy as np
import pytest

import warpstage as ws
from dtypes_helper import empty_like, numpy_dtype, randn, to_float64
from warpstage.backend import find_ptxas
from warpstage.ops import attention, attention_plan
from warpstage.ops.attention import flash_attention, reference
from warpstage.ops.attention_wgmma import FlashAttentionWgmma, flash_attention_wgmma_kernel
from warpstage.options import CompileOptions

pytestmark = pytest.mark.filterwarnings("ignore::warpstage.RecompileWarning")
TOL = {"float16": 2e-3, "bfloat16": 1e-2}        # on ||out - ref|| / ||ref||

# (batch, heads, S_q, S_k, D, causal, dtype, scale, policy overrides)
CASES = [
    (1, 1, 64, 64, 64, False, "float16", None, {}),           # one tile of each
    (1, 1, 100, 100, 64, True, "bfloat16", None, {}),         # tails; causal
    (1, 1, 128, 128, 128, False, "bfloat16", None, {}),       # D = 128: two TMA boxes
    (1, 1, 200, 200, 128, True, "float16", None, {}),         # 2 CTAs, causal skipping
    (1, 2, 300, 300, 64, True, "bfloat16", None, {}),         # 3 K/V tiles, 2 stages
    (2, 1, 40, 170, 64, False, "float16", -0.3, {}),          # S_q < S_k, negative scale
    (1, 1, 150, 90, 128, True, "bfloat16", 0.2, {}),          # S_q > S_k, causal
    (1, 1, 130, 130, 64, True, "float16", None, dict(overlap=False)),
    (1, 1, 170, 170, 128, False, "bfloat16", None, dict(overlap=False, num_stages=1)),
    (1, 1, 200, 200, 64, True, "bfloat16", None, dict(tile_n=64, num_stages=3)),
    (1, 1, 1, 1, 64, True, "float16", None, {}),              # a single query and key
    (1, 1, 300, 300, 64, True, "bfloat16", None, dict(consumer_wgs=3, num_stages=3)),
    (1, 1, 200, 260, 64, False, "float16", None, dict(consumer_wgs=3, tile_n=64)),
    (1, 1, 200, 200, 128, True, "bfloat16", None, dict(split_kv=False, pingpong=False)),
    (1, 1, 150, 150, 64, False, "bfloat16", None, dict(pingpong=False, fast_exp2=False)),
    (1, 1, 130, 190, 64, True, "float16", None, dict(overlap=False, consumer_wgs=3)),
    (2, 1, 300, 200, 64, True, "bfloat16", None, dict(persistent=False)),
    (1, 2, 140, 140, 128, False, "float16", None, dict(persistent=False, pingpong=False)),
    (1, 1, 150, 150, 128, True, "float16", None, dict(tma_store=False)),
    (2, 1, 70, 70, 64, False, "bfloat16", None, dict(consumer_wgs=3, tma_store=True)),
    (1, 1, 150, 150, 192, True, "bfloat16", None, {}),        # D = 192: three TMA boxes
    (1, 1, 100, 180, 256, False, "float16", None, {}),        # D = 256: four boxes, 80 keys
    (1, 1, 130, 130, 256, True, "bfloat16", None, dict(persistent=True, tile_n=64)),
    (1, 1, 150, 150, 64, True, "bfloat16", None, dict(consumer_wgs=3, poly_exp2=3)),
    (1, 1, 140, 140, 128, False, "float16", None, dict(poly_exp2=8)),
    (1, 1, 150, 150, 64, True, "bfloat16", None, dict(consumer_wgs=3, fma_scores=True)),
    (1, 2, 130, 170, 128, False, "float16", 0.3, dict(fma_scores=True)),
    (1, 1, 150, 150, 64, True, "bfloat16", None, dict(consumer_wgs=3, fma_select=True)),
    (1, 2, 130, 170, 128, False, "float16", 0.3, dict(fma_select=True)),
    (1, 1, 200, 200, 64, False, "float16", None, dict(fma_select=True, overlap=False)),
    (1, 1, 77, 77, 96, False, "bfloat16", None, dict(tile_n=128)),   # D = 96: 3 boxes, sw64
    (1, 2, 201, 201, 96, True, "float16", None, dict(tile_n=64, num_stages=3)),
    (1, 1, 150, 150, 96, True, "bfloat16", None, dict(consumer_wgs=3, persistent=False)),
    (1, 1, 90, 130, 96, False, "float16", None, dict(split_kv=False, fma_select=True)),
    (1, 1, 70, 90, 96, False, "bfloat16", None, dict(tma_store=False)),  # D = 96 scalar stores
    # D = 96's long-S default: 3 consumer warpgroups, 112-key tiles (an S_k tail of 6 keys)
    (1, 1, 200, 230, 96, False, "bfloat16", None, dict(consumer_wgs=3, tile_n=112,
                                                       fma_select=True)),
    (2, 2, 300, 200, 64, False, "bfloat16", None, dict(overlap_tiles=True)),   # tile overlap
    (1, 3, 200, 333, 128, True, "float16", None, dict(overlap_tiles=True)),
    (3, 2, 400, 64, 64, False, "float16", None, dict(overlap_tiles=True, consumer_wgs=3)),
    (1, 2, 257, 257, 96, True, "bfloat16", None, dict(overlap_tiles=True, fma_select=True)),
    # warpgroups with no row below S_q skip their work; partial row blocks scheduled last
    (2, 2, 200, 150, 64, False, "bfloat16", None, dict(consumer_wgs=3, skip_idle=True)),
    (2, 2, 200, 150, 64, False, "float16", None, dict(consumer_wgs=3, skip_idle=True,
                                                      partial_last=True)),
    (1, 2, 200, 200, 64, True, "bfloat16", None, dict(consumer_wgs=3, num_stages=3,
                                                      skip_idle=True)),
    (1, 1, 50, 170, 128, False, "float16", None, dict(skip_idle=True, overlap=False)),
    (1, 1, 70, 200, 64, True, "bfloat16", None, dict(split_kv=False, skip_idle=True)),
    # causal longest-first over bands of head_group batch-heads (the last band narrower)
    (1, 3, 300, 300, 64, True, "bfloat16", None, dict(persistent=False, head_group=2)),
    (2, 3, 200, 260, 128, True, "float16", None, dict(head_group=4)),
    # only consumer warpgroup 0 waits on the rings before its turn (the others follow it)
    (1, 2, 300, 200, 128, False, "bfloat16", None, dict(lead_waits=True)),
    (1, 2, 300, 300, 64, True, "float16", None, dict(lead_waits=True, consumer_wgs=3,
                                                     skip_idle=True)),
    (2, 2, 300, 200, 64, False, "bfloat16", None, dict(lead_waits=True, overlap_tiles=True)),
    # P V's A fragments as packed bf16x2 / f16x2 registers; O rescaled right after its wait
    (1, 2, 300, 200, 128, False, "bfloat16", None, dict(packed_p=True)),
    (1, 1, 130, 190, 64, True, "float16", None, dict(packed_p=True, overlap=False)),
    (1, 2, 300, 300, 128, True, "float16", None, dict(packed_p=True, rescale_at_wait=True)),
    (2, 2, 300, 200, 64, False, "bfloat16", None, dict(overlap_tiles=True, packed_p=True,
                                                       rescale_at_wait=True)),
    (1, 3, 200, 333, 128, True, "bfloat16", None, dict(overlap_tiles=True, packed_p=True,
                                                       rescale_at_wait=True, fma_select=True)),
    (3, 2, 400, 64, 64, False, "float16", None, dict(overlap_tiles=True, consumer_wgs=3,
                                                     rescale_at_wait=True)),
    # the P V wait before the exponentials (exp_after_wait): plain, at a tile boundary
    # (overlap_tiles), and with the conditional rescale's branch after the wait
    (1, 2, 300, 200, 128, False, "bfloat16", None, dict(exp_after_wait=True, fma_select=True)),
    (2, 2, 300, 200, 64, False, "float16", None, dict(exp_after_wait=True, overlap_tiles=True,
                                                      packed_p=True, rescale_at_wait=True)),
    (1, 2, 300, 300, 128, True, "bfloat16", None, dict(exp_after_wait=True, consumer_wgs=3,
                                                       rescale_threshold=8.0)),
    # O rescaled only when a row's max moved by more than the threshold (a warp vote)
    (1, 2, 300, 200, 128, False, "bfloat16", None, dict(rescale_threshold=8.0, fma_select=True)),
    (2, 2, 300, 200, 64, False, "float16", None, dict(overlap_tiles=True, packed_p=True,
                                                      rescale_threshold=8.0)),
    (1, 2, 300, 300, 128, True, "float16", None, dict(rescale_threshold=0.0, consumer_wgs=3)),
    # persistent CTAs take the one-CTA grid's tiles first come, first served (a tile counter)
    (2, 3, 300, 300, 128, True, "bfloat16", None, dict(dynamic_tiles=True)),
    (1, 3, 200, 333, 64, True, "float16", None, dict(dynamic_tiles=True, head_group=2)),
    (2, 2, 300, 200, 128, False, "bfloat16", None, dict(dynamic_tiles=True, fma_select=True,
                                                        rescale_threshold=8.0)),
    (2, 2, 200, 150, 64, False, "float16", None, dict(dynamic_tiles=True, consumer_wgs=3,
                                                      skip_idle=True, partial_last=True)),
    # claimed tiles with the tile boundaries overlapped (session 14): the next tile's Q
    # buffer tells whether there is one (b = -1 ends the walk with the last P V alone)
    (2, 2, 300, 200, 128, False, "bfloat16", None, dict(dynamic_tiles=True, overlap_tiles=True,
                                                        fma_select=True, rescale_threshold=8.0)),
    (1, 3, 200, 333, 128, True, "float16", None, dict(dynamic_tiles=True, overlap_tiles=True)),
    (3, 2, 400, 64, 64, False, "float16", None, dict(dynamic_tiles=True, overlap_tiles=True,
                                                     consumer_wgs=3)),
    # D=128 non-causal's default past SHORT_SEQ (session 13): 3 consumer warpgroups of 80 keys,
    # claimed tiles, a partial row block (200 = 192 + 8 rows) and a partial K/V tile (250 keys)
    (2, 2, 200, 250, 128, False, "bfloat16", None, dict(consumer_wgs=3, tile_n=80,
                                                        dynamic_tiles=True, skip_idle=True,
                                                        partial_last=True, fma_select=True,
                                                        rescale_threshold=8.0)),
    # session 19's long defaults with FlashAttention-4's step order (exp_after_wait): D=128's
    # 3 x 80 keys with a partial row block and K/V tile, D=64's overlapped boundaries
    (2, 2, 200, 250, 128, False, "bfloat16", None, dict(consumer_wgs=3, tile_n=80,
                                                        dynamic_tiles=True, skip_idle=True,
                                                        partial_last=True, fma_select=True,
                                                        rescale_threshold=8.0,
                                                        exp_after_wait=True)),
    (3, 2, 400, 150, 64, False, "bfloat16", None, dict(consumer_wgs=3, fma_select=True,
                                                       overlap_tiles=True, packed_p=True,
                                                       rescale_at_wait=True,
                                                       exp_after_wait=True)),
    # a warpgroup whose last K/V tile it sees only in its first half issues S and P V there
    # over those keys (causal diagonals; an S_k tail of at most tile_n / 2 keys)
    (1, 2, 300, 300, 128, True, "bfloat16", None, dict(narrow_last=True, fma_select=True,
                                                       packed_p=True, rescale_threshold=8.0)),
    (2, 1, 200, 170, 64, False, "float16", None, dict(narrow_last=True)),
    (1, 2, 256, 256, 64, True, "float16", None, dict(narrow_last=True, consumer_wgs=3,
                                                     dynamic_tiles=True)),
    (1, 1, 150, 90, 128, True, "bfloat16", 0.2, dict(narrow_last=True, persistent=False)),
    (1, 2, 200, 200, 64, True, "bfloat16", None, dict(narrow_last=True, tile_n=64,
                                                      num_stages=3)),
]


def ids(case):
    b, h, sq, sk, d, causal, dtype, scale, pol = case
    extra = ",".join(f"{k}={v}" for k, v in pol.items())
    return (f"{b}x{h}x{sq}x{sk}-d{d}-{'causal' if causal else 'full'}-"
            f"{str(dtype).split('.')[-1]}" + (f"-s{scale}" if scale is not None else "")
            + (f"-{extra}" if extra else ""))


def make_inputs(case, device=None, seed=0):
    """q, k, v for ``case``: numpy arrays, or with ``device`` ('cpu', 'cuda') torch tensors
    there."""
    b, h, sq, sk, d, causal, dtype, scale, pol = case
    if device is None:
        return (randn((b, h, sq, d), dtype, seed),
                *(randn((b, h, sk, d), dtype, 3 * seed + i) for i in (1, 2)))
    import torch
    g = torch.Generator().manual_seed(seed)
    dt = getattr(torch, dtype)
    q = torch.randn(b, h, sq, d, generator=g).to(dt).to(device)
    k, v = (torch.randn(b, h, sk, d, generator=g).to(dt).to(device) for _ in range(2))
    return q, k, v


def run_case(case, q, k, v):
    """The kernel's output for ``case`` (default policy: ws.ops.flash_attention(mma='wgmma');
    overrides: a direct launch of the policy)."""
    b, h, sq, sk, d, causal, dtype, scale, pol = case
    if not pol:
        return flash_attention(q, k, v, causal=causal, scale=scale, mma="wgmma")
    ws_dtype = ws.Float16 if dtype == "float16" else ws.BFloat16
    fa = FlashAttentionWgmma(head_dim=d, dtype=ws_dtype, causal=causal, softmax_scale=scale,
                             **pol)
    o = empty_like(q)
    attention.launch_wgmma(fa, q, k, v, o)
    return o


def relative_error(out, q, k, v, causal, scale=None):
    want = reference(*(to_float64(x) for x in (q, k, v)), causal=causal, scale=scale)
    got = to_float64(out)
    assert np.isfinite(got).all()
    return np.linalg.norm(got - want) / np.linalg.norm(want)


@pytest.mark.parametrize("case", CASES, ids=ids)
def test_matches_numpy(sim_target, case):
    q, k, v = make_inputs(case)
    out = run_case(case, q, k, v)
    assert out.shape == q.shape and out.dtype == q.dtype == numpy_dtype(case[6])
    assert relative_error(out, q, k, v, case[5], case[7]) < TOL[case[6]]


def test_torch_cpu_tensors_in_the_simulator(sim_target):
    """torch interop: CPU torch tensors in (bf16, TMA descriptors of them), a torch tensor out."""
    torch = pytest.importorskip("torch", reason="torch interop: torch is not installed")
    case = CASES[1]
    q, k, v = make_inputs(case, device="cpu")
    out = run_case(case, q, k, v)
    assert isinstance(out, torch.Tensor) and out.dtype == torch.bfloat16
    assert relative_error(out, q, k, v, case[5], case[7]) < TOL[case[6]]


def test_strided_bshd_view_and_dispatch(sim_target, monkeypatch):
    # (B, S, H, D) storage seen as (B, H, S, D): strides (S*H*D, D, H*D, 1), all multiples of 8
    q, k, v = (randn((1, 90, 2, 64), "bfloat16", seed=30 + i).transpose(0, 2, 1, 3)
               for i in range(3))
    assert not q.flags.c_contiguous and attention.tma_compatible(attention.describe("q", q))
    out = flash_attention(q, k, v, causal=True, mma="wgmma")
    assert relative_error(out, q, k, v, True) < TOL["bfloat16"]
    # 'auto' picks wgmma only for TMA-compatible tensors on an sm_90 GPU, with enough work
    used = []
    monkeypatch.setattr(attention, "launch_wgmma", lambda *a: used.append("wgmma"))
    monkeypatch.setattr(attention, "launch", lambda *a: used.append("mma.sync"))
    monkeypatch.setattr(attention_plan, "_wgmma_device", lambda ta: True)
    flash_attention(q, k, v)                           # 2 * 90 * 90 * 64 < WGMMA_MIN_WORK
    monkeypatch.setattr(attention_plan, "WGMMA_MIN_WORK", 2 * 90 * 90 * 64)
    flash_attention(q, k, v)
    flat = randn(1 + 90 * 64, "bfloat16", seed=33)
    kk = flat[1:].reshape(1, 1, 90, 64)                # 2 bytes off 16-byte alignment
    assert kk.__array_interface__["data"][0] % 16 != 0
    flash_attention(q[:, :1], kk, kk)
    flash_attention(q, k, v, mma="mma.sync")
    monkeypatch.setattr(attention_plan, "_wgmma_device", lambda ta: False)
    flash_attention(q, k, v)                           # not an sm_90 GPU (the simulator)
    assert used == ["mma.sync", "wgmma", "mma.sync", "mma.sync", "mma.sync"]
    with pytest.raises(ws.ArgumentError, match=r"(?s)TMA cannot read these tensors \(k at 2 "
                       r"bytes past 16-byte alignment; v at 2 bytes.*Fix: mma='auto' .* or "
                       r"np\.array\(x, copy=True, order='C'\) each input"):
        flash_attention(q[:, :1], kk, kk, mma="wgmma")
    fixed = np.array(kk, copy=True, order="C")           # the fix the message gives
    assert fixed.__array_interface__["data"][0] % 16 == 0
    with pytest.raises(ws.ArgumentError, match="mma='tf32'"):
        flash_attention(q, k, v, mma="tf32")


@pytest.mark.parametrize("pol", [{}, dict(overlap_tiles=True), dict(lead_waits=True),
                                 dict(dynamic_tiles=True), dict(narrow_last=True),
                                 dict(dynamic_tiles=True, overlap_tiles=True),
                                 dict(overlap_tiles=True, shared_boundary=True),
                                 dict(dynamic_tiles=True, overlap_tiles=True,
                                      shared_boundary=True)],
                         ids=["default", "overlap_tiles", "lead_waits", "dynamic_tiles",
                              "narrow_last", "dynamic_overlap_tiles", "shared_boundary",
                              "dynamic_shared_boundary"])
def test_nan_filled_shared_memory_and_races(monkeypatch, pol):
    # shared memory starts as 0xFF bytes (bf16 NaN): TMA zero-fills the rows past S_k, so P = 0
    # meets V = 0 there; the race detector checks the TMA ring's hand-over and the wgmma reads
    # (with overlap_tiles: the double-buffered Q over several output tiles per CTA, also
    # claimed ones: dynamic_overlap_tiles)
    monkeypatch.setitem(importlib.import_module("warpstage.sim.run").run.__kwdefaults__, "smem_fill", 0xFF)
    ws.set_target("sim", races=True)
    try:
        case = ((1, 1, 100, 150, 64, False, "bfloat16", None, {}) if not pol else
                (1, 2, 300, 150, 64, False, "bfloat16", None, pol))
        q, k, v = make_inputs(case, seed=6)
        out = run_case(case, q, k, v)
    finally:
        ws.set_target(None)
    assert relative_error(out, q, k, v, False) < TOL["bfloat16"]


def _bf16(*shape, dtype="bfloat16"):
    return np.zeros(shape, numpy_dtype(dtype))


@pytest.mark.parametrize("fields, tensors, match", [
    (dict(kv_group=2), {}, r"the heads: expected H_q = H_kv x kv_group = 2 x 2, got H_q = 2"),
    (dict(head_dim=128), {}, r"the head dim: expected the policy's head_dim=128, got q's D = 64"),
    ({}, dict(o=_bf16(1, 2, 50, 64)), r"o: expected q's shape \(1, 2, 100, 64\) and dtype bf16, "
                                      r"got \(1, 2, 50, 64\) bf16"),
    ({}, dict(o=_bf16(1, 2, 100, 64, dtype="float32")), r"o: .*got \(1, 2, 100, 64\) f32"),
    ({}, dict(lse=np.zeros((1, 2, 10), np.float32)), r"lse: expected None or a \(1, 2, 100\) "
                                                     r"float32 tensor, got \(1, 2, 10\) f32"),
    ({}, dict(v=_bf16(1, 2, 90, 64)), r"k and v: expected one shape"),
    (dict(dynamic_tiles=True), dict(tiles=np.zeros(3, np.int32)),
     r"tiles: expected two int32 counters, zero, got \(3,\) i32"),
    (dict(dynamic_tiles=True, overlap_tiles=True), dict(tiles=np.array([3, 0], np.int32)),
     r"tiles: expected two int32 counters, zero, got \[3, 0\]"),
])
def test_launch_wgmma_checks_the_tensors_against_the_policy(fields, tensors, match):
    # checked on the host before any compile: the kernel indexes o and lse by q's rows, so a
    # smaller one would be written past its end on a GPU
    q = k = v = _bf16(1, 2, 100, 64)
    args = dict(dict(q=q, k=k, v=v, o=_bf16(1, 2, 100, 64)), **tensors)
    fa = FlashAttentionWgmma(**dict(dict(head_dim=64), **fields))
    with pytest.raises(ws.ArgumentError, match=match):
        attention.launch_wgmma(fa, args["q"], args["k"], args["v"], args["o"],
                               lse=tensors.get("lse"), tiles=tensors.get("tiles"))


@pytest.mark.parametrize("fields, match", [
    (dict(head_dim=80), "head_dim"), (dict(tile_n=40), "tile_n"),
    (dict(overlap_tiles=True, persistent=False), "overlap_tiles"),
    (dict(poly_exp2=9), "poly_exp2"), (dict(head_group=0, causal=True), "head_group"),
    (dict(head_group=4), "None without causal"),
    (dict(partial_last=True, causal=True), "partial_last"),
    (dict(partial_last=True, persistent=False), "partial_last"),
    (dict(lead_waits=True, pingpong=False), "lead_waits"), (dict(poly_exp2=2.0), "poly_exp2"),
    (dict(dynamic_tiles=True, persistent=False), "dynamic_tiles"),
    (dict(shared_boundary=True), "shared_boundary"),
    (dict(narrow_last=True, overlap=False), "narrow_last"),
    (dict(narrow_last=True, tile_n=48), "narrow_last"),
    (dict(narrow_last=True, overlap_tiles=True), "narrow_last"),
    (dict(num_stages=0), "num_stages"), (dict(num_stages=1), "at least 2 with overlap=True"),
    (dict(mma_regs=256), "the SM's registers"),
    (dict(head_dim=128, tile_n=256, num_stages=4), "shared memory"),
    (dict(dtype=ws.Float32), "dtype"),
    (dict(overlap="no"), r"overlap: expected True or False, got 'no'"),
    (dict(head_dim=256, tile_n=80, tma_store=True), r"(?s)need 263168 bytes.*Fix: tile_n=64 or "
                                                    r"tma_store=False$"),
    (dict(persistent=None), r"persistent: expected True or False, got None"),
    (dict(tma_store="yes"), r"tma_store: expected None \(on where its buffers fit beside the "
                            r"rings\), True or False, got 'yes'"),
    (dict(dynamic_tiles=1), r"dynamic_tiles: expected True or False, got 1"),
    (dict(overlap_tiles=True, split_kv=False), r"(?s)Fix: overlap_tiles=False, or split_kv=True$"),
    (dict(narrow_last=True, overlap=False), r"(?s)Fix: narrow_last=False, or overlap=True$")])
def test_policy_errors(fields, match):
    with pytest.raises(ValueError, match=match):
        FlashAttentionWgmma(**fields)


def test_numpy_scalars_in_a_policy_are_their_python_values():
    from warpstage.core.static_key import static_key
    plain = FlashAttentionWgmma(head_dim=64, tile_n=128, consumer_wgs=2, rescale_threshold=8.0,
                                dynamic_tiles=True)
    given = FlashAttentionWgmma(head_dim=np.int64(64), tile_n=np.int32(128),
                                consumer_wgs=np.int64(2), rescale_threshold=np.float32(8),
                                dynamic_tiles=np.bool_(True))
    assert static_key(given) == static_key(plain)
    assert type(given.tile_n) is int and type(given.rescale_threshold) is float


@pytest.mark.parametrize("head_dim, causal, overlap", [(64, False, True), (64, True, True),
                                                      (128, False, True), (128, True, True),
                                                      (128, True, False)])
def test_ptx_and_ptxas(head_dim, causal, overlap):
    if find_ptxas(CompileOptions()) is None:
        pytest.skip("no ptxas")
    fa = FlashAttentionWgmma(head_dim=head_dim, causal=causal, overlap=overlap)
    x = np.zeros((1, 1, 256, head_dim), numpy_dtype("bfloat16"))
    q_box, kv_box = fa.descriptor_boxes()
    TD = ws.tma.TensorDescriptor
    ck = ws.compile(flash_attention_wgmma_kernel, fa, TD(x, q_box), TD(x, kv_box),
                    TD(x, kv_box), ws.Tensor[ws.BFloat16, 4], ws.Int32, None, TD(x, fa.o_box),
                    block=(fa.threads, 1, 1))
    ptx = ck.ptx
    # S = Q K^T: D/16 k-steps of m64n128k16 (A, B from smem); O += P V: tile_n/16 m64n{D}k16
    # with A from registers; the overlapped loop has both twice (first stage / loop / last)
    s_mma = f"wgmma.mma_async.sync.aligned.m64n{fa.tile_n}k16.f32.bf16.bf16"
    pv_mma = f"wgmma.mma_async.sync.aligned.m64n{head_dim}k16.f32.bf16.bf16"
    copies = 2 if overlap else 1
    want = {}
    for shape, count in ((s_mma, head_dim // 16), (pv_mma, fa.tile_n // 16)):
        want[shape] = want.get(shape, 0) + copies * count       # D = tile_n: the same shape
    for shape, count in want.items():
        assert ptx.count(shape) == count, shape
    assert ptx.count("wgmma.mma_async") == sum(want.values())
    # TMA load sites: Q, then K_0, K_j, V_{j-1}, V_last (split K/V rings), each per 64-column box
    assert ptx.count("cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier") == \
        5 * head_dim // 64
    assert "setmaxnreg.dec.sync.aligned.u32 \t24;" in ptx
    assert "setmaxnreg.inc.sync.aligned.u32 \t240;" in ptx
    # ping-pong: the consumer warpgroups' turns are named barriers with a register id
    assert re.search(r"bar.sync \t%r\d+, 256;", ptx) and re.search(r"bar.arrive \t%r\d+, 256;", ptx)
    assert "ex2.approx.ftz.f32" in ptx and "ex2.approx.f32" not in ptx      # fast_exp2
    assert ("wgmma.wait_group.sync.aligned 1;" in ptx) == overlap
    log = ck.ptxas_log
    for warning in ("C7517", "C7519", "C7508", "C7504"):     # injected waits / ignored setmaxnreg
        assert warning not in log, log
    res = ck.resources
    assert res.spill_stores == 0 and res.spill_loads == 0 and res.stack_frame == 0
    assert ck.dynamic_smem == fa.smem_bytes
    sass = ck.sass
    if sass is None:
        pytest.skip("SASS checks need nvdisasm or cuobjdump (the nvidia-cuda-nvdisasm wheel)")
    # the register split, no local memory, the ping-pong turns, the tensor cores and the TMA
    assert "USETMAXREG.DEALLOC.CTAPOOL 0x18" in sass and "USETMAXREG.TRY_ALLOC.CTAPOOL" in sass
    assert re.search(r"USETMAXREG\.TRY_ALLOC\.CTAPOOL \w+, 0xf0", sass)
    assert not re.search(r"\b(LDL|STL)\b", sass)
    assert re.search(r"BAR\.SYNC\.DEFER_BLOCKING R\d+, 0x100", sass)       # wait for my turn
    assert re.search(r"BAR\.ARV R\d+, 0x100", sass)                         # pass the turn
    assert sass.count("HGMMA.64x") == ptx.count("wgmma.mma_async") and "UTMALDG" in sass


def test_descriptor_and_output_checks():
    fa = FlashAttentionWgmma(head_dim=64)
    x = np.zeros((1, 1, 256, 64), numpy_dtype("bfloat16"))
    q_box, kv_box = fa.descriptor_boxes()
    TD = ws.tma.TensorDescriptor
    O = ws.Tensor[ws.BFloat16, 4]
    with pytest.raises(ws.OperandError, match=r"k_desc.*box \(1, 1, 64, 64\)"):
        ws.compile(flash_attention_wgmma_kernel, fa, TD(x, q_box), TD(x, (1, 1, 64, 64)),
                   TD(x, kv_box), O, ws.Int32, None, TD(x, fa.o_box), block=(fa.threads, 1, 1))
    with pytest.raises(ws.OperandError, match="tensor o"):
        ws.compile(flash_attention_wgmma_kernel, fa, TD(x, q_box), TD(x, kv_box),
                   TD(x, kv_box), ws.Tensor[ws.Float16, 4], ws.Int32, None, TD(x, fa.o_box),
                   block=(fa.threads, 1, 1))
    with pytest.raises(ws.OperandError, match=r"o_desc: expected a TMA descriptor of o"):
        ws.compile(flash_attention_wgmma_kernel, fa, TD(x, q_box), TD(x, kv_box),
                   TD(x, kv_box), O, ws.Int32, block=(fa.threads, 1, 1))
    for block in ((128, 1, 1), (512, 1, 1)):        # ws.compile's default block is 128 threads
        want = (r"(?s)launch block.*expected \(384, 1, 1\).*got \(%d, 1, 1\).*Fix: launch as "
                r"flash_attention_wgmma_kernel\[fa.grid" % block[0])
        with pytest.raises(ws.OperandError, match=want):
            ws.compile(flash_attention_wgmma_kernel, fa, TD(x, q_box), TD(x, kv_box),
                       TD(x, kv_box), O, ws.Int32, None, TD(x, fa.o_box), block=block)


@pytest.mark.parametrize("mma", ["wgmma", "mma.sync"])
def test_large_magnitude_scores_give_no_nan(sim_target, mma):
    """|q . k| ~ 1e11: p = 2^((s - m) c) keeps the row max's term at exactly 1 (the FMA form
    2^(s c - round(m c)) overflowed to inf and gave inf / inf = NaN here)."""
    q, k, v = (randn((1, 1, 70, 64), "bfloat16", seed=50 + i) for i in range(3))
    q, k = ((x.astype(np.float32) * np.float32(4e4)).astype(numpy_dtype("bfloat16"))
            for x in (q, k))
    out = flash_attention(q, k, v, causal=True, mma=mma)
    got = to_float64(out)
    assert np.isfinite(got).all()
    want = reference(*(to_float64(x) for x in (q, k, v)), causal=True)
    assert np.abs(got - want).max() < 0.05


def test_fma_scores_take_the_exact_form_for_large_scores(sim_target):
    """With ``fma_scores`` the warp vote sends rows with |m c| >= 2^15 (scores ~1e11 here) to
    the exact (s - m) c: still no NaN, same answer as the default policy."""
    q, k, v = (randn((1, 1, 70, 64), "bfloat16", seed=50 + i) for i in range(3))
    q, k = ((x.astype(np.float32) * np.float32(4e4)).astype(numpy_dtype("bfloat16"))
            for x in (q, k))
    case = (1, 1, 70, 70, 64, True, "bfloat16", None, dict(fma_scores=True))
    got = to_float64(run_case(case, q, k, v))
    assert np.isfinite(got).all()
    want = reference(*(to_float64(x) for x in (q, k, v)), causal=True)
    assert np.abs(got - want).max() < 0.05


def offset_inputs(magnitude, seq=200, d=64, seed=90):
    """q, k (fp16) whose scores are a common row offset ``magnitude`` (the last column of q
    and k: a x b with a, b powers of two) plus unit-size terms, and v: the scores of a row
    spread over a few units around ~``magnitude``, so the softmax is not one-hot there."""
    q, k, v = (randn((1, 1, seq, d), "float16", seed=seed + i) for i in range(3))
    q, k = (x.astype(np.float32) for x in (q, k))
    a = 2.0 ** np.floor(np.log2(magnitude) / 2)
    q[..., -1], k[..., -1] = a, magnitude / a
    return q.astype(np.float16), k.astype(np.float16), v


@pytest.mark.parametrize("magnitude", [2.0 ** 18, 2.0 ** 25])
def test_fma_select_cancels_the_offset_rounding(sim_target, magnitude):
    """Scores ~``magnitude`` + O(1): m c is far from a float (its rounding error is up to
    2^-8 .. 1/2 of an exponent unit, ~18-40% of a term at 2^25 x c), yet ``fma_select`` gives
    the exact form's answer over several K/V tiles with a growing row max, because alpha is
    taken from the offsets (a mismatch between the tiles' offsets shows as an error here)."""
    q, k, v = offset_inputs(magnitude)
    base = (1, 1, 200, 200, 64, False, "float16", None)
    want = to_float64(run_case(base + (dict(tile_n=64, num_stages=2),), q, k, v))
    got = to_float64(run_case(base + (dict(tile_n=64, num_stages=2, fma_select=True),), q, k, v))
    assert np.isfinite(got).all()
    assert np.abs(got - want).max() < 2e-3 * np.abs(want).max()


def test_fma_select_large_scores_and_lse(sim_target):
    """|q . k| ~ 1e11 (the NaN fix's case): ``fma_select`` takes the exact power-of-two scale
    there, no NaN, the reference's answer; its log-sum-exp subtracts the offset error."""
    q, k, v = (randn((1, 1, 70, 64), "bfloat16", seed=50 + i) for i in range(3))
    q, k = ((x.astype(np.float32) * np.float32(4e4)).astype(numpy_dtype("bfloat16"))
            for x in (q, k))
    fa = FlashAttentionWgmma(head_dim=64, dtype=ws.BFloat16, causal=True, fma_select=True)
    o = empty_like(q)
    attention.launch_wgmma(fa, q, k, v, o)
    got = to_float64(o)
    assert np.isfinite(got).all()
    want = reference(*(to_float64(x) for x in (q, k, v)), causal=True)
    assert np.abs(got - want).max() < 0.05
    q, k, v = (randn((1, 2, 100, 64), "float16", seed=55 + i) for i in range(3))
    _, want_lse = reference(*(to_float64(x) for x in (q, k, v)), return_lse=True)
    fa = FlashAttentionWgmma(head_dim=64, dtype=ws.Float16, fma_select=True)
    o, lse = empty_like(q), np.empty((1, 2, 100), np.float32)
    attention.launch_wgmma(fa, q, k, v, o, lse=lse)
    assert np.abs(lse - want_lse).max() < 1e-3


def test_native_head_dim_96_gqa_and_lse(sim_target):
    """D = 96 on the wgmma kernel as it is (3 TMA boxes of 32 columns, 64-byte swizzle, the P V
    wgmma with N = 96): GQA 2:1, odd S, bottom-right causal, and the log-sum-exp."""
    q = randn((1, 4, 67, 96), "bfloat16", seed=95)
    k, v = (randn((1, 2, 99, 96), "bfloat16", seed=96 + i) for i in range(2))
    fa = FlashAttentionWgmma(head_dim=96, dtype=ws.BFloat16, causal=True, kv_group=2,
                             causal_align="bottom_right")
    assert fa.swizzle == 64 and fa.descriptor_boxes()[1] == (1, 1, fa.tile_n, 32)
    # the TMA-store epilogue in 64 x 32 blocks (the tiles' 64-byte swizzle): 3 per warpgroup
    assert fa.tma_store and fa.out.swizzle == 64 and fa.o_box == (1, 1, 64, 32)
    o, lse = empty_like(q), np.empty((1, 4, 67), np.float32)
    attention.launch_wgmma(fa, q, k, v, o, lse=lse)
    want, want_lse = reference(*(to_float64(x) for x in (q, k, v)), causal=True,
                               causal_align="bottom_right", return_lse=True)
    got = to_float64(o)
    assert np.abs(got - want).max() < 2e-2
    assert np.abs(lse - want_lse).max() < 1e-3
    assert FlashAttentionWgmma(head_dim=96, tma_store=True).tma_store


@pytest.mark.parametrize("hq, hkv, sq, sk, d, causal, align", [
    (4, 1, 100, 100, 64, True, "top_left"),          # MQA
    (4, 2, 70, 150, 128, False, "top_left"),         # GQA 2:1, S_q < S_k
    (2, 1, 90, 200, 64, True, "bottom_right"),       # decoding-style: the last query sees all
    (1, 1, 200, 90, 64, True, "bottom_right"),       # S_q > S_k: the first rows see no key
])
def test_gqa_alignment_and_lse(sim_target, hq, hkv, sq, sk, d, causal, align):
    q = randn((1, hq, sq, d), "bfloat16", seed=60)
    k, v = (randn((1, hkv, sk, d), "bfloat16", seed=61 + i) for i in range(2))
    out, lse = flash_attention(q, k, v, causal=causal, causal_align=align, return_lse=True)
    want, want_lse = reference(*(to_float64(x) for x in (q, k, v)), causal=causal,
                               causal_align=align, return_lse=True)
    got = to_float64(out)
    assert out.shape == q.shape and lse.shape == (1, hq, sq) and lse.dtype == np.float32
    assert np.isfinite(got).all()
    assert np.abs(got - want).max() < 2e-2
    finite = np.isfinite(want_lse)
    assert (np.isneginf(lse) == ~finite).all()
    assert np.abs(lse[finite] - want_lse[finite]).max() < 1e-3
    if align == "bottom_right" and sq > sk:
        assert (got[:, :, : sq - sk] == 0).all()          # rows with no key give 0


def test_feature_errors():
    q = randn((1, 4, 64, 64), "bfloat16", seed=70)
    k = randn((1, 3, 64, 64), "bfloat16", seed=71)
    with pytest.raises(ws.ArgumentError, match="H_kv dividing H_q"):
        flash_attention(q, k, k)
    with pytest.raises(ws.ArgumentError, match="causal_align"):
        flash_attention(q, q, q, causal=True, causal_align="middle")
    with pytest.raises(ws.ArgumentError, match="mma.sync kernel has no"):
        flash_attention(q, q, q, return_lse=True, mma="mma.sync")
    with pytest.raises(ws.ArgumentError, match="return_lse"):
        flash_attention(q, q, q, return_lse="yes")


@pytest.mark.parametrize("head_dim, mma", [(32, "auto"), (96, "wgmma"), (80, "auto"),
                                           (160, "auto")])
def test_other_head_dims_are_padded(sim_target, head_dim, mma):
    q, k, v = (randn((1, 2, 70, head_dim), "float16", seed=80 + i) for i in range(3))
    out = flash_attention(q, k, v, causal=True, mma=mma)
    assert out.shape == q.shape
    assert relative_error(out, q, k, v, True) < TOL["float16"]
