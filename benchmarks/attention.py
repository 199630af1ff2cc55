"""FlashAttention forward on the H200, side by side in one process: warpstage through the public
``ws.ops.flash_attention``, torch SDPA with the cuDNN backend, torch SDPA with its flash backend,
FlashAttention-4's CuTe kernel where ``flash_attn.cute`` imports, and the floor (the FLOPs over
the tensor-core rate measured here with a large bf16 ``torch.matmul``).

    PYTHONPATH=. python benchmarks/attention.py                  # the table of issue 12
    PYTHONPATH=. python benchmarks/attention.py --sweep          # policy variants (direct launch)
    PYTHONPATH=. python benchmarks/attention.py --quick

TFLOP/s = 4 B H S_q S_k D / t, halved with ``causal``. Each row: the median of ``--repeats``
CUDA-event timings of ``--iters`` back-to-back calls after a warm-up, twice: device time with
a warmed queue (first figure; the host's issue time hidden, as when a model's host runs
ahead) and end to end (second; benchmarks/gpu_timing.py), and the max |error| against SDPA in
float32 (NaN counts as a failure). Sweeps time device time only. ``--sweep [NAME]`` compiles every policy variant of the set NAME (``SWEEPS``) in
a process pool first (each worker launches it once on small tensors, filling the disk cache),
then times them one after another in this process. Writes ``attention.json`` (every figure),
``attention.png`` (TFLOP/s against S per (D, causal), when matplotlib imports) and a markdown
block for ``benchmarks/RESULTS.md`` into ``$OUT`` (or ``--out``). A benchmark, not a test:
nothing is asserted.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu_timing import seconds_per_call  # noqa: E402  (benchmarks/ is not a package)

# (B, H, S, D, causal): the configurations of issue 12's table, then the S sweep for the chart
TABLE = [(8, 16, 1024, 128, False), (8, 16, 1024, 128, True), (4, 16, 4096, 128, False),
         (4, 16, 4096, 128, True), (4, 16, 4096, 64, False), (4, 16, 4096, 64, True),
         (2, 16, 8192, 128, False)]
CHART = [(16, 16, 1024), (8, 16, 2048), (4, 16, 4096), (2, 16, 8192), (1, 16, 16384)]
QUICK = [(4, 16, 4096, 128, False), (4, 16, 4096, 64, False)]

_ATTN5 = [dict(), dict(fma_select=True), dict(overlap_tiles=True),
          dict(fma_select=True, overlap_tiles=True)]
"""The variants of sweep "attn5" over each (D, causal)'s default fields."""

# policy variants for --sweep NAME: (D, causal) -> list of FlashAttentionWgmma field overrides
SWEEPS = {
    # session 3, first run: the schedule pieces one by one (RESULTS.md)
    "pieces": {
        (128, False): [
            dict(split_kv=False, pingpong=False, num_stages=2, persistent=False),
            dict(split_kv=False, pingpong=False, num_stages=3, persistent=False),
            dict(split_kv=True, pingpong=False, num_stages=2, persistent=False),
            dict(split_kv=True, pingpong=True, num_stages=2, persistent=False),
            dict(split_kv=True, pingpong=True, num_stages=3, persistent=False),
            dict(split_kv=False, pingpong=True, num_stages=3, persistent=False),
            dict(split_kv=True, pingpong=True, num_stages=2, tile_n=176, persistent=False),
            dict(split_kv=True, pingpong=True, num_stages=2, tile_n=192, persistent=False),
            dict(split_kv=True, pingpong=True, num_stages=3, fast_exp2=False, persistent=False),
            dict(split_kv=True, pingpong=True, num_stages=3, overlap=False, persistent=False),
        ],
        (64, False): [
            dict(split_kv=False, pingpong=False, num_stages=2, persistent=False),
            dict(num_stages=2, persistent=False), dict(num_stages=3, persistent=False),
            dict(num_stages=4, persistent=False),
            dict(num_stages=2, consumer_wgs=3, persistent=False),
            dict(num_stages=3, consumer_wgs=3, persistent=False),
            dict(num_stages=2, tile_n=192, persistent=False),
            dict(num_stages=3, tile_n=176, persistent=False),
        ],
        (128, True): [dict(split_kv=False, pingpong=False, num_stages=3, persistent=False),
                      dict(num_stages=2, persistent=False), dict(num_stages=3, persistent=False)],
        (64, True): [dict(num_stages=3, persistent=False),
                     dict(num_stages=3, consumer_wgs=3, persistent=False)],
    },
    # session 3, second run: the persistent schedule against the best non-persistent tilings
    "persistent": {
        (128, False): [dict(tile_n=176, num_stages=2, persistent=False),
                       dict(tile_n=176, num_stages=2), dict(tile_n=128, num_stages=2),
                       dict(tile_n=128, num_stages=3), dict(tile_n=176, num_stages=2,
                                                            pingpong=False)],
        (64, False): [dict(consumer_wgs=3, num_stages=3, persistent=False),
                      dict(consumer_wgs=3, num_stages=3), dict(consumer_wgs=3, num_stages=4),
                      dict(consumer_wgs=3, num_stages=2)],
        (128, True): [dict(tile_n=128, num_stages=2, persistent=False),
                      dict(tile_n=128, num_stages=2), dict(tile_n=128, num_stages=3)],
        (64, True): [dict(consumer_wgs=3, num_stages=3, persistent=False),
                     dict(consumer_wgs=3, num_stages=3)],
    },
    # session 3, third run: tile widths around the defaults
    "tiles": {
        (128, False): [dict(tile_n=176), dict(tile_n=144), dict(tile_n=160), dict(tile_n=192),
                       dict(tile_n=176, pingpong=False)],
        (128, True): [dict(tile_n=128, persistent=False), dict(tile_n=176, persistent=False),
                      dict(tile_n=144, persistent=False), dict(tile_n=176)],
        (64, False): [dict(consumer_wgs=3, num_stages=2),
                      dict(consumer_wgs=3, tile_n=96, num_stages=3),
                      dict(consumer_wgs=3, tile_n=112, num_stages=3)],
        (64, True): [dict(consumer_wgs=3, num_stages=3),
                     dict(consumer_wgs=3, tile_n=96, num_stages=3)],
    },
    # session 3, fourth run: the P V wait kept below the softmax (late_wait)
    "late": {
        (128, False): [dict(tile_n=176, late_wait=False), dict(tile_n=176),
                       dict(tile_n=128),
                       dict(tile_n=176, pingpong=False)],
        (128, True): [dict(tile_n=128, persistent=False, late_wait=False),
                      dict(tile_n=128, persistent=False), dict(tile_n=128),
                      dict(tile_n=176, persistent=False)],
        (64, False): [dict(consumer_wgs=3, num_stages=2, late_wait=False),
                      dict(consumer_wgs=3, num_stages=2), dict(num_stages=2),
                      dict(num_stages=3, tile_n=176)],
        (64, True): [dict(consumer_wgs=3, num_stages=3, late_wait=False),
                     dict(consumer_wgs=3, num_stages=3)],
    },
    # session 4: short sequences (tile rows against S's padding, persistence, depth)
    "short": {
        (64, False): [dict(consumer_wgs=3, num_stages=2), dict(consumer_wgs=2, num_stages=2),
                      dict(consumer_wgs=2, num_stages=3),
                      dict(consumer_wgs=2, num_stages=2, persistent=False)],
        (64, True): [dict(consumer_wgs=3, num_stages=3, late_wait=False),
                     dict(consumer_wgs=2, num_stages=3, late_wait=False),
                     dict(consumer_wgs=2, num_stages=3),
                     dict(consumer_wgs=2, num_stages=3, persistent=False)],
        (128, False): [dict(tile_n=128, num_stages=2), dict(tile_n=128, num_stages=3),
                       dict(tile_n=64, num_stages=4), dict(tile_n=128, persistent=False)],
        (128, True): [dict(tile_n=128, persistent=False), dict(tile_n=128),
                      dict(tile_n=128, num_stages=3, persistent=False),
                      dict(tile_n=64, num_stages=4, persistent=False)],
    },
    # session 4: the native D = 192 and 256 tilings (shared memory allows 2 stages)
    "wide": {
        (192, False): [dict(tile_n=112), dict(tile_n=96), dict(tile_n=80), dict(tile_n=64),
                       dict(tile_n=112, persistent=False)],
        (192, True): [dict(tile_n=112, persistent=False), dict(tile_n=112),
                      dict(tile_n=96, persistent=False), dict(tile_n=64, persistent=False)],
        (256, False): [dict(tile_n=80), dict(tile_n=64), dict(tile_n=80, persistent=False),
                       dict(tile_n=48)],
        (256, True): [dict(tile_n=80, persistent=False), dict(tile_n=80),
                      dict(tile_n=64, persistent=False)],
    },
    # session 4: part of P's exponentials on the FMA pipe (ws.math.exp2_poly)
    "poly": {
        (64, False): [dict(consumer_wgs=3, poly_exp2=k) for k in (0, 1, 2, 3, 4)],
        (64, True): [dict(consumer_wgs=3, num_stages=3, late_wait=False, poly_exp2=k)
                     for k in (0, 1, 2, 3)],
        (128, False): [dict(poly_exp2=k) for k in (0, 1, 2)],
        (128, True): [dict(persistent=False, poly_exp2=k) for k in (0, 1, 2)],
        (256, False): [dict(tile_n=64, poly_exp2=k) for k in (0, 1)],
    },
    # session 4: the exponent as one FFMA while the warp's rows allow it (fma_scores)
    "fma": {
        (64, False): [dict(consumer_wgs=3), dict(consumer_wgs=3, fma_scores=True)],
        (64, True): [dict(consumer_wgs=3, num_stages=3, late_wait=False),
                     dict(consumer_wgs=3, num_stages=3, late_wait=False, fma_scores=True)],
        (128, False): [dict(), dict(fma_scores=True)],
        (128, True): [dict(persistent=False), dict(persistent=False, fma_scores=True)],
    },
    # session 5 (issue 12, attn5), one run: the branch-free single-FFMA exponent
    # (fma_select) and the cross-tile overlap (overlap_tiles) against the shipped default at
    # D = 64 and 128; native D = 96 (3 boxes of 32 columns, 64-byte swizzle, scalar-store
    # epilogue) against the D = 128 kernel the op pads D = 96 to (its TFLOP/s x 0.75 = the
    # padded rate at D = 96's FLOPs, the pad copies not counted)
    "attn5": {
        # D = 64: overlap_tiles with 2 consumer warpgroups (with 3, at 160 registers, the
        # carried state spills 272 bytes: docs/performance.md)
        (64, False): [dict(consumer_wgs=3), dict(consumer_wgs=3, fma_select=True),
                      dict(consumer_wgs=2), dict(consumer_wgs=2, overlap_tiles=True),
                      dict(consumer_wgs=2, overlap_tiles=True, fma_select=True)],
        (64, True): [dict(consumer_wgs=3, num_stages=3, late_wait=False, **f)
                     for f in _ATTN5[:2]]
        + [dict(num_stages=3, late_wait=False, **f) for f in ({}, dict(overlap_tiles=True))],
        (128, False): [dict(**f) for f in _ATTN5],
        (128, True): [dict(persistent=False), dict(persistent=False, fma_select=True),
                      dict(overlap_tiles=True), dict(overlap_tiles=True, fma_select=True)],
        (96, False): [dict(), dict(num_stages=3), dict(tile_n=176), dict(overlap_tiles=True)],
        (96, True): [dict(persistent=False), dict(persistent=False, num_stages=3)],
    },
    # session 6 (issue 12, attn6), one run at the chart's short shapes: warpgroups with no row
    # below S_q skip their work (skip_idle) and the partial row blocks go last in the
    # persistent order (partial_last); the causal longest-first order over bands of
    # head_group batch-heads. Each against today's default fields (first in each list; at
    # D = 64 causal S <= 1536 the op takes WGMMA_SHORT's instead). Predictions from
    # benchmarks/attention_schedule_model.py (docs/performance.md, "Short sequences"); and at
    # D = 128 FlashAttention-3's lead_waits (only consumer warpgroup 0 waits on the rings)
    "attn6": {
        (64, False): [dict(consumer_wgs=3, fma_select=True),
                      dict(consumer_wgs=3, fma_select=True, skip_idle=True),
                      dict(consumer_wgs=3, fma_select=True, skip_idle=True, partial_last=True),
                      dict(consumer_wgs=3, fma_select=True, skip_idle=True, partial_last=True,
                           lead_waits=True)],
        (64, True): [dict(consumer_wgs=3, num_stages=3, late_wait=False, fma_select=True),
                     dict(consumer_wgs=3, num_stages=3, late_wait=False, fma_select=True,
                          skip_idle=True)],
        (128, True): [dict(persistent=False, fma_select=True)]
        + [dict(persistent=False, fma_select=True, head_group=g) for g in (16, 32, 65536)],
        (128, False): [dict(fma_select=True),
                       dict(fma_select=True, skip_idle=True, partial_last=True),
                       dict(fma_select=True, lead_waits=True)],
    },
    # session 7 (issue 12, attn7): P V's A operand as packed bf16x2 registers (packed_p) and
    # O's rescale right after its P V wait (rescale_at_wait), with and without overlap_tiles,
    # each against today's default fields (first in each list). SASS (docs/performance.md,
    # "Session 7: packed P"): the default kernel's K/V step is unchanged (594 instructions,
    # turn 67 at D=128); with overlap_tiles the turn goes 163 -> 131 (packed_p: no PRMT) -> 68
    # (+ rescale_at_wait: no FMUL), the step 656 -> 592
    "attn7": {
        (128, False): [dict(fma_select=True), dict(fma_select=True, packed_p=True),
                       dict(fma_select=True, packed_p=True, rescale_at_wait=True)]
        + [dict(fma_select=True, overlap_tiles=True, **f) for f in (
            {}, dict(packed_p=True), dict(rescale_at_wait=True),
            dict(packed_p=True, rescale_at_wait=True))],
        (128, True): [dict(persistent=False, fma_select=True),
                      dict(persistent=False, fma_select=True, packed_p=True,
                           rescale_at_wait=True)]
        + [dict(fma_select=True, overlap_tiles=True, **f) for f in (
            {}, dict(packed_p=True, rescale_at_wait=True))],
    },
    # the same at D = 64 (one shape: S = 4096)
    "attn7_64": {
        (64, False): [dict(consumer_wgs=3, fma_select=True, skip_idle=True, partial_last=True),
                      dict(consumer_wgs=3, fma_select=True, skip_idle=True, partial_last=True,
                           packed_p=True, rescale_at_wait=True)]
        + [dict(consumer_wgs=3, fma_select=True, overlap_tiles=True, **f) for f in (
            {}, dict(packed_p=True, rescale_at_wait=True))],
        (64, True): [dict(consumer_wgs=3, num_stages=3, late_wait=False, fma_select=True,
                          skip_idle=True),
                     dict(consumer_wgs=3, num_stages=3, late_wait=False, fma_select=True,
                          skip_idle=True, packed_p=True, rescale_at_wait=True)],
    },
    # session 8: confirm attn7's two gains across S before a default flip (D=64 non-causal:
    # overlap_tiles + packed_p + rescale_at_wait +3.2% at S=4096; D=128 S=1024: packed_p +
    # rescale_at_wait +0.3 / +1.1%)
    "confirm8_64": {
        (64, False): [dict(consumer_wgs=3, fma_select=True, skip_idle=True, partial_last=True),
                      dict(consumer_wgs=3, fma_select=True, overlap_tiles=True, packed_p=True,
                           rescale_at_wait=True),
                      dict(consumer_wgs=3, fma_select=True, overlap_tiles=True, packed_p=True,
                           rescale_at_wait=True, num_stages=3)],
    },
    "confirm8_128": {
        (128, False): [dict(fma_select=True),
                       dict(fma_select=True, packed_p=True, rescale_at_wait=True)],
        (128, True): [dict(persistent=False, fma_select=True),
                      dict(persistent=False, fma_select=True, packed_p=True,
                           rescale_at_wait=True)],
    },
    # session 8 (issue 12, attn8): O rescaled only when a row's max moved by more than
    # rescale_threshold powers of two (a warp vote and a uniform branch around the
    # multiplies; FlashAttention-4's conditional rescale), in place of rescale_at_wait where
    # the default has it, each against the shipped default fields (first in each list; the
    # op takes WGMMA_SHORT's at S <= 1536: D = 64 non-causal 3 stages, the list's third
    # entry; D = 64 causal 2 warpgroups with overlap_tiles, its third). SASS
    # (docs/performance.md, "Session 8"): the D=128 K/V step's unmasked path 494 -> 446
    # instructions (64 FMUL skipped, 16 more for the kept max, alpha's select and the vote)
    "attn8": {
        (128, False): [dict(fma_select=True), dict(fma_select=True, rescale_threshold=8.0),
                       dict(fma_select=True, rescale_threshold=0.0),
                       dict(fma_select=True, packed_p=True, rescale_threshold=8.0),
                       dict(fma_select=True, overlap_tiles=True, packed_p=True,
                            rescale_threshold=8.0)],
        (128, True): [dict(persistent=False, fma_select=True, packed_p=True,
                           rescale_at_wait=True),
                      dict(persistent=False, fma_select=True, packed_p=True,
                           rescale_threshold=8.0),
                      dict(fma_select=True, overlap_tiles=True, packed_p=True,
                           rescale_threshold=8.0)],
    },
    "attn8_64": {
        (64, False): [dict(consumer_wgs=3, fma_select=True, overlap_tiles=True, packed_p=True,
                           rescale_at_wait=True),
                      dict(consumer_wgs=3, fma_select=True, overlap_tiles=True, packed_p=True,
                           rescale_threshold=8.0),
                      dict(consumer_wgs=3, fma_select=True, overlap_tiles=True, packed_p=True,
                           rescale_at_wait=True, num_stages=3),
                      dict(consumer_wgs=3, fma_select=True, overlap_tiles=True, packed_p=True,
                           rescale_threshold=8.0, num_stages=3)],
        (64, True): [dict(consumer_wgs=3, num_stages=3, late_wait=False, fma_select=True,
                          skip_idle=True),
                     dict(consumer_wgs=3, num_stages=3, late_wait=False, fma_select=True,
                          skip_idle=True, rescale_threshold=8.0),
                     dict(consumer_wgs=2, num_stages=3, late_wait=False, fma_select=True,
                          overlap_tiles=True),
                     dict(consumer_wgs=2, num_stages=3, late_wait=False, fma_select=True,
                          overlap_tiles=True, packed_p=True, rescale_threshold=8.0)],
    },
    # session 9 (issue 12, attn9): persistent CTAs that claim the one-CTA grid's tiles first
    # come, first served (dynamic_tiles: a global counter; the producer hands each tile's
    # coordinates to the consumers with its Q), against the shipped default first; causal
    # also the static persistent grid (longest first over all heads) as the order's control
    # narrow_last: a warpgroup whose last K/V tile it sees only in its first half (warpgroup
    # 0 on a causal diagonal) issues S and P V there over those 64 keys; non-causal with S a
    # multiple of 128 it never narrows (the control for its larger code)
    "attn9": {
        (128, False): [dict(fma_select=True, rescale_threshold=8.0),
                       dict(fma_select=True, rescale_threshold=8.0, dynamic_tiles=True),
                       dict(fma_select=True, rescale_threshold=8.0, narrow_last=True)],
        (128, True): [dict(persistent=False, fma_select=True, packed_p=True,
                           rescale_threshold=8.0),
                      dict(fma_select=True, packed_p=True, rescale_threshold=8.0,
                           dynamic_tiles=True),
                      dict(persistent=False, fma_select=True, packed_p=True,
                           rescale_threshold=8.0, narrow_last=True),
                      dict(fma_select=True, packed_p=True, rescale_threshold=8.0,
                           dynamic_tiles=True, narrow_last=True),
                      dict(fma_select=True, packed_p=True, rescale_threshold=8.0)],
    },
    # session 9 call B: dynamic_tiles at D=64 (the long and the short-S defaults, each without
    # and with it) ...
    "attn9_64": {
        (64, False): [dict(consumer_wgs=3, fma_select=True, overlap_tiles=True, packed_p=True,
                           rescale_at_wait=True),
                      dict(consumer_wgs=3, fma_select=True, packed_p=True, rescale_at_wait=True,
                           dynamic_tiles=True),
                      dict(consumer_wgs=3, num_stages=3, fma_select=True, overlap_tiles=True,
                           packed_p=True, rescale_at_wait=True),
                      dict(consumer_wgs=3, num_stages=3, fma_select=True, packed_p=True,
                           rescale_at_wait=True, dynamic_tiles=True)],
        (64, True): [dict(num_stages=3, consumer_wgs=3, late_wait=False, fma_select=True,
                          skip_idle=True),
                     dict(num_stages=3, consumer_wgs=3, late_wait=False, fma_select=True,
                          skip_idle=True, dynamic_tiles=True),
                     dict(num_stages=3, consumer_wgs=2, late_wait=False, fma_select=True,
                          overlap_tiles=True),
                     dict(num_stages=3, consumer_wgs=2, late_wait=False, fma_select=True,
                          dynamic_tiles=True)],
    },
    # ... and the D=128 causal default before and after it at long S
    "attn9_long": {
        (128, True): [dict(persistent=False, fma_select=True, packed_p=True,
                           rescale_threshold=8.0),
                      dict(fma_select=True, packed_p=True, rescale_threshold=8.0,
                           dynamic_tiles=True)],
        (128, False): [dict(fma_select=True, rescale_threshold=8.0),
                       dict(fma_select=True, rescale_threshold=8.0, dynamic_tiles=True)],
    },
    # session 10 (issue 12): the last wave. The same kernel at head counts whose tile count
    # (B * H * S / 128) fills whole waves of 132 CTAs (H = 33) or leaves a part-filled last
    # one (H = 16: 15.52 or 7.76 waves), the static persistent default and dynamic_tiles
    "waves10": {
        (128, False): [dict(fma_select=True, rescale_threshold=8.0),
                       dict(fma_select=True, rescale_threshold=8.0, dynamic_tiles=True)],
    },
    # session 3, fifth run: the TMA-store epilogue
    "store": {
        (128, False): [dict(tile_n=128, tma_store=False), dict(tile_n=128),
                       dict(tile_n=176, late_wait=False)],
        (128, True): [dict(tile_n=128, persistent=False, tma_store=False),
                      dict(tile_n=128, persistent=False), dict(tile_n=128)],
        (64, False): [dict(consumer_wgs=3, num_stages=2, tma_store=False),
                      dict(consumer_wgs=3, num_stages=2)],
        (64, True): [dict(consumer_wgs=3, num_stages=3, late_wait=False, tma_store=False),
                     dict(consumer_wgs=3, num_stages=3, late_wait=False)],
    },
}


def flops(b, h, sq, sk, d, causal) -> float:
    f = 4.0 * b * h * sq * sk * d
    return f / 2 if causal else f


def inputs(b, h, s, d, seed=0):
    import torch
    g = torch.Generator(device="cuda").manual_seed(seed)
    return [torch.randn(b, h, s, d, device="cuda", generator=g).to(torch.bfloat16)
            for _ in range(3)]


def timed(fn, iters, repeats, warm_queue=True) -> float:
    """Seconds per call: ``gpu_timing.seconds_per_call`` (CUDA events, median of repeats); by
    default the device time with a warmed queue, ``warm_queue=False`` end to end."""
    return seconds_per_call(fn, iters, repeats, warm_queue=warm_queue)


def tensor_core_rate() -> float:
    """Measured dense bf16 rate (FLOP/s): torch.matmul at 8192^3 on random data."""
    import torch
    a, b = (torch.randn(8192, 8192, device="cuda").to(torch.bfloat16) for _ in range(2))
    t = timed(lambda: torch.matmul(a, b), 10, 5)
    return 2 * 8192 ** 3 / t


def sdpa(backend):
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    kind = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION}[backend]

    def run(q, k, v, causal):
        with sdpa_kernel(kind):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    return run


def fa4():
    try:
        from flash_attn.cute import flash_attn_func      # FlashAttention-4 (CuTe DSL)
    except Exception as e:                               # noqa: BLE001 - report, not fail
        return None, f"{type(e).__name__}: {e}"[:120]

    def run(q, k, v, causal):
        out = flash_attn_func(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                              causal=causal)
        out = out[0] if isinstance(out, tuple) else out
        return out.transpose(1, 2)
    return run, None


def warpstage_op(q, k, v, causal):
    import warpstage as ws
    return ws.ops.flash_attention(q, k, v, causal=causal, mma="wgmma")


def error(out, ref) -> float:
    import torch
    d = (out.float() - ref).abs().max().item()
    return float("nan") if not torch.isfinite(out.float()).all() else d


def run_table(shapes, iters, repeats, rate, log) -> list:
    import torch
    rows = []
    impls = [("warpstage", warpstage_op), ("sdpa-cudnn", sdpa("cudnn")),
             ("sdpa-flash", sdpa("flash"))]
    fa4_run, why = fa4()
    if fa4_run is not None:
        impls.append(("fa4-cute", fa4_run))
    else:
        log(f"FlashAttention-4 not importable here ({why})")
    for (b, h, s, d, causal) in shapes:
        q, k, v = inputs(b, h, s, d)
        import torch.nn.functional as F
        ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal)
        f = flops(b, h, s, s, d, causal)
        row = dict(shape=[b, h, s, d], causal=causal, floor_tflops=rate / 1e12)
        live, times = [], {}
        for name, fn in impls:
            try:
                out = fn(q, k, v, causal)
                row[name] = dict(err=error(out, ref))
                live.append((name, fn))
                times[name] = ([], [])
            except Exception as e:                       # noqa: BLE001 - a row, not a crash
                row[name] = dict(error=f"{type(e).__name__}: {e}"[:200])
        # the implementations interleaved round by round, each round in a rotated order, so
        # that the H200's clock drift under its power cap (docs/performance.md, session 10)
        # falls on all of them alike; the median over the rounds
        for r in range(repeats):
            for name, fn in live[r % len(live):] + live[:r % len(live)]:
                call = (lambda fn=fn: fn(q, k, v, causal))
                try:
                    times[name][0].append(timed(call, iters, 1))
                    times[name][1].append(timed(call, iters, 1, warm_queue=False))
                except Exception as e:                   # noqa: BLE001
                    row[name] = dict(error=f"{type(e).__name__}: {e}"[:200])
        for name, (dev, e2e) in times.items():
            if "error" in row[name] or not dev:
                continue
            t, t_e2e = statistics.median(dev), statistics.median(e2e)
            row[name].update(tflops=f / t / 1e12, ms=t * 1e3, tflops_e2e=f / t_e2e / 1e12)
        rows.append(row)
        log(format_row(row))
        del q, k, v, ref
        torch.cuda.empty_cache()
    return rows


def format_row(row) -> str:
    b, h, s, d = row["shape"]
    parts = [f"B={b:2d} H={h} S={s:5d} D={d:3d} {'causal' if row['causal'] else 'full  '}"]
    for name in ("warpstage", "sdpa-cudnn", "sdpa-flash", "fa4-cute"):
        r = row.get(name)
        if r is None:
            continue
        parts.append(f"{name} " + (f"{r['tflops']:6.1f} / {r.get('tflops_e2e', 0):6.1f} "
                                   f"(err {r['err']:.1e})" if "tflops" in r
                                   else r["error"][:40]))
    if "warpstage" in row and "sdpa-cudnn" in row and "tflops" in row["warpstage"] \
            and "tflops" in row["sdpa-cudnn"]:
        parts.append(f"x cuDNN {row['warpstage']['tflops'] / row['sdpa-cudnn']['tflops']:.2f}")
    return " | ".join(parts)


# -- sweep ----------------------------------------------------------------------------------------
def _policy(d, causal, fields):
    import warpstage as ws
    from warpstage.ops.attention_wgmma import FlashAttentionWgmma
    return FlashAttentionWgmma(head_dim=d, dtype=ws.BFloat16, causal=causal, **fields)


def _launcher(fa, q, k, v, o, kern=None):
    """A call launching policy ``fa``'s wgmma kernel on q, k, v into o: ``kern``, or the
    library's ``flash_attention_wgmma_kernel`` (a Kernel of the same function with other
    compile options: ``llvm_pipeline_ab.py``)."""
    import warpstage as ws
    from warpstage.ops.attention_wgmma import flash_attention_wgmma_kernel
    kern = flash_attention_wgmma_kernel if kern is None else kern
    b, h, s, _ = q.shape
    q_box, kv_box = fa.descriptor_boxes()
    descs = [ws.tma.TensorDescriptor(x, box, swizzle=fa.swizzle)
             for x, box in ((q, q_box), (k, kv_box), (v, kv_box))]
    import torch
    sms = torch.cuda.get_device_properties(q.device).multi_processor_count
    launch = kern[fa.grid(b, h, s, sms=sms), fa.threads]
    o_desc = (ws.tma.TensorDescriptor(o, fa.o_box, swizzle=fa.out.swizzle) if fa.tma_store
              else None)
    tiles = torch.zeros(2, dtype=torch.int32, device=q.device) if fa.dynamic_tiles else None
    return lambda: launch(fa, *descs, o, k.shape[2], None, o_desc, tiles)


def _compile_one(job):
    """Pool worker: compile (and launch once on small tensors) one variant; returns
    (job, seconds, registers/ptxas summary or error)."""
    warnings.simplefilter("ignore")
    d, causal, fields = job
    t0 = time.perf_counter()
    try:
        import torch
        fa = _policy(d, causal, fields)
        q, k, v = inputs(1, 1, 512, d)
        o = torch.empty_like(q)
        _launcher(fa, q, k, v, o)()
        torch.cuda.synchronize()
        return job, time.perf_counter() - t0, "ok"
    except Exception as e:                               # noqa: BLE001
        return job, time.perf_counter() - t0, f"{type(e).__name__}: {e}"[:300]


def run_sweep(name, shapes, iters, repeats, rate, log, workers) -> list:
    import multiprocessing as mp
    import torch
    import torch.nn.functional as F
    sweep = SWEEPS[name]
    fa4_run, _ = fa4()
    jobs = [(d, causal, f) for (d, causal), fs in sweep.items() for f in fs]
    t0 = time.perf_counter()
    with mp.get_context("spawn").Pool(workers) as pool:
        done = pool.map(_compile_one, jobs)
    log(f"compiled {len(jobs)} variants in {time.perf_counter() - t0:.1f} s "
        f"({workers} processes)")
    status = {json.dumps(j, sort_keys=True): r for j, _, r in done}
    rows = []
    for (d, causal), variants in sweep.items():
        for (b, h, s) in shapes:
            q, k, v = inputs(b, h, s, d)
            ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal)
            f = flops(b, h, s, s, d, causal)
            cudnn = sdpa("cudnn")
            t_cudnn = timed(lambda: cudnn(q, k, v, causal), iters, repeats)
            fa4_line = ""
            if fa4_run is not None:                  # FlashAttention-4 beside, where it imports
                try:
                    fa4_run(q, k, v, causal)
                    t_fa4 = timed(lambda: fa4_run(q, k, v, causal), iters, repeats)
                    fa4_line = f", FA4 {f / t_fa4 / 1e12:.1f}"
                except Exception as e:               # noqa: BLE001 - report, not fail
                    fa4_line = f", FA4 failed: {type(e).__name__}"
            log(f"D={d} causal={causal} B={b} H={h} S={s}: cuDNN {f / t_cudnn / 1e12:.1f} TFLOP/s"
                f"{fa4_line}")
            for fields in variants:
                job = (d, causal, fields)
                row = dict(shape=[b, h, s, d], causal=causal, fields=fields,
                           cudnn_tflops=f / t_cudnn / 1e12)
                st = status.get(json.dumps(job, sort_keys=True))
                if st != "ok":
                    row["error"] = st
                    log(f"   {fields}: FAILED {st}")
                    rows.append(row)
                    continue
                try:
                    fa = _policy(d, causal, fields)
                    o = torch.full_like(q, float("nan"))
                    run = _launcher(fa, q, k, v, o)
                    run()
                    torch.cuda.synchronize()
                    err = error(o, ref)
                    t = timed(run, iters, repeats)
                    row.update(tflops=f / t / 1e12, err=err)
                    log(f"   {fields}: {row['tflops']:6.1f} TFLOP/s  err {err:.1e}  "
                        f"x cuDNN {row['tflops'] / row['cudnn_tflops']:.2f}")
                except Exception as e:                       # noqa: BLE001
                    row["error"] = f"{type(e).__name__}: {e}"[:300]
                    log(f"   {fields}: FAILED {row['error']}")
                rows.append(row)
            del q, k, v, ref
            torch.cuda.empty_cache()
    return rows


def chart(rows, path) -> bool:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception:                                    # noqa: BLE001 - optional
        return False
    groups = {}
    for r in rows:
        groups.setdefault((r["shape"][3], r["causal"]), []).append(r)
    fig, axes = plt.subplots(1, len(groups), figsize=(5 * len(groups), 4), squeeze=False)
    for ax, ((d, causal), rs) in zip(axes[0], sorted(groups.items())):
        rs.sort(key=lambda r: r["shape"][2])
        for name in ("warpstage", "sdpa-cudnn", "sdpa-flash", "fa4-cute"):
            pts = [(r["shape"][2], r[name]["tflops"]) for r in rs
                   if name in r and "tflops" in r[name]]
            if pts:
                ax.plot(*zip(*pts), marker="o", label=name)
        ax.set_xscale("log", base=2)
        ax.set_title(f"D={d} {'causal' if causal else 'non-causal'} (bf16)")
        ax.set_xlabel("S")
        ax.set_ylabel("TFLOP/s")
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    return True


def versions() -> dict:
    import torch
    out = dict(torch=torch.__version__, cuda=torch.version.cuda,
               gpu=torch.cuda.get_device_name(0))
    try:
        out["commit"] = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                                       capture_output=True, text=True).stdout.strip()
    except OSError:
        pass
    try:
        q = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,clocks.max.sm,power.draw",
                            "--format=csv,noheader"], capture_output=True, text=True)
        out["clocks"] = q.stdout.strip()
    except OSError:
        pass
    for mod in ("triton", "llvmlite"):
        try:
            out[mod] = __import__(mod).__version__
        except Exception:                                # noqa: BLE001
            pass
    return out


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sweep", nargs="?", const="persistent", choices=sorted(SWEEPS),
                   help="time the policy variants of this set (default: persistent)")
    p.add_argument("--sweep-shapes", default="4,16,4096",
                   help="(B, H, S) triples for --sweep, e.g. 4,16,4096;8,16,1024")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--chart", action="store_true", help="also the S sweep for the chart")
    p.add_argument("--head-dims", default="64,128",
                   help="head dimensions of the chart's S sweep, e.g. 64,128,192,256")
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--workers", type=int, default=12)
    p.add_argument("--out", default=os.environ.get("OUT") or "/tmp")
    args = p.parse_args(argv)
    warnings.simplefilter("ignore")
    lines = []

    def log(s):
        print(s, flush=True)
        lines.append(s)
    try:
        import torch
    except ImportError:
        torch = None
    if torch is None or not torch.cuda.is_available():
        print("benchmarks/attention.py needs a CUDA GPU (none found); nothing measured")
        return
    info = versions()
    log(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} {info}")
    rate = tensor_core_rate()
    log(f"bf16 torch.matmul 8192^3: {rate / 1e12:.0f} TFLOP/s (the floor's rate)")
    result = dict(info=info, rate_tflops=rate / 1e12)
    if args.sweep:
        shapes = [tuple(int(x) for x in t.split(",")) for t in args.sweep_shapes.split(";")]
        result["sweep"] = run_sweep(args.sweep, shapes, args.iters, args.repeats, rate, log,
                                    args.workers)
    else:
        shapes = QUICK if args.quick else list(TABLE)
        if args.chart:
            dims = [int(x) for x in args.head_dims.split(",")]
            shapes += [(b, h, s, d, c) for d in dims for c in (False, True)
                       for (b, h, s) in CHART if (b, h, s, d, c) not in shapes]
        result["table"] = run_table(shapes, args.iters, args.repeats, rate, log)
        if chart(result["table"], os.path.join(args.out, "attention.png")):
            log(f"chart: {os.path.join(args.out, 'attention.png')}")
    stem = "attention_sweep" if args.sweep else "attention"
    with open(os.path.join(args.out, stem + ".json"), "w") as f:
        json.dump(result, f, indent=1)
    with open(os.path.join(args.out, stem + ".md"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
