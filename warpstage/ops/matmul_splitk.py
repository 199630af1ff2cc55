"""Split-K for ``ws.ops.matmul``: when an M x N output has too few 128 x ``tile_n`` tiles to
fill the GPU (decode and small-batch shapes: M <= 128 gives 16-43 tiles of 128 x 256 for 132
SMs), K is cut into ``splits`` ranges and each (tile, range) pair is one work unit of the
persistent GEMM (``Matmul(split_k=True)``): its f32 partial sums go by TMA store to a
(batches x splits, M, N) f32 workspace, then ``splitk_reduce`` adds the ``splits`` partials of
each element in a fixed order, applies the epilogue, rounds once to the output dtype and writes
C (any strides). CUTLASS calls this the "parallel" split-K mode (``GemmSplitKParallel``: a GEMM
into a workspace, then a reduction kernel); the result is deterministic, unlike atomics.

``plan`` picks (tile_n, splits) per shape by an estimate of the time (waves of work units x K
steps per unit x per-width cost, plus a fixed cost of the workspace round trip and the second
launch); benchmarks/gemm.py's small-M sweep measures the alternatives.
"""
from __future__ import annotations

import warpstage as ws

__all__ = ["splitk_reduce", "plan", "even_splits", "REDUCE_THREADS", "MAX_SPLITS"]

REDUCE_THREADS = 256
MAX_SPLITS = 16
_SPLIT_COST = 4 * 256
"""The workspace round trip and the reduction's launch, in units of one K step of a 256-wide
tile (~0.6 us on the H200): a guess until the small-M sweep measures it."""
TILE_EFFICIENCY = {256: 1.0, 128: 0.9, 64: 0.75}
"""Relative throughput per tile width (wider tiles reuse each A tile over more of N, so fewer
smem bytes per FLOP); measured at 4096^3 (2026-12-01, RESULTS.md): 256 wide 742-755 TFLOP/s,
128 wide 723 (0.96)."""


def _efficiency(tile_n: int) -> float:
    """``TILE_EFFICIENCY`` for a measured width, else interpolated linearly between the
    measured ones (a user's tile_n=192, say), clamped to their range."""
    if tile_n in TILE_EFFICIENCY:
        return TILE_EFFICIENCY[tile_n]
    pts = sorted(TILE_EFFICIENCY.items())
    if tile_n <= pts[0][0]:
        return pts[0][1]
    for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
        if tile_n <= x1:
            return y0 + (y1 - y0) * (tile_n - x0) / (x1 - x0)
    return pts[-1][1]


@ws.kernel
def splitk_reduce(epilogue, work: ws.Tensor, c: ws.Tensor, m: ws.Int32, n: ws.Int32,
                  total: ws.Int32, splits: ws.Int32, operands: tuple):
    """C[b, r, col] = epilogue(sum over s of work[b * splits + s, r, col]) for the
    ``total = B * M * N`` elements, one per thread, ``REDUCE_THREADS`` per CTA (1-D grid of
    ceil(total / REDUCE_THREADS)). ``work``: (B * splits, M, N') f32, N' >= N; ``c``: (B, M, N)
    of the output dtype, any strides (the store rounds, round-to-nearest-even); ``epilogue``:
    None or a static ``ws.ops.Epilogue`` (rows counted over B * M, as in the GEMM); ``operands``
    its tensors."""
    i = ws.arch.block_idx()[0] * REDUCE_THREADS + ws.arch.thread_idx()[0]
    if i < total:
        rows = i // n
        col = i - rows * n
        b = rows // m
        r = rows - b * m
        x = work[b * splits, r, col]
        for s in range(1, splits):
            x = x + work[b * splits + s, r, col]
        if ws.static(epilogue is not None):
            x = epilogue.apply(x, rows, col, epilogue.prologue(operands))
        c[b, r, col] = x


def even_splits(k_tiles: int, s: int) -> int:
    """The number of non-empty ranges when ``k_tiles`` K steps are cut into ranges of
    ceil(k_tiles / s) (what the kernel does): at most ``s``."""
    per = -(-k_tiles // s)
    return -(-k_tiles // per)


def plan(m: int, n: int, k: int, batches: int, sms: int, widths=(256, 128, 64),
         split: bool = True, k_step: int = 64, tile_m: int = 128) -> tuple:
    """(tile_n, splits) of least estimated time for a (batches x) M x N x K problem on ``sms``
    SMs: per candidate, waves of work units x K steps per unit x tile_n / efficiency, plus
    ``_SPLIT_COST`` when split. K is split only when the output has fewer tiles than SMs;
    ``splits`` never leaves a range empty (``split`` False: never split). Ties go to no split,
    then the wider tile. ``k_step``: K per stage (64; 128 for fp8); ``tile_m``: rows per tile."""
    k_tiles = max(1, -(-k // k_step))
    best = None
    for tn in widths:
        tiles = -(-m // tile_m) * -(-n // tn) * batches
        counts = [1] if tiles >= sms or not split else sorted({even_splits(k_tiles, s) for s in
                                                   range(1, min(MAX_SPLITS, k_tiles) + 1)})
        for s in counts:
            waves = -(-(tiles * s) // sms)
            cost = waves * -(-k_tiles // s) * tn / _efficiency(tn) + (s > 1) * _SPLIT_COST
            key = (cost, s, -tn)
            if best is None or key < best[0]:
                best = (key, tn, s)
    return best[1], best[2]
