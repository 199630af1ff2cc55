"""The wgmma FlashAttention kernel's measured tables: the tiling and schedule fields per
(D, causal) (``WGMMA_DEFAULTS``), those for short sequences (``WGMMA_SHORT`` with its bounds
``SHORT_SEQ`` / ``SHORT_SEQ_AT``), and the lookups over them. Each table's docstring gives the
device runs it was chosen by. Data only: ``attention_plan`` builds the policies from them.
"""
from __future__ import annotations

__all__ = ["WGMMA_DEFAULTS", "WGMMA_SHORT", "SHORT_SEQ", "SHORT_SEQ_AT", "short_bound",
           "is_short", "shipped_fields"]

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
