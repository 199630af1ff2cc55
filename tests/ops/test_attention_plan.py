"""``warpstage/ops/attention_plan.py``: what a ``ws.ops.flash_attention`` call runs, and
``ws.explain(ws.ops.flash_attention, ...)`` naming the kernel, the policy and each fallback with
its reason. Plans only: nothing is launched, so this runs without a GPU or the simulator."""
import numpy as np
import pytest

import warpstage as ws
from dtypes_helper import numpy_dtype
from warpstage.ops import attention_plan
from warpstage.ops.attention_plan import plan_call

BF16 = numpy_dtype("bfloat16")


def zeros(*shape):
    return np.zeros(shape, BF16)


def misaligned(*shape):
    """A bf16 array 2 bytes past 16-byte alignment (TMA cannot read it)."""
    flat = np.zeros(1 + int(np.prod(shape)), BF16)
    x = flat[1:].reshape(shape)
    assert x.__array_interface__["data"][0] % 16 != 0
    return x


def test_fast_path_has_no_fallback(monkeypatch):
    monkeypatch.setattr(attention_plan, "_wgmma_device", lambda ta: True)
    monkeypatch.setattr(attention_plan, "WGMMA_MIN_WORK", 1)
    q = zeros(2, 4, 300, 128)
    plan = plan_call(q, q, q, causal=True)
    assert plan.kernel == "wgmma" and plan.fallbacks == [] and plan.pad_to is None
    assert plan.policy.head_dim == 128 and plan.policy.causal
    text = ws.explain(ws.ops.flash_attention, q, q, q, causal=True, print_table=False)
    assert "flash_attention_wgmma_kernel" in text and "fallbacks: none" in text
    assert "WGMMA_DEFAULTS[(128, True)]" in text and "'dynamic_tiles': True" in text


def test_padded_head_dim_is_named_with_its_cost():
    q = zeros(1, 2, 70, 80)
    plan = plan_call(q, q, q, mma="wgmma")
    assert plan.pad_to == 96 and plan.policy.head_dim == 96
    fallbacks = dict(plan.fallbacks)
    assert "D = 80" in fallbacks["head dimension"] and "17%" in fallbacks["head dimension"]
    assert "epilogue" not in fallbacks          # D = 96 stores by TMA too (64 x 32 blocks)


def test_head_dim_96_runs_natively_on_wgmma():
    q = zeros(1, 2, 70, 96)
    plan = plan_call(q, q, q, mma="wgmma")
    assert plan.pad_to is None and plan.policy.head_dim == 96
    assert plan.fallbacks == [] and plan.policy.tma_store and plan.policy.out.swizzle == 64


def test_head_dim_96_policy_follows_the_sequence_length():
    """D = 96: 3 consumer warpgroups with 112-key tiles past SHORT_SEQ, 2 with 128 keys and
    dynamic_tiles up to it (192-row tiles leave 1024 rows' last block a third full); causal the
    claimed persistent grid (session 12's sweeps, attention_plan.WGMMA_DEFAULTS)."""
    long, short = (plan_call(q, q, q, mma="wgmma").policy
                   for q in (zeros(1, 1, 4096, 96), zeros(1, 1, 1024, 96)))
    assert (long.consumer_wgs, long.tile_n, long.dynamic_tiles) == (3, 112, False)
    assert (short.consumer_wgs, short.tile_n, short.dynamic_tiles) == (2, 128, True)
    causal = plan_call(*(zeros(1, 1, 4096, 96),) * 3, causal=True, mma="wgmma").policy
    assert causal.dynamic_tiles and causal.persistent and causal.rescale_threshold == 8.0


def test_head_dim_128_policy_follows_the_sequence_length():
    """D = 128 non-causal: 3 consumer warpgroups of 80 keys past S_q = 1536 (SHORT_SEQ_AT), the
    2-warpgroup 128-key kernel up to it, and explain names the bound (session 13 calls B-D)."""
    plans = {s: plan_call(*(zeros(1, 1, s, 128),) * 3, mma="wgmma") for s in (1536, 2048, 4096)}
    assert {s: (p.policy.consumer_wgs, p.policy.tile_n) for s, p in plans.items()} == {
        1536: (2, 128), 2048: (3, 80), 4096: (3, 80)}
    assert plans[2048].policy.skip_idle and plans[2048].policy.dynamic_tiles
    assert any(w == "short sequence" and "S_q <= 1536" in y for w, y in plans[1536].choices)
    assert not any(w == "short sequence" for w, _ in plans[2048].choices)
    causal = plan_call(*(zeros(1, 1, 2048, 128),) * 3, causal=True, mma="wgmma").policy
    assert (causal.consumer_wgs, causal.tile_n) == (2, 128)


@pytest.mark.parametrize("d, seq, tile_n, wgs", [(128, 4096, 128, 2), (128, 4096, 64, 3),
                                                (128, 4096, 80, 3), (96, 4096, 128, 2),
                                                (128, 1024, 64, 2), (64, 4096, 128, 3)])
def test_a_wider_key_tile_than_a_three_warpgroup_default_takes_two(d, seq, tile_n, wgs):
    """A tile_n wider than a 3-warpgroup default's (D=128 past S_q=1536: 80 keys; D=96: 112)
    runs 2 consumer warpgroups, which hold it without spilling (3 warpgroups of 128 keys at
    D=128 spill 368 bytes); narrower or equal keeps 3; explain says why; a given consumer_wgs
    stays."""
    q = zeros(1, 1, seq, d)
    plan = plan_call(q, q, q, mma="wgmma", tile_n=tile_n)
    assert (plan.policy.tile_n, plan.policy.consumer_wgs) == (tile_n, wgs)
    said = [y for w, y in plan.choices if w == "consumer warpgroups"]
    assert bool(said) == (wgs == 2 and plan_call(q, q, q, mma="wgmma").policy.consumer_wgs == 3)
    if said:
        assert f"tile_n={tile_n}" in said[0] and "consumer_wgs=3" in said[0]
    kept = plan_call(q, q, q, mma="wgmma", tile_n=tile_n, policy={"consumer_wgs": 3}).policy
    assert kept.consumer_wgs == 3


def test_mma_sync_in_the_simulator_says_why():
    q = zeros(1, 1, 64, 64)
    plan = plan_call(q, q, q)
    assert plan.kernel == "mma.sync"
    assert any(w == "kernel" and "not on a GPU" in y for w, y in plan.fallbacks)
    plan = plan_call(q, q, q, mma="mma.sync")          # asked for: not a fallback
    assert plan.fallbacks == [] and ("kernel", "mma='mma.sync'") in plan.choices


def test_the_reasons_auto_leaves_wgmma(monkeypatch):
    monkeypatch.setattr(attention_plan, "_wgmma_device", lambda ta: True)
    q = zeros(1, 1, 64, 64)
    why = dict(plan_call(q, q, q).fallbacks)["kernel"]
    assert "WGMMA_MIN_WORK" in why                     # too little work
    monkeypatch.setattr(attention_plan, "WGMMA_MIN_WORK", 1)
    x = misaligned(1, 1, 64, 64)
    plan = plan_call(x, x, x)
    assert plan.kernel == "mma.sync"
    assert "16-byte alignment" in dict(plan.fallbacks)["kernel"]
    assert "cp.async" in dict(plan.fallbacks)["K/V loads"]


def test_copies_for_wgmma_only_features_are_named():
    x = misaligned(1, 2, 64, 64)
    k = misaligned(1, 1, 64, 64)
    plan = plan_call(x, k, k, return_lse=True)
    assert plan.kernel == "wgmma" and plan.copy
    why = dict(plan.fallbacks)["copies"]
    assert "return_lse=True" in why and "grouped K/V heads (H_q / H_kv = 2)" in why
    assert "TMA cannot read" in why


def test_epilogue_and_alignment_choices():
    q, k = zeros(1, 1, 100, 64), zeros(1, 1, 150, 64)
    plan = plan_call(q, k, k, causal=True, causal_align="bottom_right", policy=dict(
        tma_store=False))
    assert plan.kernel == "wgmma"                      # bottom-right with S_q != S_k
    assert "tma_store=False was given" in dict(plan.fallbacks)["epilogue"]
    assert "bottom_right (S_q = 100, S_k = 150)" in dict(plan.choices)["causal alignment"]


def test_explain_raises_what_the_call_raises():
    q = zeros(1, 4, 64, 64)
    with pytest.raises(ws.ArgumentError, match="H_kv dividing H_q"):
        ws.explain(ws.ops.flash_attention, q, zeros(1, 3, 64, 64), zeros(1, 3, 64, 64))
    with pytest.raises(ws.ArgumentError, match="mma.sync kernel has no"):
        ws.explain(ws.ops.flash_attention, q, q, q, return_lse=True, mma="mma.sync")


@pytest.mark.parametrize("shape", [(0, 1, 64, 64), (1, 0, 64, 64), (1, 1, 0, 64)])
def test_empty_call_plans_no_kernel(shape):
    q = zeros(*shape)                       # B, H (H_q = H_kv = 0) or S_q zero: no rows
    plan = plan_call(q, q, q)
    assert plan.kernel is None
    assert "kernel:    none" in ws.explain(ws.ops.flash_attention, q, q, q, print_table=False)
    assert ws.ops.flash_attention(q, q, q).shape == shape
    with pytest.raises(ws.ArgumentError, match="H_kv = 0 does not divide H_q = 2"):
        plan_call(zeros(1, 2, 64, 64), zeros(1, 0, 64, 64), zeros(1, 0, 64, 64))


@pytest.mark.parametrize("kshape, vshape, says, fix", [
    ((1, 2, 64, 64), (1, 2, 80, 64), "k and v differ in S_k (axis 2: 64 against 80)", "one shape"),
    ((2, 2, 64, 64), (2, 2, 64, 64), "k and v have B = 2, q B = 1", "same batch"),
    ((1, 2, 64, 32), (1, 2, 64, 32), "k and v have D = 32, q D = 64", "one head dimension"),
    ((1, 3, 64, 64), (1, 3, 64, 64), "H_kv = 3 does not divide H_q = 4", "repeat_interleave")])
def test_shape_mismatch_names_the_dimension(kshape, vshape, says, fix):
    with pytest.raises(ws.ArgumentError) as e:
        plan_call(zeros(1, 4, 64, 64), zeros(*kshape), zeros(*vshape))
    assert says in str(e.value) and fix in str(e.value)


def test_zero_head_dim_is_named_as_such():
    with pytest.raises(ws.ArgumentError, match=r"D = 0 \(no features per head\)"):
        plan_call(zeros(1, 1, 8, 0), zeros(1, 1, 8, 0), zeros(1, 1, 8, 0))


@pytest.mark.parametrize("policy, kw, match", [
    ({"consumer_wgz": 3}, {}, r"policy field 'consumer_wgz' is not a field.*Fix: 'consumer_wgs'"),
    ({"tile_m": 64}, {}, r"policy field 'tile_m' is not a field"),
    ({"kv_group": 2}, {}, r"come from the call's arguments"),
    ([1], {}, r"expected None or a dict"),
    ({"consumer_wgs": 3}, {"mma": "mma.sync"}, r"mma.sync kernel does not read"),
    ({"tile_n": 80}, {"tile_n": 128}, r"tile_n given twice"),
    ({"shared_boundary": [True]}, {"mma": "wgmma"},
     r"'shared_boundary' = \[True\] \(list\); expected a bool.*Fix:")])
def test_policy_errors(policy, kw, match):
    q = zeros(1, 1, 64, 64)
    with pytest.raises(ws.ArgumentError, match=match):
        plan_call(q, q, q, policy=policy, **kw)
    assert plan_call(q, q, q, mma="wgmma", policy={"tile_n": 64}, tile_n=64).policy.tile_n == 64


def test_shipped_fields_give_way_to_the_callers_and_explain_says_so():
    """A shipped schedule field that cannot run with fields the caller gave yields
    (``attention_plan.yielding_field``) and explain lists it; a conflict between fields the
    caller gave stays an error. D=128 non-causal S_q <= 1536 ships claimed tiles with
    overlapped boundaries (session 14)."""
    q = zeros(1, 1, 300, 128)
    short = plan_call(q, q, q, mma="wgmma").policy
    assert short.dynamic_tiles and short.overlap_tiles and short.q_buffers == 2
    three = plan_call(q, q, q, mma="wgmma", num_stages=3)       # no room for a 2nd Q buffer
    assert three.policy.num_stages == 3 and not three.policy.overlap_tiles
    assert three.policy.dynamic_tiles
    said = dict(three.fallbacks)
    assert "second Q buffer (32768 bytes) does not fit" in said["overlap_tiles"]
    text = ws.explain(ws.ops.flash_attention, q, q, q, mma="wgmma", num_stages=3,
                      print_table=False)
    assert "the shipped overlap_tiles=True is off" in text
    one = plan_call(q, q, q, mma="wgmma", policy={"persistent": False})
    assert not (one.policy.persistent or one.policy.dynamic_tiles or one.policy.overlap_tiles)
    assert {"dynamic_tiles", "overlap_tiles"} <= set(dict(one.fallbacks))
    serial = plan_call(q, q, q, mma="wgmma", policy={"split_kv": False}).policy
    assert not serial.split_kv and not serial.overlap_tiles
    for kw in ({}, {"tile_n": 128}):                # the caller's own conflict: the same error
        with pytest.raises(ValueError, match=r"skip_idle: expected False with overlap_tiles"):
            plan_call(q, q, q, mma="wgmma", policy={"skip_idle": True}, **kw)
    assert not any(w == "overlap_tiles" for w, _ in plan_call(q, q, q, mma="wgmma").fallbacks)


def test_explain_raises_the_grid_limit_and_names_an_unused_policy():
    # explain raises what the call raises (B * H past CUDA's grid.y limit), and says when a
    # policy= is not used because mma='auto' took the mma.sync kernel (the simulator)
    x = np.broadcast_to(zeros(1, 1, 1, 64), (1, 70000, 1, 64))
    for f in (lambda: ws.explain(ws.ops.flash_attention, x, x, x, mma="mma.sync",
                                 print_table=False),
              lambda: plan_call(x, x, x, mma="mma.sync")):
        with pytest.raises(ws.ArgumentError, match=r"B \* H = 70000 CTAs along grid y"):
            f()
    q = zeros(1, 1, 64, 64)
    said = dict(plan_call(q, q, q, policy={"consumer_wgs": 3}).fallbacks)
    assert "policy={'consumer_wgs': 3} is not used" in said["policy"]
    assert "policy" not in dict(plan_call(q, q, q).fallbacks)


def test_an_unused_policy_is_still_checked_as_the_wgmma_kernel_would():
    # mma='auto' in the simulator runs mma.sync, so policy= goes unused; a value the wgmma
    # kernel refuses must fail here too, not first on a GPU (review15)
    q = zeros(1, 1, 64, 64)
    assert plan_call(q, q, q).kernel == "mma.sync"
    for bad, says in (({"shared_boundary": "yes"}, r"shared_boundary: expected True or False"),
                      ({"consumer_wgs": 5}, r"consumer_wgs")):
        with pytest.raises(ValueError, match=says):
            plan_call(q, q, q, policy=bad)
    assert plan_call(q, q, q, policy={"shared_boundary": False}).kernel == "mma.sync"
