"""The FlashAttention kernel (warpstage/ops/attention_kernel.py, examples/flash_attention.py) in
the CPU simulator against a float64 numpy reference: D = 64 and 128, causal and not, sequence
lengths off the tile, both copy paths, strided views, other tilings and scales, shared memory
that starts as NaN (with the race detector on), the policy's errors. Inputs are numpy arrays
(bf16: ml_dtypes, tests/dtypes_helper.py), so this runs without torch; one test passes CPU torch
tensors (torch interop). Sizes are small: the whole file runs in well under a minute on two
cores."""
import importlib.util
import os

import numpy as np
import pytest

import warpstage as ws
from dtypes_helper import numpy_dtype, randn, to_float64
from warpstage.ops import FlashAttention, flash_attention, flash_attention_kernel
from warpstage.ops.attention import reference

pytestmark = pytest.mark.filterwarnings("ignore::warpstage.RecompileWarning")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(autouse=True)
def sim_target():
    ws.set_target("sim")
    yield
    ws.set_target(None)


def qkv(batch, heads, seq, head_dim, dtype="bfloat16", seq_k=None, seed=0):
    """Standard-normal (B, H, S, D) numpy arrays of ``dtype`` ('float16', 'bfloat16', ...)."""
    q = randn((batch, heads, seq, head_dim), dtype, seed)
    k, v = (randn((batch, heads, seq_k or seq, head_dim), dtype, seed * 7 + i) for i in (1, 2))
    return q, k, v


def relative_error(out, q, k, v, causal, scale=None):
    want = reference(*(to_float64(x) for x in (q, k, v)), causal=causal, scale=scale)
    got = to_float64(out)
    assert np.isfinite(got).all()
    return np.linalg.norm(got - want) / np.linalg.norm(want)


TOL = {"float16": 2e-3, "bfloat16": 1e-2}


@pytest.mark.parametrize("seq, causal, dtype", [
    (64, False, "float16"),               # one K/V tile, one query tile
    (100, True, "bfloat16"),              # tails: 100 = 64 + 36 keys; causal
    (130, False, "bfloat16"),             # 3 K/V tiles through 2 stages, 2 query tiles (tail 2)
    (1, True, "float16"),                 # a single query and key
])
def test_head_dim_64(seq, causal, dtype):
    q, k, v = qkv(1, 1, seq, 64, dtype)
    out = flash_attention(q, k, v, causal=causal)
    assert out.shape == q.shape and out.dtype == numpy_dtype(dtype)
    assert relative_error(out, q, k, v, causal) < TOL[dtype]


@pytest.mark.parametrize("seq, causal, dtype", [(72, True, "bfloat16"), (65, False, "float16")])
def test_head_dim_128(seq, causal, dtype):
    q, k, v = qkv(1, 1, seq, 128, dtype)
    out = flash_attention(q, k, v, causal=causal)
    assert relative_error(out, q, k, v, causal) < TOL[dtype]


def test_batch_heads_grid_and_scale():
    q, k, v = qkv(2, 2, 40, 64, "float16")
    out = flash_attention(q, k, v, scale=0.3)
    assert relative_error(out, q, k, v, False, scale=0.3) < TOL["float16"]


def test_strided_bshd_view_and_ld_st_copies():
    # (B, S, H, D) storage seen as (B, H, S, D): strides (S*H*D, D, H*D, 1), no copy
    base = [randn((1, 70, 2, 64), "bfloat16", seed=30 + i) for i in range(3)]
    q, k, v = (x.transpose(0, 2, 1, 3) for x in base)
    assert not q.flags.c_contiguous
    out = flash_attention(q, k, v, causal=True)
    assert relative_error(out, q, k, v, True) < TOL["bfloat16"]
    # an element offset of 1 breaks 16-byte alignment: the wrapper falls back to ld/st copies
    flat = randn(1 + 70 * 64, "bfloat16", seed=33)
    kk = flat[1:].reshape(1, 1, 70, 64)
    assert kk.base is not None and kk.__array_interface__["data"][0] % 16 != 0
    out2 = flash_attention(q[:, :1], kk, kk, causal=False)
    assert relative_error(out2, q[:, :1], kk, kk, False) < TOL["bfloat16"]


@pytest.mark.parametrize("scale", [-0.3, 0.0])
def test_negative_and_zero_scale(scale):
    # the online softmax takes the row max of scale * s, not of s, when scale <= 0
    q, k, v = qkv(1, 1, 50, 64, "float16", seed=4)
    out = flash_attention(q, k, v, causal=True, scale=scale)
    assert relative_error(out, q, k, v, True, scale=scale) < TOL["float16"]


@pytest.mark.parametrize("policy", [dict(head_dim=64, tile_m=64, tile_n=16, num_stages=3),
                                    dict(head_dim=128, tile_m=64, tile_n=32, num_stages=1)])
def test_one_consumer_warpgroup_small_tiles(policy):
    fa = FlashAttention(dtype=ws.BFloat16, causal=True, **policy)
    q, k, v = qkv(1, 1, 90, fa.head_dim, "bfloat16", seed=5)
    out = np.empty_like(q)
    flash_attention_kernel[fa.grid(1, 1, 90), fa.threads](fa, q, k, v, out)
    assert relative_error(out, q, k, v, True) < TOL["bfloat16"]


@pytest.mark.parametrize("aligned", [True, False])
def test_nan_filled_shared_memory_and_races(monkeypatch, aligned):
    # A GPU leaves shared memory undefined; here every byte starts as 0xFF (bf16 NaN). The last
    # K/V tile's rows past S_k must be zero-filled (P = 0 there, but 0 * NaN is NaN), and the race
    # detector checks the ring's hand-over (cp.async or ld/st, and the tail's plain arrive).
    monkeypatch.setitem(importlib.import_module("warpstage.sim.run").run.__kwdefaults__, "smem_fill", 0xFF)
    q = randn((1, 1, 100, 64), "bfloat16", seed=6)
    flat = randn(2 * 100 * 64 + 8, "bfloat16", seed=7)
    off = 0 if aligned else 1                       # 1: 2 bytes off 16-byte alignment: ld/st
    k = flat[off:off + 6400].reshape(1, 1, 100, 64)
    v = flat[6400 + 8:].reshape(1, 1, 100, 64)
    ws.set_target("sim", races=True)
    try:
        for causal in (False, True):
            out = flash_attention(q, k, v, causal=causal)
            assert relative_error(out, q, k, v, causal) < TOL["bfloat16"]
    finally:
        ws.set_target("sim", races=False)


def test_more_keys_than_queries_with_three_stages():
    q, k, v = qkv(1, 1, 20, 64, "float16", seq_k=150)
    fa = FlashAttention(head_dim=64, dtype=ws.Float16, num_stages=3)
    out = np.empty_like(q)
    flash_attention_kernel[fa.grid(1, 1, 20), fa.threads](fa, q, k, v, out)
    assert relative_error(out, q, k, v, False) < TOL["float16"]


def test_torch_cpu_tensors_in_the_simulator():
    """torch interop: CPU torch tensors (a strided bf16 view included) in, a torch tensor out."""
    torch = pytest.importorskip("torch", reason="torch interop: torch is not installed")
    g = torch.Generator().manual_seed(8)
    q, k, v = (torch.randn(1, 70, 2, 64, generator=g).to(torch.bfloat16).transpose(1, 2)
               for _ in range(3))
    out = flash_attention(q, k, v, causal=True)
    assert isinstance(out, torch.Tensor) and out.dtype == torch.bfloat16
    assert relative_error(out, q, k, v, True) < TOL["bfloat16"]


def test_example_main_runs_in_the_simulator():
    spec = importlib.util.spec_from_file_location(
        "ex_flash_attention", os.path.join(ROOT, "examples", "flash_attention.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.main(batch=1, heads=1, seq=33, head_dim=64, causal=True) < 1e-2


def test_policy_and_wrapper_errors():
    with pytest.raises(ValueError, match="head_dim: expected 64 or 128"):
        FlashAttention(head_dim=96)
    with pytest.raises(ValueError, match=r"(?s)tile_m: expected 64 or 128 .*consumer warps.*Fix: "
                                         r"tile_m=128"):
        FlashAttention(head_dim=128, tile_m=256)
    with pytest.raises(ValueError, match=r"tile_n: expected a multiple of 16 in \[16, 256\]"):
        FlashAttention(head_dim=64, tile_n=40)
    with pytest.raises(ValueError, match="65536 \\(the SM's registers\\)"):
        FlashAttention(head_dim=64, tile_m=128, mma_regs=256)
    with pytest.raises(ValueError, match=r"(?s)need \d+ bytes.*Fix: num_stages=3 or "
                                         r"tile_n=96$"):
        FlashAttention(head_dim=128, tile_n=256, num_stages=4)
    FlashAttention(head_dim=128, tile_n=96, num_stages=4)          # the fix's widest tile fits
    with pytest.raises(ValueError, match=r"need \d+ bytes"):
        FlashAttention(head_dim=128, tile_n=112, num_stages=4)
    q, k, v = qkv(1, 1, 8, 64, "float32")
    with pytest.raises(ws.ArgumentError, match=r"have dtypes float32, float32, float32; expected one of float16 or bfloat16"):
        flash_attention(q, k, v)
    q, k, v = qkv(1, 1, 8, 288)
    with pytest.raises(ws.ArgumentError, match="head dimension D = 288.*up to 256"):
        flash_attention(q, k, v)
    q, k, v = qkv(1, 1, 8, 64)
    fa = FlashAttention(head_dim=64, dtype=ws.Float16)
    with pytest.raises(ws.OperandError, match=r"(?s)tensor q's dtype: expected Float16, got "
                                              r"'BFloat16'.*Fix: make the policy with "
                                              r"dtype=ws.BFloat16"):
        flash_attention_kernel[fa.grid(1, 1, 8), fa.threads](fa, q, k, v, np.empty_like(q))


def test_one_policy_one_kernel():
    q, k, v = qkv(1, 1, 16, 64)
    flash_attention(q, k, v)
    before = flash_attention_kernel.trace_count
    flash_attention(*qkv(1, 3, 24, 64, seed=1))       # new sizes, same types: no retrace
    assert flash_attention_kernel.trace_count == before


@pytest.mark.parametrize("threads", [128, 512, (128, 3)])
def test_direct_launch_with_another_block_is_refused(threads):
    """The roles and barrier counts assume fa.threads threads: 128 would deadlock, 512 would
    run warps without a role. The block is part of the specialization, so the trace checks it
    (before anything runs)."""
    q, k, v = qkv(1, 1, 16, 64)
    fa = FlashAttention(head_dim=64)
    o = np.zeros_like(q)
    with pytest.raises(ws.OperandError, match=r"(?s)launch block.*expected \(384, 1, 1\).*"
                                              r"fa.threads.*Fix: launch as flash_attention_"
                                              r"kernel\[fa.grid\(B, H, S_q\), fa.threads\]"):
        flash_attention_kernel[fa.grid(1, 1, 16), threads](fa, q, k, v, o)
    assert not np.any(to_float64(o))                     # nothing ran
    T = ws.Tensor[ws.BFloat16, 4]
    with pytest.raises(ws.OperandError, match=r"ws.compile\(\.\.\., block=\(fa.threads, 1, 1\)"):
        ws.compile(flash_attention_kernel, fa, T, T, T, T)         # the default block: 128


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(tile_n=0), ValueError, r"tile_n: expected a multiple of 16 .*got 0"),
    (dict(tile_n=100), ValueError, r"tile_n: expected a multiple of 16 in"),
    (dict(num_stages=0), ValueError, r"num_stages: expected an int in \[1, 8\].*got 0"),
    (dict(num_stages=-1), ValueError, r"num_stages: expected an int in \[1, 8\].*got -1"),
    (dict(tile_n=64.0), ws.ArgumentError, r"tile_n=64.0 \(float\); expected None or an int"),
    (dict(num_stages=True), ws.ArgumentError, r"num_stages=True \(bool\); expected None or"),
    (dict(causal="no"), ws.ArgumentError, r"causal='no' \(str\); expected a bool"),
    (dict(causal=1.5), ws.ArgumentError, r"causal=1.5 \(float\); expected a bool"),
    (dict(causal=1), ws.ArgumentError, r"causal=1 \(int\); expected a bool"),
    (dict(scale="0.1"), ws.ArgumentError, r"scale='0.1' \(str\); expected None"),
    (dict(scale=True), ws.ArgumentError, r"scale=True \(bool\)"),
    (dict(scale=float("nan")), ws.ArgumentError, r"scale=nan.*finite real number"),
    (dict(scale=1j), ws.ArgumentError, r"scale=1j \(complex\)"),
    (dict(scale=1e39), ws.ArgumentError, r"scale=1e\+39.*fits in float32 \(\|scale\| <= 2.36e\+38\)"),
    (dict(scale=-3e38), ws.ArgumentError, r"scale=-3e\+38"),
])
def test_wrapper_rejects_bad_option_values(kwargs, error, match):
    """0 is not 'the default' (None is); causal must be a bool and scale a finite number
    (torch's scaled_dot_product_attention raises TypeError for a non-bool is_causal)."""
    q, k, v = qkv(1, 1, 16, 64)
    with pytest.raises(error, match=match):
        flash_attention(q, k, v, **kwargs)


def test_wrapper_takes_numpy_scalars_and_none_defaults():
    q, k, v = qkv(1, 1, 20, 64, seed=3)
    out = flash_attention(q, k, v, causal=np.bool_(True), scale=np.float32(0.2),
                          tile_n=np.int64(64), num_stages=None)
    assert relative_error(out, q, k, v, True, scale=float(np.float32(0.2))) < 1e-2


def test_policy_rejects_bad_causal_and_scale():
    with pytest.raises(ValueError, match="causal: expected a bool, got 'no'"):
        FlashAttention(head_dim=64, causal="no")
    with pytest.raises(ValueError, match=r"softmax_scale: expected None.*got '0.1'"):
        FlashAttention(head_dim=64, softmax_scale="0.1")
    with pytest.raises(ValueError, match=r"softmax_scale: expected None.*got inf"):
        FlashAttention(head_dim=64, softmax_scale=float("inf"))
    with pytest.raises(ValueError, match=r"num_stages: expected an int in \[1, 8\].*got True"):
        FlashAttention(head_dim=64, num_stages=True)


def test_a_new_scale_compiles_once_and_the_recompile_reason_names_it():
    """softmax_scale is a static field of the policy: each distinct value is one
    specialization (reused afterwards), and the recompile reason names the field."""
    kern = ws.kernel(flash_attention_kernel.fn)                 # a fresh in-memory cache
    q, k, v = qkv(1, 1, 16, 64, seed=5)
    for scale in (0.125, 0.2, 0.125, 0.2):
        fa = FlashAttention(head_dim=64, softmax_scale=scale)
        o = np.zeros_like(q)
        kern[fa.grid(1, 1, 16), fa.threads](fa, q, k, v, o)
        assert relative_error(o, q, k, v, False, scale=scale) < 1e-2
    assert kern.trace_count == 2
    assert kern._cache.reasons == ["vs #1: fa: softmax_scale 0.125 -> 0.2"]
    fa = FlashAttention(head_dim=64, softmax_scale=0.2, tile_n=64, causal=True)
    kern[fa.grid(1, 1, 16), fa.threads](fa, q, k, v, np.zeros_like(q))
    assert kern._cache.reasons[-1] == "vs #2: fa: causal False -> True, tile_n 128 -> 64"
