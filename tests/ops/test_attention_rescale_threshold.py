"""The FlashAttention wgmma kernel's conditional rescale of O (``rescale_threshold``;
docs/performance.md, "Session 8"): a row keeps its running max while a tile's max exceeds it by
at most t powers of two, and O is multiplied by alpha only when a warp vote finds a row whose
max moved. In the simulator against the float64 reference (a row max that climbs by less than
t per K/V tile and then jumps past it, so both the kept max and the taken rescale occur), the
log-sum-exp, bit-equality of t = 0 with the unconditional rescale, the policy errors; on the
CPU from the cubin: the branch around the 64 multiplies in the K/V step, no spills, the
register split and the turns."""
import importlib.util
import os
import re
import sys

import numpy as np
import pytest

import warpstage as ws
from dtypes_helper import empty_like, numpy_dtype, randn, to_float64
from test_attention_packed_p import _compiled, _sass_report
from warpstage.ops import attention
from warpstage.ops.attention import reference
from warpstage.ops.attention_wgmma import FlashAttentionWgmma

pytestmark = pytest.mark.filterwarnings("ignore::warpstage.RecompileWarning")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _run(q, k, v, causal=False, lse=False, **fields):
    dtype = ws.Float16 if q.dtype == np.float16 else ws.BFloat16
    fa = FlashAttentionWgmma(head_dim=q.shape[-1], dtype=dtype, causal=causal, **fields)
    o = empty_like(q)
    out_lse = np.empty(q.shape[:3], np.float32) if lse else None
    attention.launch_wgmma(fa, q, k, v, o, lse=out_lse)
    return (o, out_lse) if lse else o


def climbing_inputs(rise, tile_n=64, tiles=6, d=64, seed=70, dtype="float16"):
    """q, k, v whose scores are unit-size terms plus a common offset that grows by ``rise``
    exponent units (powers of two after the softmax's scale) per K/V tile of ``tile_n`` keys:
    the last column of q is 1 and that of k is the tile index times rise / c."""
    c = np.log2(np.e) / np.sqrt(d)
    q, k, v = (randn((1, 2, tile_n * tiles, d), dtype, seed=seed + i) for i in range(3))
    q, k = (x.astype(np.float32) for x in (q, k))
    q[..., -1] = 1.0
    k[..., -1] = (np.arange(k.shape[2]) // tile_n) * (rise / c)
    return q.astype(numpy_dtype(dtype)), k.astype(numpy_dtype(dtype)), v


@pytest.mark.parametrize("rise, fields", [
    (3.0, dict(rescale_threshold=8.0)),                    # kept for 2 tiles, then moved
    (3.0, dict(rescale_threshold=8.0, fma_select=True, packed_p=True)),
    (5.0, dict(rescale_threshold=15.0, overlap_tiles=True)),   # P terms up to 2^15 in fp16
    (0.5, dict(rescale_threshold=0.0, consumer_wgs=3)),
    (9.0, dict(rescale_threshold=8.0, causal=True)),       # every tile moves the max
])
def test_climbing_row_max_matches_the_reference(sim_target, rise, fields):
    q, k, v = climbing_inputs(rise)
    fields = dict(fields, tile_n=64, num_stages=2)
    causal = fields.pop("causal", False)
    out, lse = _run(q, k, v, causal=causal, lse=True, **fields)
    want, want_lse = reference(*(to_float64(x) for x in (q, k, v)), causal=causal,
                               return_lse=True)
    got = to_float64(out)
    assert np.isfinite(got).all()
    assert np.abs(got - want).max() < 4e-3 * np.abs(want).max()
    assert np.abs(lse - want_lse).max() < 1e-3


def test_the_rescale_is_needed_where_the_max_moves(sim_target, monkeypatch):
    """The same climbing scores with the branch never taken give a wrong answer: the vote is
    what keeps O right once a row's max passes the threshold."""
    from warpstage.ops.attention_wgmma_consumer import WgmmaConsumer
    q, k, v = climbing_inputs(5.0)
    want = reference(*(to_float64(x) for x in (q, k, v)), causal=False)
    monkeypatch.setattr(WgmmaConsumer, "rescale_at_wait_of",
                        lambda self, acc, alpha: acc)
    got = to_float64(_run(q, k, v, tile_n=64, num_stages=2, rescale_threshold=4.0))
    assert np.abs(got - want).max() > 0.05 * np.abs(want).max()


def test_threshold_zero_is_bit_identical_to_the_unconditional_rescale(sim_target):
    """t = 0 keeps a max only when it did not move (alpha = 2^0 = 1 exactly), so skipping the
    multiply changes no bit of O."""
    q, k, v = (randn((2, 2, 300, 128), "bfloat16", seed=80 + i) for i in range(3))
    base = _run(q, k, v, causal=True, fma_select=True, rescale_at_wait=True)
    zero = _run(q, k, v, causal=True, fma_select=True, rescale_threshold=0.0)
    assert np.array_equal(base.view(np.uint16), zero.view(np.uint16))


@pytest.mark.parametrize("bad", [16.0, -1.0, True, "8", float("nan")])
def test_policy_errors(bad):
    with pytest.raises(ValueError, match=r"rescale_threshold.*None or a number in \[0, 15\]"):
        FlashAttentionWgmma(head_dim=128, rescale_threshold=bad)


def test_key_distinguishes_thresholds():
    keys = {FlashAttentionWgmma(head_dim=64, rescale_threshold=t).__static_key__()
            for t in (None, 0.0, 8.0)}
    assert len(keys) == 3


def test_sass_skips_the_multiplies_in_the_kv_step():
    """In the K/V step loop (the innermost loop around the 16-HGMMA turn) a forward branch
    after a VOTE.ANY skips exactly O's 64 FMULs; no spills, the same register split, turns and
    no injected waits."""
    ck = _compiled(rescale_threshold=8.0)
    for warning in ("C7517", "C7519", "C7508", "C7504"):
        assert warning not in ck.ptxas_log, ck.ptxas_log
    res = ck.resources
    assert res.spill_stores == 0 and res.spill_loads == 0 and res.stack_frame == 0
    assert "vote.sync.any.pred" in ck.ptx
    if ck.sass is None:
        pytest.skip("SASS checks need nvdisasm or cuobjdump (the nvidia-cuda-nvdisasm wheel)")
    sass = ck.sass
    assert "USETMAXREG.DEALLOC.CTAPOOL 0x18" in sass
    assert re.search(r"USETMAXREG\.TRY_ALLOC\.CTAPOOL \w+, 0xf0", sass)
    assert not re.search(r"\b(LDL|STL)\b", sass)
    assert re.search(r"BAR\.SYNC\.DEFER_BLOCKING R\d+, 0x100", sass)
    assert re.search(r"BAR\.ARV R\d+, 0x100", sass)
    rep = _sass_report()
    lines, labelled = rep.sass_lines(ck), rep.sass_lines(ck, labels=True)
    step = rep.kv_step(lines, rep.loops(labelled))
    assert step is not None, "no 16-HGMMA turn inside a loop in the SASS"
    skips = [(i, len(body)) for i, body in rep.step_branches(lines, labelled, step)
             if body and all(rep.opcode(ln) == "FMUL" for ln in body)]
    assert [n for _, n in skips] == [64], skips
    assert any("VOTE.ANY" in ln for ln in lines[skips[0][0] - 12:skips[0][0]])
    plain = _compiled(rescale_at_wait=True)
    assert len(lines) - len(rep.sass_lines(plain)) < 40        # the vote and the kept max only


@pytest.mark.parametrize("name", ["attn8", "attn8_64", "attn9", "attn9_64", "attn9_long"])
def test_the_device_sweeps_build(name):
    """Every variant of benchmarks/attention.py's sweeps of this field is a valid policy, and
    the shipped default at every S above ``SHORT_SEQ`` is among the variants of the latest
    sweep or A/B set that chose it (benchmarks/attention_ab.py's "d128l13", then "eaw17" at
    D=64 and D=128 non-causal; "attn9": session 9 call A made its ``dynamic_tiles`` variant the D=128 causal
    default; "attn8" / "attn8_64" held the defaults of their day; scripts/gpu_attn8.sh and
    gpu_attn9.sh run them on the H200)."""
    spec = importlib.util.spec_from_file_location(
        "attention_bench", os.path.join(ROOT, "benchmarks", "attention.py"))
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    from warpstage.ops.attention_plan import WGMMA_DEFAULTS
    newer = dict(_ab_sets()["d128l13"])     # session 13 took D=128 non-causal's default there,
    newer.update(_ab_sets()["eaw17"])       # session 19 exp_after_wait at D=64 and D=128's
    for (d, causal), variants in bench.SWEEPS[name].items():
        keys = [FlashAttentionWgmma(head_dim=d, causal=causal, **f).__static_key__()
                for f in variants]
        shipped = FlashAttentionWgmma(head_dim=d, causal=causal, **WGMMA_DEFAULTS[(d, causal)])
        if (d, causal) in newer:
            assert shipped.__static_key__() in [
                FlashAttentionWgmma(head_dim=d, causal=causal, **f).__static_key__()
                for f in newer[(d, causal)]]
        elif name.startswith("attn9"):
            assert shipped.__static_key__() in keys
        assert len(set(keys)) == len(keys)


def _ab_sets():
    spec = importlib.util.spec_from_file_location(
        "attention_ab_bench", os.path.join(ROOT, "benchmarks", "attention_ab.py"))
    ab = importlib.util.module_from_spec(spec)
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    try:
        spec.loader.exec_module(ab)
    finally:
        sys.path.remove(os.path.join(ROOT, "benchmarks"))
    return ab.SETS


def test_the_d128_default_is_the_measured_variant():
    """D=128 non-causal's default past SHORT_SEQ is the variant session 13 measured (RESULTS.md
    "Session 13, device call C": ``attention_ab.py --set d128l13``), and at S_q <= SHORT_SEQ the
    short table brings back the 2-warpgroup 128-key kernel that call B measured there."""
    from warpstage.ops.attention_plan import wgmma_policy_for
    measured = [FlashAttentionWgmma(head_dim=128, **f).__static_key__()
                for f in _ab_sets()["d128l13"][(128, False)]]
    long = wgmma_policy_for(128, "BFloat16", False, 128 ** -0.5)
    assert long.consumer_wgs == 3 and long.tile_n == 80
    assert FlashAttentionWgmma(head_dim=128, **{f: getattr(long, f) for f in (
        "tile_n", "num_stages", "consumer_wgs", "fma_select", "rescale_threshold",
        "dynamic_tiles", "skip_idle", "partial_last")}).__static_key__() in measured
    short = wgmma_policy_for(128, "BFloat16", False, 128 ** -0.5, short=True)
    assert (short.consumer_wgs, short.tile_n, short.dynamic_tiles) == (2, 128, True)
    assert not short.skip_idle and not short.partial_last
    from warpstage.ops.attention_plan import is_short
    assert [is_short(s, 128, False) for s in (1024, 1536, 1537, 2048)] == [True, True, False,
                                                                           False]
    assert is_short(2048, 128, True) and is_short(2048, 64, False) and not is_short(2049, 64, 0)
