"""How ``ws.ops.flash_attention`` (``attention.py``) decides what a call runs: the measured
tables (``WGMMA_DEFAULTS``, ``WGMMA_SHORT``, ``WGMMA_MIN_WORK``), the cached policies
(``wgmma_policy_for``, ``policy_for``), and ``plan_call``, which checks a call's arguments and
returns its ``AttentionPlan``: the kernel, the policy and every fallback with its reason.
``explain`` prints that plan (``ws.explain(ws.ops.flash_attention, q, k, v, ...)``); the op
runs it (``flash_attention_eager``). Host code only: nothing here launches or copies.
"""
from __future__ import annotations

import functools
import math

from ..errors import ArgumentError
from ..runtime.target import default_target
from .attention_host import (check_grid, count, cp_async_ok, describe, finite_scale, flag,
                             tma_compatible)
from .attention_kernel import FlashAttention
from .attention_wgmma import FlashAttentionWgmma
from .descriptors import sm_count
from .host_fixes import cast_code, contiguous_code, fresh_copy_code

__all__ = ["AttentionPlan", "plan_call", "explain", "wgmma_policy_for", "policy_for",
           "WGMMA_DEFAULTS", "WGMMA_SHORT", "SHORT_SEQ", "SHORT_SEQ_AT", "short_bound",
           "is_short", "shipped_fields", "widened_to_two", "WGMMA_MIN_WORK", "NATIVE_HEAD_DIMS",
           "PADDED_HEAD_DIMS", "SIM_CTAS", "MMA_CHOICES"]

MMA_CHOICES = ("auto", "wgmma", "mma.sync")
WGMMA_MIN_WORK = 1 << 31
"""``mma='auto'`` picks the wgmma kernel from B * H * S_q * S_k * D >= this on. Measured on the
H200 (2026-11-29 13:20 UTC, benchmarks/flash_attention.py, bf16, non-causal, after descriptor
arguments moved to the generated launch path): at (2, 16, 1024, 1024, D) = 2^31 (D=64) the wgmma
kernel is 1.20x (D=64) and 1.12x (D=128) faster than mma.sync, at (2, 8, 8192, 8192, D) 1.36x and
1.07x. Smaller problems were not measured, so they keep the mma.sync kernel."""

_WS_DTYPES = {"f16": "Float16", "bf16": "BFloat16"}


PADDED_HEAD_DIMS = ()
"""Head dimensions the wgmma kernel takes natively (``FlashAttentionWgmma.head_dims``) that the
op still zero-pads to the next of ``NATIVE_HEAD_DIMS``: none since D = 96 was measured (session 5,
2026-12-02 02:19 UTC, sweep "attn5", device time, bf16): native 530 TFLOP/s at B=4 H=16 S=4096
against 505 for the padded D=128 kernel's useful work (673 x 96/128, its copy not counted),
causal 467 against 441; at S=1024 406 against 442 (causal 280 against 314), where the padded
path's copy of q, k and v (~13% of that kernel's time) evens it out."""

NATIVE_HEAD_DIMS = tuple(d for d in FlashAttentionWgmma.head_dims if d not in PADDED_HEAD_DIMS)
"""Head dimensions the op runs as they are (64 and 128 both kernels, 192 and 256 the wgmma
kernel); another D up to 256 is zero-padded to the next of these."""

SIM_CTAS = 3
"""CTAs of a persistent launch in the simulator: few, so each walks several output tiles."""

WGMMA_DEFAULTS = {
    (128, False): dict(tile_n=80, num_stages=2, consumer_wgs=3, fma_select=True,
                       rescale_threshold=8.0, dynamic_tiles=True, skip_idle=True,
                       partial_last=True, exp_after_wait=True),
    (128, True): dict(tile_n=128, num_stages=2, fma_select=True, packed_p=True,
                      rescale_threshold=8.0, dynamic_tiles=True),
    (96, False): dict(tile_n=112, num_stages=2, consumer_wgs=3, fma_select=True),
    (96, True): dict(tile_n=128, num_stages=2, fma_select=True, packed_p=True,
                     rescale_threshold=8.0, dynamic_tiles=True),
    (64, False): dict(tile_n=128, num_stages=2, consumer_wgs=3, fma_select=True,
                      overlap_tiles=True, packed_p=True, rescale_at_wait=True,
                      exp_after_wait=True),
    (64, True): dict(tile_n=128, num_stages=3, consumer_wgs=3, late_wait=False, fma_select=True,
                     skip_idle=True),
    (192, False): dict(tile_n=96, num_stages=2, fma_select=True, rescale_threshold=8.0),
    (192, True): dict(tile_n=96, num_stages=2, fma_select=True, packed_p=True,
                      rescale_threshold=8.0, dynamic_tiles=True),
    (256, False): dict(tile_n=64, num_stages=2, fma_select=True, rescale_threshold=8.0),
    (256, True): dict(tile_n=64, num_stages=2, fma_select=True, packed_p=True,
                      rescale_threshold=8.0, dynamic_tiles=True),
}
"""The wgmma kernel's tiling per (D, causal), chosen by measurement on the H200
(benchmarks/attention.py --sweep, 2026-12-01 19:51-20:52 UTC, bf16; RESULTS.md), every variant
with split K/V rings, ping-pong turns, ftz exp2, the P V wait below the softmax and the
TMA-store epilogue. D=128: 128-key tiles, persistent: 658 TFLOP/s at S=4096 (1.00x cuDNN), 540
at S=1024 (1.07x); causal one CTA per tile: 578 (1.05x), 370 (1.07x). D=64: 3 consumer
warpgroups (192-row tiles), persistent: 481 (1.02x) and 371 (0.97x); causal 411 (1.04x) and
246 (1.04x). D=192 and 256 (session 4, 22:47 UTC, sweep "wide", device time): 96- and 64-key
tiles (2 stages fill shared memory): 722 and 702 TFLOP/s at S=4096 (1.03x and 0.96x cuDNN),
685 and 717 at S=2048; causal one CTA per tile: 616 and 626 (0.99x, 0.97x); the wider 112- and
80-key tiles were 6-14% slower. ``fma_select`` (the branch-free one-FFMA exponent; session 5,
sweep "attn5", device time) at D = 64 and 128: +1.1 to +2.3% at every measured point (D=128
S=4096 681 vs 673, S=1024 603 vs 589; D=64 508 vs 498 and 407 vs 399; causal +0.3 to +1.6%);
not yet measured at D = 96, 192 and 256, which keep the two-instruction exponent.
``skip_idle`` + ``partial_last`` at D=64 (session 6, sweep "attn6", device time: a consumer
warpgroup whose 64 rows all lie past S_q does no GEMM, softmax or store, and the partial row
blocks come last in the persistent order): B=16 H=16 S=1024 427 vs 405 TFLOP/s (0.99x against
0.94x cuDNN), S=2048 488 vs 483, S=4096 512 vs 513; ``skip_idle`` alone at D=64 causal: 373 vs
369 (S=2048), 427 vs 416 (S=4096). ``head_group`` (D=128 causal bands of heads) moved -2% to
+2% and ``lead_waits`` lost 1-9%: neither is on.
``packed_p`` + ``rescale_at_wait`` (session 7's packed bf16x2 P fragments and O's rescale at
its P V wait; session 8 sweeps "attn7" and "confirm8_*", device time): at D=64 non-causal with
``overlap_tiles`` (which needs ``skip_idle`` off) +0.9 to +2.3% at S = 2048-16384 over session
6's ``skip_idle`` + ``partial_last`` kernel (S=4096 517.5 vs 508.5, S=8192 515.2 vs 503.7) and
without the spill the 3-warpgroup ``overlap_tiles`` kernel had before them; at D=128 causal
+0.4 to +0.5% at S = 1024, 2048 and 4096 (five points, in both runs); at D=128 non-causal -0.4
to +1.1% (noise): not taken there.
``rescale_threshold=8.0`` at D=128 (session 8 call E, sweep "attn8", device time: O rescaled
only when a row's max rose by more than 2^8, FlashAttention-4's idea; 64 FMULs skipped per
unmasked K/V step): +0.4 to +1.4% at all six measured points (S=4096 696.7 vs 687.4, causal
606.5 vs 601.3; S=1024 594.1 vs 588.4, 611.9 vs 608.0, causal 396.7 vs 394.8, 427.8 vs
426.0), max error against SDPA 5.6e-4 -> 7.5e-4 at S=4096 (O and l carry the same factor: the
output and the LSE are exact up to rounding). Causal takes it in place of ``rescale_at_wait``
(the sweep's pairing). At D=64 it moved -0.8 to +1.4%: not taken.

Session 13 (``benchmarks/attention_ab.py --set d128s13`` / ``d128l13``, device time, rounds
taken in turn, and 2 s sustained windows under the power cap; RESULTS.md "Session 13, device
calls B and C", "call D"): D=128 non-causal past S_q = 1536 (``SHORT_SEQ_AT``) takes 3 consumer
warpgroups (192-row tiles) of 80 keys (160 registers each, no spills; 96 keys spill), claimed
first come first served (``dynamic_tiles``), the idle warpgroups of a partial row block skipped
and those blocks last: against session 8-12's 2-warpgroup 128-key kernel +0.6% (B=4 S=4096,
sustained +1.5%), +2.5% (B=2 S=8192, sustained +3.3%); at S=1024 the same kernel loses 2.6-6.6%
(a third-full last row block per head), so ``WGMMA_SHORT`` keeps 2 warpgroups of 128 keys
there; at B=8 S=2048 +1.5% (sustained +0.7%), at B=11 S=1536 even (-0.2%, sustained -0.3%):
hence the bound 1536 for D=128 non-causal. At D=128 causal the three warpgroups lost 1.7-5.4%
at S = 4096-16384 (a 192-row block's diagonal crosses 3-4 masked key tiles of 80; sustained
+1.1% at S=8192 only), with 64 keys and ``narrow_last`` 9-13%: not taken.

``WGMMA_SHORT`` overrides these for S_q <= ``SHORT_SEQ`` (``is_short``): D=64 causal there
takes 2 consumer warpgroups (128-row tiles: 302 TFLOP/s against 260 for 192-row tiles at B=16
H=16 S=1024, 0.93x against 0.80x cuDNN; equal at S=2048, session 4 sweep "short"), and starts
each output tile's first S before the last P V of the one before (``overlap_tiles``: 324
against 304 TFLOP/s, 0.99x cuDNN, session 5 sweep "attn5"; it spills with 3 consumer
warpgroups, and with 2 at S=4096 and at D=128 it was 1-9% slower, so nowhere else). D=64
non-causal there takes 3 stages (session 8, "confirm8_64": B=16 H=16 S=1024 434.6 against 424.2
for the 2-stage ``skip_idle`` kernel and 411.2 for the 2-stage default above, 1.01x cuDNN; at
S=16384 3 stages lose 4%, so only here). Session 8 call E moved the bound to S_q <= 2048: D=64
causal at B=8 H=16 S=2048 384.0 with 2 warpgroups and ``overlap_tiles`` against 372.1 for the
3-warpgroup kernel (1.01x against 0.98x cuDNN; at S=4096 it loses 2.6%), non-causal 3 stages
510.1 against 495.9 (calls C and E: +2.8 / +2.9%).

Session 9 call A (sweep "attn9", device time, against the shipped default in the same run):
``dynamic_tiles`` (persistent CTAs claiming the one-CTA grid's tiles from a global counter) at
D=128 causal: B=8 S=1024 437.3 against 396.2 (1.08x against 0.98x cuDNN), B=16 S=1024 480.1
against 430.4 (1.08x), S=2048 574.7 against 537.9, S=4096 633.9 against 611.1, so every S
there; at D=128 non-causal +0.5 to +4% at S <= 2048 (B=8 S=1024 597.2 against 574.5) but
-7.6% at S=4096 (649.3 against 702.8), so only in ``WGMMA_SHORT``.

Session 12 (``benchmarks/attention_ab.py --set wide12 / d96 / d96s``, device time, interleaved
with cuDNN; RESULTS.md "Session 12"): D = 96, 192 and 256 had kept session 4-5's fields. Over
them ``fma_select`` + ``rescale_threshold=8`` took D=192 S=4096 688 -> 751 TFLOP/s (1.23x
cuDNN), D=256 697 -> 772 (1.20x), S=1024 +7-8%; causal also ``packed_p`` + ``dynamic_tiles``
(the persistent claimed grid in place of one CTA per tile): D=192 643 -> 715 (1.14x), S=1024
459 -> 533 (1.09x), D=256 627 -> 715 (1.20x), S=1024 510 -> 584 (1.13x). D=96 took the
TMA-store epilogue in 64 x 32 blocks (its 64-byte swizzle; +22% at S=1024, +8% at S=4096 over
the scalar stores) and at S_q > ``SHORT_SEQ`` 3 consumer warpgroups with 112-key tiles (583
against 551 at S=4096, 1.18x cuDNN; at S=1024 their 192-row tiles leave the last row block a
third full: 459 against 504, so ``WGMMA_SHORT`` keeps 2 warpgroups there, with
``dynamic_tiles``: 512, 1.09x); causal D=96 the D=128 causal fields (514 at S=4096, 1.24x; 395
at S=1024, 1.17x). D=96's rescale threshold was not taken non-causal: no gain there, and its max
error against SDPA rose 2.3x (6.3e-4 -> 1.5e-3; the simulator's relative error at D=96 and
D=128 rose alike, 4%).

Session 19 (``benchmarks/attention_ab.py --set eaw17``, H100 80GB HBM3, device time, two runs of
9 and 21 rounds interleaved with cuDNN; RESULTS.md "Session 19"): ``exp_after_wait``
(FlashAttention-4's step order) over the D=64 and D=128 non-causal long defaults: D=64 B=4
S=4096 +3.3% / +2.9% (529 vs 512 TFLOP/s), S=8192 +1.2% / +1.4%, S=16384 -0.8% (one run);
D=128 S=4096 +0.8% / +2.7% (692 vs 674), S=8192 +1.4% / +1.0%, S=16384 +1.0%; errors against
SDPA unchanged (7.5e-4 at D=128 S=4096). Taken at both. FA4's own shape (2 warpgroups of 128,
160 or 192 keys, with or without it) stayed 1-6% behind the 3 x 80 kernel at S = 4096-16384
(set wide18): not taken."""

SHORT_SEQ = 2048
SHORT_SEQ_AT = {(128, False): 1536}
"""Per (D, causal), a bound other than ``SHORT_SEQ`` for ``WGMMA_SHORT`` (``is_short``). D=128
non-causal: at B=8 S=2048 the long default's 3 consumer warpgroups of 80 keys read +1.5% over
the short 2-warpgroup kernel (sustained +0.7%), at B=11 S=1536 -0.2% (+0.5% static order;
sustained -0.3 / +0.2%), at S=1024 -2.6 to -6.6% (session 13 calls B and D, device time)."""


def short_bound(head_dim: int, causal: bool) -> int:
    """The longest S_q that ``WGMMA_SHORT``'s fields apply to: ``SHORT_SEQ_AT``'s bound for
    (head_dim, causal), else ``SHORT_SEQ``."""
    return SHORT_SEQ_AT.get((head_dim, bool(causal)), SHORT_SEQ)


def is_short(seq_q: int, head_dim: int, causal: bool) -> bool:
    """Whether ``WGMMA_SHORT``'s fields apply: S_q at most ``short_bound(head_dim, causal)``."""
    return seq_q <= short_bound(head_dim, causal)

WGMMA_SHORT = {
    (64, True): dict(consumer_wgs=2, overlap_tiles=True, skip_idle=False),
    (64, False): dict(num_stages=3, dynamic_tiles=True, exp_after_wait=False),
    (128, False): dict(tile_n=128, consumer_wgs=2, skip_idle=False, partial_last=False,
                       overlap_tiles=True, packed_p=True, exp_after_wait=False),
    (128, True): dict(overlap_tiles=True),
    (96, False): dict(tile_n=128, consumer_wgs=2, dynamic_tiles=True),
}
"""Fields over ``WGMMA_DEFAULTS`` for S_q <= ``short_bound`` (``is_short``; the measurements
are in ``WGMMA_DEFAULTS``' docstring). D=128 non-causal since session 14: 2 consumer
warpgroups of 128 keys on claimed tiles (``dynamic_tiles``) with the tile boundaries
overlapped (``overlap_tiles``) and packed P (``benchmarks/attention_ab.py --set d128d14``,
device time, interleaved, RESULTS.md "Session 14, device call B"): S=1024 B=8 615.6 TFLOP/s
against 599.7 for claimed tiles alone and 602.1 for the static schedule's overlap (1.021x
cuDNN's 602.8; 0.99x before), B=4 587.1 (1.014x cuDNN), B=16 631.4 (1.033x); at S=2048 even
with the long default (681.4 against 682.2), at S=4096 -0.9%, so it stays short. A caller's
``tile_n`` / ``num_stages`` whose ring leaves no room for the second Q buffer drops
``overlap_tiles`` (``wgmma_policy_for``). Claimed tiles with overlapped boundaries also
won in call C (``--set d128c14 / d64s14``): D=128 causal at S=1024 +1.2% (B=8 449.4 against
443.9, 1.09x cuDNN) and +1.1% (B=16), +0.2% at S=4096 (not measured longer: short only);
D=64 non-causal short (3 stages, static overlap) with claimed tiles +1.6% at B=16 S=1024
(447.6 against 440.4, 1.03x cuDNN), +0.8% at B=8 S=2048. D=96 lost with them (-15% with 3
warpgroups, -3.4% with 2 at S=1024): not taken."""


def shipped_fields(head_dim: int, causal: bool, short: bool) -> dict:
    """``WGMMA_DEFAULTS[(head_dim, causal)]`` with ``WGMMA_SHORT``'s fields over it when
    ``short``."""
    fields = dict(WGMMA_DEFAULTS[(head_dim, causal)])
    if short:
        fields.update(WGMMA_SHORT.get((head_dim, causal), {}))
    return fields


def widened_to_two(base: dict, fields: dict, overrides=()) -> bool:
    """Whether a policy built from the shipped ``base`` fields runs 2 consumer warpgroups in
    place of base's 3: its ``tile_n`` (given by the caller) is wider than base's and
    ``consumer_wgs`` was not given. Three warpgroups have 160 registers per consumer thread,
    and the shipped widths are the widest that fit there (D=128: 80 keys; 96 spill 48 bytes,
    128 spill 368; D=96: 112 keys, 128 spill 144 bytes); two have 240."""
    return (base.get("consumer_wgs") == 3 and "consumer_wgs" not in dict(overrides)
            and fields["tile_n"] > base["tile_n"])


@functools.lru_cache(maxsize=64)
def wgmma_policy_for(head_dim: int, dtype_name: str, causal: bool, scale: float,
                     tile_n=None, num_stages=None, causal_align: str = "top_left",
                     kv_group: int = 1, short: bool = False,
                     overrides: tuple = ()) -> FlashAttentionWgmma:
    """The wgmma + TMA policy for a configuration (cached like ``policy_for``): the measured
    ``WGMMA_DEFAULTS`` for (head_dim, causal), with ``short`` (``is_short``)
    ``WGMMA_SHORT``'s fields over them, then ``overrides`` ((field, value) pairs: the
    autotuner's candidates), and ``tile_n`` / ``num_stages`` overriding. A key tile wider than
    a 3-warpgroup default's, with ``consumer_wgs`` not given, runs 2 consumer warpgroups
    (``widened_to_two``); a shipped schedule field that cannot run with the caller's fields
    gives way (``yielding_field``: a shipped ``overlap_tiles`` whose second Q buffer does not
    fit in shared memory beside the caller's ring, D=128 with 3 stages of 128 keys: 256 KiB
    with it, 224 KiB without; the shipped ``dynamic_tiles`` / ``overlap_tiles`` under
    ``persistent=False``); ``explain`` lists each."""
    import warpstage as ws
    base = shipped_fields(head_dim, causal, short)
    fields = dict(base, causal_align=causal_align, kv_group=kv_group)
    fields.update(overrides)
    if tile_n is not None:
        fields["tile_n"] = tile_n
    if num_stages is not None:
        fields["num_stages"] = num_stages
    if widened_to_two(base, fields, overrides):
        fields["consumer_wgs"] = 2
    given = set(dict(overrides)) | {n for n, x in (("tile_n", tile_n), ("num_stages", num_stages))
                                    if x is not None}
    while True:
        try:
            return FlashAttentionWgmma(head_dim=head_dim, dtype=getattr(ws, dtype_name),
                                       causal=causal, softmax_scale=scale, **fields)
        except ValueError as e:
            drop = yielding_field(e, base, fields, given)
            if drop is None:
                raise
            fields[drop] = False


def yielding_field(err, base: dict, fields: dict, given):
    """The shipped schedule field that gives way to the caller's fields after ``err`` (the
    policy's OperandError), or None: a shipped boolean field set True that the caller did not
    give and that ``err`` names (``persistent=False`` refuses the shipped ``dynamic_tiles``,
    ``split_kv=False`` the shipped ``overlap_tiles``), or the shipped ``overlap_tiles`` when
    shared memory overflows (its second Q buffer beside the caller's ``tile_n`` /
    ``num_stages`` ring). An error about a field the caller gave stays the caller's."""
    name = "overlap_tiles" if getattr(err, "smem_overflow", False) else getattr(err, "field", None)
    if name in given or base.get(name) is not True or fields.get(name) is not True:
        return None
    return name


@functools.lru_cache(maxsize=64)
def policy_for(head_dim: int, dtype_name: str, causal: bool, scale: float, copy: str,
               tile_m: int = 128, tile_n: int = 128, num_stages: int = 3) -> FlashAttention:
    """The FlashAttention policy for a configuration (cached: one object per configuration,
    so repeated calls reuse the compiled kernel's key cheaply)."""
    import warpstage as ws
    return FlashAttention(head_dim=head_dim, dtype=getattr(ws, dtype_name), causal=causal,
                          softmax_scale=scale, copy=copy, tile_m=tile_m, tile_n=tile_n,
                          num_stages=num_stages)


def _shape_mismatch(q, k, v):
    """(what differs, the fix) for q, k, v shapes (4-tuples) that do not fit together, or
    None."""
    if k != v:
        axis = next(i for i in range(4) if k[i] != v[i])
        name = ("B", "H_kv", "S_k", "D")[axis]
        return (f"k and v differ in {name} (axis {axis}: {k[axis]} against {v[axis]})",
                "pass k and v of one shape (B, H_kv, S_k, D)")
    if k[0] != q[0]:
        return (f"k and v have B = {k[0]}, q B = {q[0]}",
                "pass the same batch in q, k and v (or expand k and v over the batch)")
    if k[3] != q[3]:
        return (f"k and v have D = {k[3]}, q D = {q[3]}",
                "project q, k and v to one head dimension")
    if (k[1] == 0 and q[1] != 0) or (k[1] != 0 and q[1] % k[1]):      # H_q = H_kv = 0: empty
        return (f"H_kv = {k[1]} does not divide H_q = {q[1]}",
                "repeat k and v to a divisor of H_q heads (k.repeat_interleave(r, dim=1))")
    return None


def _check_policy(policy, mma, tile_n, num_stages) -> None:
    """``policy``: None, or a dict of ``FlashAttentionWgmma`` fields for the wgmma kernel (the
    autotuner's candidates; ``flash_attention_eager`` and ``explain``), each field known, not
    one the op sets from its own arguments, and not given twice."""
    if policy is None:
        return
    if not isinstance(policy, dict):
        raise ArgumentError(f"flash_attention: policy={policy!r}; expected None or a dict of "
                            "FlashAttentionWgmma fields (e.g. {'consumer_wgs': 3}). Fix: "
                            "policy={'consumer_wgs': 3}, or leave it out")
    if mma == "mma.sync":
        raise ArgumentError(f"flash_attention(mma='mma.sync'): policy={policy!r} holds fields "
                            "of the wgmma kernel, which the mma.sync kernel does not read. Fix: "
                            "mma='wgmma', or leave policy out")
    import difflib
    fields = [f for f in FlashAttentionWgmma.key_fields if f not in ("causal_align", "kv_group")]
    for name in policy:
        if name not in fields:
            near = difflib.get_close_matches(str(name), fields, n=1)
            raise ArgumentError(f"flash_attention: policy field {name!r} is not a field of the "
                                f"wgmma kernel's policy (FlashAttentionWgmma: {', '.join(fields)};"
                                " causal_align, kv_group and the head dimension, dtype and scale "
                                "come from the call's arguments). Fix: "
                                + (f"{near[0]!r}" if near else "one of those fields"))
    for name, value in policy.items():      # plan_call keys the policy cache by the values
        try:
            hash(value)
        except TypeError:
            raise ArgumentError(f"flash_attention: policy field {name!r} = {value!r} "
                                f"({type(value).__name__}); expected a bool, number, string or "
                                f"None (a FlashAttentionWgmma field's value). Fix: "
                                f"policy={{{name!r}: ...}} with one such value") from None
    for name, given in (("tile_n", tile_n), ("num_stages", num_stages)):
        if given is not None and name in policy and policy[name] != given:
            raise ArgumentError(f"flash_attention: {name} given twice, {name}={given} and "
                                f"policy={{{name!r}: {policy[name]!r}}}. Fix: give it once")


def _wgmma_device(ta) -> bool:
    """Whether the launch runs on a GPU with wgmma (sm_90): CUDA tensors, the cuda target."""
    if ta.device != "cuda":
        return False
    from ..runtime.target import device_properties
    return default_target() == "cuda" and device_properties(ta.device_index or 0).cc_major == 9


class AttentionPlan:
    """What one ``flash_attention`` call runs, decided before anything is launched (and shown
    by ``ws.explain(ws.ops.flash_attention, ...)``): ``kernel`` ('wgmma', 'mma.sync', or None
    when there are no rows to compute), its ``policy``, ``pad_to`` (the head dimension the
    inputs are zero-padded to, or None), ``copy`` (q, k, v copied into TMA-readable tensors),
    and the reasons: ``fallbacks`` ((what, why) pairs: every way the call runs slower than the
    fast path would) and ``choices`` ((what, why): the selections that are not fallbacks)."""

    def __init__(self, q_shape, kv_shape, dtype, causal, return_lse, tensor_args):
        self.q_shape, self.kv_shape, self.dtype = q_shape, kv_shape, dtype
        self.causal, self.return_lse, self.tensor_args = causal, return_lse, tensor_args
        self.kernel = self.policy = self.pad_to = None
        self.copy = False
        self.fallbacks, self.choices = [], []


def plan_call(q, k, v, causal=False, scale=None, *, causal_align="top_left", return_lse=False,
              tile_n=None, num_stages=None, mma="auto", policy=None) -> AttentionPlan:
    """The ``AttentionPlan`` of ``flash_attention_eager(q, k, v, ...)`` (same arguments): every
    check of the call (the same ArgumentErrors), then the kernel, the policy and each fallback
    with its reason. Launches nothing, copies nothing."""
    tq, tk, tv = describe("q", q), describe("k", k), describe("v", v)
    causal = flag("causal", causal)
    tile_n = count("tile_n", tile_n, "keys per shared-memory stage, a multiple of 16 in "
                   "[16, 256]", "tile_n=128 (or None for the default)")
    num_stages = count("num_stages", num_stages, "the shared-memory ring depth, an int in "
                       "[1, 8]", "num_stages=2 (or None for the default)")
    dtype = _WS_DTYPES.get(str(tq.dtype))
    if dtype is None or tk.dtype != tq.dtype or tv.dtype != tq.dtype:
        names = ", ".join(str(getattr(t.owner, "dtype", t.dtype)) for t in (tq, tk, tv))
        raise ArgumentError(f"flash_attention: q, k, v have dtypes {names}; expected one of "
                            "float16 or bfloat16 (f16 / bf16) for all three. Fix: "
                            f"{cast_code((tq, tk, tv), 'bfloat16')} (or float16) each of them")
    batch, heads, seq_q, head_dim = tq.shape
    if head_dim == 0:
        raise ArgumentError(f"flash_attention: q has shape {tuple(tq.shape)}: head dimension D = "
                            "0 (no features per head); expected (B, H, S_q, D) with D >= 1. Fix: "
                            "check q's last axis (a (B, S, H, D) tensor's .transpose(1, 2))")
    if not 0 < head_dim <= NATIVE_HEAD_DIMS[-1]:
        raise ArgumentError(f"flash_attention: head dimension D = {head_dim}; the kernels take D "
                            f"up to {NATIVE_HEAD_DIMS[-1]} ({', '.join(map(str, NATIVE_HEAD_DIMS))}"
                            " natively, other sizes padded). Fix: split the heads' D into parts "
                            f"of at most {NATIVE_HEAD_DIMS[-1]}, or use SDPA")
    mismatch = _shape_mismatch(tuple(tq.shape), tuple(tk.shape), tuple(tv.shape))
    if mismatch:
        what, fix = mismatch
        raise ArgumentError(f"flash_attention: shapes q {tuple(tq.shape)}, k {tuple(tk.shape)}, "
                            f"v {tuple(tv.shape)}: {what}; expected q (B, H_q, S_q, D) and k, v "
                            "(B, H_kv, S_k, D) with the same B and D and H_kv dividing H_q "
                            "(grouped-query attention: query head h reads K/V head h // (H_q / "
                            f"H_kv)). Fix: {fix}")
    _check_policy(policy, mma, tile_n, num_stages)
    if causal_align not in ("top_left", "bottom_right"):
        raise ArgumentError(f"flash_attention: causal_align={causal_align!r}; expected "
                            "'top_left' (SDPA's is_causal) or 'bottom_right' (FlashAttention's, "
                            "for decoding). Fix: causal_align='top_left'")
    return_lse = flag("return_lse", return_lse)
    kv_group = heads // tk.shape[1] if tk.shape[1] else 1
    devices = [(t.device, t.device_index) for t in (tq, tk, tv)]
    if len(set(devices)) != 1:
        raise ArgumentError(f"flash_attention: q, k, v are on devices {devices}; expected one "
                            "device. Fix: move them to the same device")
    scale = 1.0 / math.sqrt(head_dim) if scale is None else finite_scale(scale)
    plan = AttentionPlan(tuple(tq.shape), tuple(tk.shape), dtype, causal, return_lse,
                         (tq, tk, tv))
    if batch * heads * seq_q == 0:
        plan.choices.append(("kernel", "none: B * H * S_q = 0, no rows to compute"))
        return plan
    if tk.shape[2] == 0:
        raise ArgumentError("flash_attention: k and v have no keys (S_k = 0); the softmax of "
                            "an empty row is undefined. Fix: pass at least one key")
    if mma not in MMA_CHOICES:
        raise ArgumentError(f"flash_attention: mma={mma!r}; expected one of {MMA_CHOICES}. "
                            "Fix: mma='auto'")
    tma_ok = all(tma_compatible(t) for t in (tq, tk, tv))
    if head_dim not in NATIVE_HEAD_DIMS:
        # zero columns change neither q.k nor the real columns of P V: pad D to the next
        # kernel size, keep the scale of the real D, and cut the output back
        plan.pad_to = next(d for d in NATIVE_HEAD_DIMS if d > head_dim)
        why = (f"the wgmma kernel takes D = {head_dim} natively, but the op pads it until "
               "that is measured faster (PADDED_HEAD_DIMS)" if head_dim in PADDED_HEAD_DIMS
               else f"D = {head_dim} is not one of the kernels' head dimensions "
               f"{NATIVE_HEAD_DIMS}")
        plan.fallbacks.append(("head dimension", (
            f"{why}: q, k and v are zero-padded to D = {plan.pad_to} (copies; "
            f"{round(100 * (1 - head_dim / plan.pad_to))}% of the tensor-core work multiplies "
            "zeros) and the output is cut back")))
        tma_ok = True                                  # the padded copies are fresh
    kernel_dim = plan.pad_to or head_dim
    align = causal_align if causal and tk.shape[2] != seq_q else "top_left"
    if causal and tk.shape[2] != seq_q:
        plan.choices.append(("causal alignment",
                             f"{align} (S_q = {seq_q}, S_k = {tk.shape[2]})"))
    elif causal and causal_align == "bottom_right":
        plan.choices.append(("causal alignment", "S_q = S_k: bottom-right is top-left"))
    needs = [x for x, on in (("return_lse=True", return_lse),
                             (f"grouped K/V heads (H_q / H_kv = {kv_group})", kv_group > 1),
                             ("bottom-right causal alignment with S_q != S_k",
                              align != "top_left"),
                             (f"D = {kernel_dim} > {FlashAttention.head_dims[-1]}",
                              kernel_dim > FlashAttention.head_dims[-1])) if on]
    if needs and mma == "mma.sync":
        raise ArgumentError("flash_attention(mma='mma.sync'): the mma.sync kernel has no "
                            "return_lse, grouped K/V heads, bottom-right causal alignment or "
                            f"head dimensions above {FlashAttention.head_dims[-1]} (D = "
                            f"{head_dim}). Fix: mma='auto'")
    wgmma_here = _wgmma_device(tq) or tq.device != "cuda"
    if needs and mma == "auto" and not tma_ok and wgmma_here:
        # only the wgmma kernel has these features: give it TMA-readable copies
        plan.copy = tma_ok = True
        plan.fallbacks.append(("copies", (
            f"{', '.join(needs)} need{'s' if len(needs) == 1 else ''} the wgmma kernel, and "
            f"TMA cannot read these tensors ({_tma_problem((tq, tk, tv))}): q, k and v are "
            "copied into new contiguous tensors first")))
    if needs and not (tma_ok and wgmma_here):
        raise ArgumentError("flash_attention: return_lse, grouped K/V heads, bottom-right "
                            f"causal alignment and D > {FlashAttention.head_dims[-1]} need the "
                            "wgmma kernel (an sm_90 GPU, or the simulator) and TMA-compatible "
                            "tensors. Fix: run on an H100/H200, or repeat k and v to H_q heads "
                            "and leave the other options out")
    if mma == "wgmma" and not tma_ok:
        tensors = (tq, tk, tv)
        copy = (fresh_copy_code(tensors) if any(t.data_ptr % 16 for t in tensors)
                else contiguous_code(tensors))
        raise ArgumentError("flash_attention(mma='wgmma'): TMA cannot read these tensors ("
                            f"{_tma_problem(tensors)}). Fix: mma='auto' (falls back to "
                            f"mma.sync) or {copy} each input")
    work = batch * heads * seq_q * tk.shape[2] * head_dim
    if mma == "wgmma" or needs or (mma == "auto" and tma_ok and work >= WGMMA_MIN_WORK
                                   and _wgmma_device(tq)):
        plan.kernel = "wgmma"
        plan.choices.append(("kernel", "mma='wgmma'" if mma == "wgmma" else
                             f"{', '.join(needs)}: only the wgmma kernel has it" if needs else
                             f"mma='auto', an sm_90 GPU, TMA-readable tensors and B H S_q S_k D "
                             f"= {work} >= WGMMA_MIN_WORK"))
        short = is_short(seq_q, kernel_dim, causal)
        overrides = tuple(sorted((policy or {}).items()))
        plan.policy = wgmma_policy_for(kernel_dim, dtype, causal, scale, tile_n=tile_n,
                                       num_stages=num_stages, causal_align=align,
                                       kv_group=kv_group, short=short, overrides=overrides)
        _wgmma_choices(plan, kernel_dim, short, overrides, tile_n, num_stages)
        check_grid(plan.policy.grid(batch, heads, seq_q))
        return plan
    plan.kernel = "mma.sync"
    plan.choices.append(("kernel", f"mma={mma!r}"))
    if mma == "auto":
        plan.fallbacks.append(("kernel", "the mma.sync kernel (FlashAttention-2 style), not "
                               "wgmma: " + _why_not_wgmma(tq, (tq, tk, tv), tma_ok, work)))
        if policy and kernel_dim in FlashAttentionWgmma.head_dims:
            # not run here, but checked as the wgmma kernel would check it: a bad field value
            # must not pass in the simulator (mma.sync) and fail on a GPU (wgmma)
            wgmma_policy_for(kernel_dim, dtype, causal, scale, tile_n=tile_n,
                             num_stages=num_stages, causal_align=align, kv_group=kv_group,
                             short=is_short(seq_q, kernel_dim, causal),
                             overrides=tuple(sorted(policy.items())))
        if policy:
            plan.fallbacks.append(("policy", f"policy={policy} is not used: it sets "
                                   "FlashAttentionWgmma fields, and the mma.sync kernel runs "
                                   "(mma='wgmma' runs it with them)"))
    if kernel_dim not in FlashAttention.head_dims:
        # a head dimension only the wgmma kernel takes natively: the mma.sync kernel pads it
        plan.pad_to = kernel_dim = next(d for d in FlashAttention.head_dims if d > kernel_dim)
        plan.fallbacks.append(("head dimension", f"D = {head_dim} runs on the mma.sync kernel "
                               f"zero-padded to D = {kernel_dim} (copies)"))
    copy = "cp.async" if cp_async_ok(tk) and cp_async_ok(tv) else "ld/st"
    if copy == "ld/st":
        plan.fallbacks.append(("K/V loads", "ld.global/st.shared instead of cp.async: k or v "
                               f"is not 16-byte aligned with strides in multiples of 8 elements "
                               f"(k {tk.strides}, v {tv.strides})"))
    plan.policy = policy_for(kernel_dim, dtype, causal, scale, copy,
                             tile_n=128 if tile_n is None else tile_n,
                             num_stages=3 if num_stages is None else num_stages)
    check_grid(plan.policy.grid(batch, heads, seq_q))
    return plan


def _tma_problem(tensors) -> str:
    """What keeps TMA from reading ``tensors`` (``tma_compatible``'s rules), for a reason."""
    bad = [f"{n} at {t.data_ptr % 16} bytes past 16-byte alignment" if t.data_ptr % 16 else
           f"{n} strides {t.strides}" for n, t in zip("qkv", tensors) if not tma_compatible(t)]
    return ("; ".join(bad) + "; TMA needs a 16-byte aligned base, D contiguous and the other "
            "strides multiples of 8 elements")


def _why_not_wgmma(tq, tensors, tma_ok, work) -> str:
    """Why ``mma='auto'`` did not take the wgmma kernel."""
    if not _wgmma_device(tq):
        if tq.device != "cuda":
            return ("the tensors are not on a GPU (the simulator runs the mma.sync kernel "
                    "unless mma='wgmma' is asked for)")
        if default_target() != "cuda":
            return f"the target is {default_target()!r}, not 'cuda'"
        from ..runtime.target import device_properties
        props = device_properties(tq.device_index or 0)
        return (f"the GPU has compute capability {props.cc_major}.{props.cc_minor}; wgmma "
                "needs sm_90 (H100/H200)")
    if not tma_ok:
        return _tma_problem(tensors)
    return (f"B H S_q S_k D = {work} < WGMMA_MIN_WORK = {WGMMA_MIN_WORK} (below it the "
            "wgmma kernel was not measured faster)")


def _wgmma_choices(plan, head_dim, short, overrides, tile_n, num_stages) -> None:
    """The wgmma policy's selections (measured defaults, overrides) and its own fallbacks."""
    fa = plan.policy
    picked = dict(WGMMA_DEFAULTS[(head_dim, plan.causal)])
    plan.choices.append(("tiling", f"WGMMA_DEFAULTS[({head_dim}, {plan.causal})] = {picked}"))
    if short and WGMMA_SHORT.get((head_dim, plan.causal)):
        bound = short_bound(head_dim, plan.causal)
        plan.choices.append(("short sequence", f"S_q <= {bound} (is_short): WGMMA_SHORT's "
                             f"{WGMMA_SHORT[(head_dim, plan.causal)]}"))
    given = dict(overrides, **{n: x for n, x in (("tile_n", tile_n), ("num_stages", num_stages))
                               if x is not None})
    if given:
        plan.choices.append(("given", f"{given} over the defaults"))
    base = shipped_fields(head_dim, plan.causal, short)
    if widened_to_two(base, {"tile_n": fa.tile_n}, overrides):
        plan.choices.append(("consumer warpgroups", f"2, not the default's 3: tile_n={fa.tile_n} "
                             f"is wider than the {base['tile_n']} keys that 3 warpgroups' 160 "
                             "registers per thread hold without spilling (to run 3 anyway, "
                             "launch ws.ops.FlashAttentionWgmma(consumer_wgs=3, ...) with "
                             "warpstage.ops.attention.launch_wgmma)"))
    for name, value in base.items():            # shipped fields that gave way (yielding_field)
        if value is True and getattr(fa, name, True) is False and name not in given:
            why = (f"its second Q buffer ({fa.q_layout.nbytes} bytes) does not fit in shared "
                   f"memory beside {fa.num_stages} stages of {fa.tile_n} keys"
                   if name == "overlap_tiles" and fa.persistent and fa.overlap and fa.split_kv
                   else f"it cannot run with the given {given}")
            plan.fallbacks.append((name, f"the shipped {name}=True is off: {why}"))
    if not fa.tma_store:
        why = ("tma_store=False was given" if "tma_store" in dict(overrides) else
               f"its buffers ({fa.consumer_wgs} x {fa.out.smem_bytes} bytes) do not fit beside "
               "the rings")
        plan.fallbacks.append(("epilogue", f"scalar 2-byte stores instead of the TMA-store "
                               f"epilogue: {why}"))


def explain(q, k, v, causal=False, scale=None, *, causal_align="top_left", return_lse=False,
            tile_n=None, num_stages=None, mma="auto", tune=False, policy=None,
            print_table=True) -> str:
    """``ws.explain(ws.ops.flash_attention, q, k, v, ...)``: print (and return) what the call
    with these arguments runs: the kernel, its policy, launch shape and shared memory, each
    fallback with its reason (a padded head dimension, copies, mma.sync instead of wgmma and
    why, ld/st loads, scalar-store epilogue) and the selections behind the policy. Tensors may
    be real or stand-ins with the same shape, dtype, strides and device; nothing is launched
    or copied. Raises the ArgumentError the call would raise."""
    from .attention_explain import format_plan
    plan = plan_call(q, k, v, causal, scale, causal_align=causal_align, return_lse=return_lse,
                     tile_n=tile_n, num_stages=num_stages,
                     mma="wgmma" if tune is True else mma, policy=policy)
    text = format_plan(plan, tuned=tune is True, sms=sm_count(plan.tensor_args[0], SIM_CTAS))
    if print_table:
        print(text)
    return text
