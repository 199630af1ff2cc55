"""Split-K for ``ws.ops.matmul``: when an M x N output has too few 128 x ``tile_n`` tiles to
fill the GPU (decode and small-batch shapes: M <= 128 gives 16-43 tiles of 128 x 256 for 132
SMs), K is cut into ``splits`` ranges and each (tile, range) pair is one work unit of the
persistent GEMM (``Matmul(split_k=True)``): its f32 partial sums go by TMA store to a
(batches x splits, M, N) f32 workspace, then ``splitk_reduce`` adds the ``splits`` partials of
each element in a fixed order, applies the epilogue, rounds once to the output dtype and writes
C (any strides). CUTLASS calls this the "parallel" split-K mode (``GemmSplitKParallel``: a GEMM
into a workspace, then a reduction kernel); the result is deterministic, unlike atomics.

``matmul_plan.plan`` picks (tile_m, tile_n, splits) per shape by an estimate of the device
time in which a split pays the workspace round trip and the second kernel (~8 us on the H200);
benchmarks/gemm_small_m.py measures the alternatives.
"""
from __future__ import annotations

import warpstage as ws

from ..options import LIBRARY_SPECIALIZATIONS
from .matmul_epilogues import apply, traced, traced_method
from .matmul_plan import MAX_SPLITS, even_splits

__all__ = ["splitk_reduce", "even_splits", "REDUCE_THREADS", "MAX_SPLITS"]

REDUCE_THREADS = 256


@ws.kernel(max_specializations=LIBRARY_SPECIALIZATIONS)
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
            epi = traced(epilogue)
            x = apply(epi, x, rows, col, traced_method(epi, "prologue")(operands))
        c[b, r, col] = x
