"""The producer role of the GEMM kernel (``matmul_kernel.py``): one elected thread of warp 0
loads A's and B's tiles of each K step by TMA into the pipeline's stages.

In a cluster (``Matmul.cluster = (cluster_m, cluster_n)``, 2 x 1 or 1 x 2) the CTAs of a
cluster take adjacent tiles (``ws.sched.ClusterTileScheduler``) and share an operand: with
``(2, 1)`` the two tiles are M-adjacent and share B's tile_k x tile_n panel, with ``(1, 2)``
they are N-adjacent and share A's. Each CTA loads half of the shared tile's rows (of each
column block: the descriptor's box is half as tall) and multicasts it to both CTAs
(``ws.tma.load(..., multicast=mask)``, PTX ``.multicast::cluster``), so the shared operand
crosses L2 -> SM once per cluster instead of once per CTA; the other operand each CTA loads
itself. The stage's mbarrier of each CTA expects the whole stage's bytes (its own half, its
peer's half, its own other operand): ``ws.pipeline.PipelineTmaMulticast``.
"""
from __future__ import annotations

import warpstage as ws

from ..lang.smem import SmemArray

__all__ = ["MatmulProducer", "CLUSTERS"]

CLUSTERS = ((1, 1), (2, 1), (1, 2))
"""The cluster shapes (CTAs along M, along N) the GEMM has."""


class MatmulProducer:
    """The producer's device code, a mixin of ``Matmul`` (its fields: layouts, majors, tile
    sizes, ``cluster``)."""

    @property
    def multicast(self) -> str:
        """Which operand is multicast: 'B' for (2, 1), 'A' for (1, 2), '' without a cluster."""
        return {(2, 1): "B", (1, 2): "A"}.get(self.cluster, "")

    def operand_box(self, layout, operand: str) -> tuple:
        """The TMA box of ``operand`` ('A' / 'B'): its layout's column block, half as many rows
        when it is the multicast one (each CTA of the pair loads one half)."""
        rows, cols = layout.box
        return (rows // 2, cols) if operand == self.multicast else (rows, cols)

    @ws.jit
    def load(self, a_desc, b_desc, sched, k_tiles, splits, pipeline, storage):
        """Producer warp 0: per tile and K step, wait for a free stage, then one elected thread
        loads A's and B's tiles of that step by TMA (the stage's full mbarrier counts bytes)."""
        if ws.arch.elect_one():
            ws.tma.prefetch_descriptor(a_desc)
            ws.tma.prefetch_descriptor(b_desc)
        state = pipeline.producer_start_state()
        start, stop, step = self.unit_range(sched)
        for t in range(start, stop, step):
            m_blk, n_blk, batch, _, k0, count = self.work(sched, t, k_tiles, splits)
            for kt in range(count):
                pipeline.producer_acquire(state)
                if ws.arch.elect_one():
                    bar = pipeline.producer_get_barrier(state)
                    self.load_operand(a_desc, self.a_layout, self.a_major,
                                      storage.a[state.index], m_blk * self.tile_m,
                                      (k0 + kt) * self.tile_k, batch, bar, "A", pipeline)
                    self.load_operand(b_desc, self.b_layout, self.b_major,
                                      storage.b[state.index], n_blk * self.tile_n,
                                      (k0 + kt) * self.tile_k, batch, bar, "B", pipeline)
                state = state.advance()
        pipeline.producer_tail(state)

    def load_operand(self, desc, layout, major, tile, mn0, k0, batch, bar, operand,
                     pipeline) -> None:
        """A's tile_m x tile_k or B's tile_k x tile_n tile (``layout``: a_layout / b_layout) at
        M or N index ``mn0``, K index ``k0``: the box(es) of ``layout`` from the (M or N, K)
        tensor K-major, from its (K, M or N) transpose MN-major. The multicast operand: this
        CTA's half of the rows of each box, to both CTAs of the pair."""
        rc = (mn0, k0) if major == "K" else (k0, mn0)
        if operand != self.multicast:
            ws.tma.load_tile(desc, layout, tile, self.coords(batch, *rc), bar)
            return
        # M-adjacent CTAs share B (the pair is a row of the cluster), N-adjacent ones A (a
        # column); in a 2-CTA cluster a CTA's place in the pair is its rank
        mask = pipeline.mask_row() if operand == "B" else pipeline.mask_col()
        part = ws.arch.cluster_ctarank()
        half = layout.rows // 2
        for blk in range(layout.blocks):
            block = layout.block(tile, blk)
            dst = half_rows(block, part, half)
            ws.tma.load(desc, dst, self.coords(batch, rc[0] + part * half,
                                               rc[1] + blk * layout.block_cols), bar,
                        multicast=mask)

    def coords(self, batch, row, col) -> tuple:
        return (batch, row, col) if self.batched else (row, col)


def half_rows(block: SmemArray, part, half: int) -> SmemArray:
    """Rows [part * half, (part + 1) * half) of the 2-D swizzled smem ``block`` (``part`` a
    dynamic 0/1): a view starting ``part * half`` rows in, aligned to the swizzle period when
    ``half`` rows are a whole number of periods (checked by ``ws.tma.load``)."""
    row_bytes = block.strides[0] * block.ptr.value.type.pointee.nbytes
    step = half * row_bytes
    align = min(block.align, step & -step)
    return SmemArray(block.ptr + part * (half * block.strides[0]), (half,) + block.shape[1:],
                     block.strides, block.swizzle, align)
