"""The short-sequence arithmetic of the wgmma FlashAttention kernel's tile schedule, on the host
(no GPU): per (B, H, S, D, causal) point, the row waste of the tiles, the waves of the grid, and
the makespan (the busiest SM's work) of today's order against the schedule fields
(``skip_idle``, ``partial_last``, ``head_group``), in units of one K/V step of a full tile.

    PYTHONPATH=. python benchmarks/attention_schedule_model.py

The orders are the kernel's own (``row_block_order``, ``ws.sched.tile_coords``); the cost model
is stated, not measured: a tile costs its K/V steps plus ``FILL`` (the exposed first S and last
P V), times ``max(active / consumer_wgs, SOLO)`` with ``skip_idle`` (a warpgroup alone is
latency-bound: ``SOLO`` of the full tile's time), else 1. Persistent grids walk a static
round-robin (CTA c takes tiles c, c + 132, ...); one-CTA-per-tile grids are dispatched in linear
block order to the first free SM (list scheduling), and each of their tiles also pays
``LAUNCH``: a new CTA's set-up, its first Q and K loads and its exit, which a persistent CTA's
producer overlaps with the tile before. ``dynamic_tiles`` (persistent CTAs claiming the
one-CTA grid's tiles from a counter) is that list schedule without ``LAUNCH``.

``LAUNCH`` = 0.7 K/V steps is fitted, not measured: session 8 call F's D=128 S=1024 points
(non-causal persistent 617.3 / 600.6 TFLOP/s at B=16 / 8, causal one CTA per tile 423.3 /
397.9) give the causal grids 0.72 / 0.75 of the non-causal time (in makespan units: 104 of
144, 54 of 72), which this model matches with ``MASKED`` = 0.15 (a diagonal step's extra mask
work) and ``LAUNCH`` = 0.7 at both batch sizes. ``narrow_last`` takes ``NARROW`` = 0.25 off a
causal tile (warpgroup 0's half of the diagonal step's S and of the last P V: a quarter of
that step's GEMM work), the most it could save if the step were bound by the tensor cores.
"""
from __future__ import annotations

import heapq
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from warpstage.lang.sched import tile_coords                     # noqa: E402
from warpstage.ops.attention_wgmma_sched import row_block_order  # noqa: E402

SMS, FILL, SOLO, LAUNCH, MASKED, NARROW = 132, 1.0, 0.5, 0.7, 0.15, 0.25

# the points below 1.0x cuDNN in session 5's closing chart: (B, H, S, D, causal, defaults)
POINTS = [(16, 16, 1024, 64, False, dict(wgs=3, persistent=True)),
          (8, 16, 2048, 64, True, dict(wgs=3, persistent=True)),
          (8, 16, 1024, 128, True, dict(wgs=2, persistent=False)),
          (16, 16, 1024, 128, True, dict(wgs=2, persistent=False)),
          (8, 16, 2048, 128, True, dict(wgs=2, persistent=False)),
          (4, 16, 4096, 128, True, dict(wgs=2, persistent=False)),
          (8, 16, 1024, 128, False, dict(wgs=2, persistent=True)),
          (16, 16, 1024, 128, False, dict(wgs=2, persistent=True)),
          (4, 16, 4096, 128, False, dict(wgs=2, persistent=True))]


def tile_cost(m, s, wgs, causal, skip_idle, tile_n=128, launch=0.0, narrow=False):
    """Cost of row block m (K/V steps + FILL, + MASKED per diagonal step with ``causal``,
    scaled by the active warpgroups with skip_idle; + ``launch`` for a CTA of its own)."""
    rows = 64 * wgs
    last_row = min((m + 1) * rows, s)
    steps = -(-(last_row if causal else s) // tile_n)
    active = min(wgs, -(-(s - m * rows) // 64))
    share = max(active / wgs, SOLO) if skip_idle else 1.0
    masked = -(-rows // tile_n) * MASKED if causal else 0.0
    saved = NARROW if narrow and causal and wgs == 2 else 0.0
    return (steps + masked + FILL - saved) * share + launch


def order(bh, s, wgs, causal, persistent, partial_last=False, head_group=None):
    """The (batch-head, row block) sequence the kernel walks (its linear tile / block order)."""
    rows = 64 * wgs
    n_m = -(-s // rows)
    out = []
    for t in range(bh * n_m):
        if causal:
            g = head_group if head_group is not None else (65536 if persistent else 1)
            i, j, _ = tile_coords(t, bh, n_m, "M", g)
            out.append((i, n_m - 1 - j))
        elif partial_last:
            out.append(row_block_order(t, bh, s, rows))
        else:
            out.append((t // n_m, t % n_m))
    return out


def makespan(costs, persistent):
    if persistent:
        per = [0.0] * SMS
        for t, c in enumerate(costs):
            per[t % SMS] += c
        return max(per)
    heap = [0.0] * SMS
    for c in costs:
        heapq.heappush(heap, heapq.heappop(heap) + c)
    return max(heap)


def point(b, h, s, d, causal, wgs, persistent, **fields):
    skip = fields.get("skip_idle", False)
    dynamic = fields.get("dynamic_tiles", False)
    seq = order(b * h, s, wgs, causal, persistent and not dynamic,
                fields.get("partial_last", False), fields.get("head_group"))
    launch = 0.0 if persistent or dynamic else LAUNCH
    costs = [tile_cost(m, s, wgs, causal, skip, launch=launch,
                       narrow=fields.get("narrow_last", False)) for _, m in seq]
    return len(seq), sum(costs) / SMS, makespan(costs, persistent and not dynamic)


def main() -> None:
    full = [dict(), dict(skip_idle=True), dict(skip_idle=True, partial_last=True),
            dict(dynamic_tiles=True)]
    causal_variants = [dict(), dict(skip_idle=True), dict(head_group=1), dict(head_group=8),
                       dict(head_group=16), dict(head_group=32), dict(head_group=65536),
                       dict(dynamic_tiles=True), dict(dynamic_tiles=True, head_group=2),
                       dict(narrow_last=True), dict(dynamic_tiles=True, narrow_last=True)]
    for b, h, s, d, causal, dflt in POINTS:
        rows = 64 * dflt["wgs"]
        n_m = -(-s // rows)
        print(f"B={b} H={h} S={s} D={d} {'causal' if causal else 'full'}: {rows}-row tiles, "
              f"{n_m} per batch-head ({100 * (n_m * rows - s) / (n_m * rows):.0f}% rows wasted), "
              f"{b * h * n_m} tiles = {b * h * n_m / SMS:.2f} waves on {SMS} SMs, "
              f"{'persistent' if dflt['persistent'] else 'one CTA per tile'}")
        base = None
        for f in causal_variants if causal else full:
            tiles, mean, span = point(b, h, s, d, causal, dflt["wgs"], dflt["persistent"], **f)
            base = base or span
            print(f"   {str(f):45s} mean {mean:7.1f}  makespan {span:7.1f}  "
                  f"(x{base / span:.3f} of today's)")


if __name__ == "__main__":
    main()
