"""The consumer role of the GEMM kernel (``matmul_kernel.py``): the wgmma mainloop and the
epilogue, in the two schedules of CUTLASS's sm90 warp-specialized kernels.

- ``cooperative``: both consumer warpgroups work on one 128 x tile_n tile (64 rows each) and run
  the epilogue together (named barrier over 256 threads). The tensor cores idle during it.
- ``pingpong``: the warpgroups take alternate tiles of the CTA's sequence, each a whole
  128 x tile_n tile (two m64 accumulators), and take turns issuing their mainloops through a
  ``ws.pipeline.OrderedBarrier`` (named barriers 1 and 2): while one warpgroup runs its epilogue
  (its own smem buffers and named barrier, 3 or 4), the other's wgmmas keep the tensor cores
  busy. The ring holds the tiles' K steps in order, so each warpgroup skips the other's
  ``k_tiles`` stages after each of its tiles (``ws.sched.skip_stages``).

Both keep one wgmma-group in flight in the K loop: after issuing stage s they wait until only
that group is pending (``wait_group(1)``) and release stage s - 1.
"""
from __future__ import annotations

import warpstage as ws

from ..lang.sched import skip_stages

__all__ = ["MatmulConsumer"]


def _fragments(x) -> list:
    """fence / wait_group results (one fragment or a tuple) as a list."""
    return list(x) if isinstance(x, tuple) else [x]


class MatmulConsumer:
    """The consumer role's device code; mixed into the ``Matmul`` policy (which provides the
    configuration: ``schedule``, ``tile_n``, majors, ``out``, ``epilogue``, ...)."""

    @ws.jit
    def consume(self, c_desc, sched, k_tiles, splits, m, n, operands, pipeline, storage):
        """Consumer warpgroups 1 and 2 over this CTA's tiles, in the policy's schedule."""
        tid = ws.arch.thread_idx()[0] - self.producer_threads        # 0..255
        wg = ws.arch.make_warp_uniform(tid // 128)
        if tid == 0:
            ws.tma.prefetch_descriptor(c_desc)
        if ws.static(self.epilogue is not None):
            operands = self.epilogue.prologue(operands)     # once per CTA, not per element
        if ws.static(self.schedule == "pingpong"):
            self.consume_pingpong(c_desc, sched, k_tiles, m, n, operands, pipeline, storage,
                                  wg, tid % 128)
        else:
            state = pipeline.consumer_start_state()
            for t in range(sched.first(), sched.num_tiles(), sched.stride()):
                m_blk, n_blk, _, batch, _, count = self.work(sched, t, k_tiles, splits)
                accs, state = self.mainloop([wg * 64], count, pipeline, storage, state, None)
                self.store_tile(accs, tid, c_desc, storage.c, m_blk, n_blk, batch, m, n,
                                operands, None)
            self.out.tail(tid)

    @ws.jit
    def consume_pingpong(self, c_desc, sched, k_tiles, m, n, operands, pipeline, storage, wg,
                         wtid):
        """Warpgroup ``wg`` takes the CTA's tiles wg, wg + 2, ...; both take the same number of
        turns (an idle one when the CTA's tile count is odd)."""
        turn = ws.pipeline.OrderedBarrier.create(wg, 2, 128, base_id=1)
        first, stride = sched.first(), sched.stride()
        count = (sched.num_tiles() - first + (stride - 1)) // stride      # this CTA's tiles
        state = skip_stages(pipeline.consumer_start_state(), wg * k_tiles)
        for j in range((count + 1) // 2):
            i = 2 * j + wg
            turn.wait()
            if i < count:
                m_blk, n_blk, batch = sched.tile(first + i * stride)
                accs, state = self.mainloop([0, 64], k_tiles, pipeline, storage, state, turn)
                state = skip_stages(state, k_tiles)                     # the other's tile
                self.store_tile(accs, wtid, c_desc, storage.c[wg], m_blk, n_blk, batch, m, n,
                                operands, 3 + wg)
            else:
                turn.arrive()
        turn.finish()
        self.out.tail(wtid)

    @ws.jit
    def mainloop(self, rows, k_tiles, pipeline, storage, state, turn):
        """One accumulator per 64-row block of A's tile at ``rows`` (static or dynamic row
        offsets), over the K steps, one wgmma-group in flight: stage s - 1 is released as soon
        as ``wait_group(1)`` after issuing stage s says its group is done. With ``turn`` (an
        OrderedBarrier), the turn ends once the last stage's wgmmas are issued. Returns (the
        waited-for accumulators, the pipeline state after the last stage)."""
        pipeline.consumer_wait(state)
        ws.wgmma.fence()
        accs = self.issue(rows, storage, state, None)
        prev = state
        state = state.advance()
        for kt in range(1, k_tiles):
            pipeline.consumer_wait(state)
            accs = _fragments(ws.wgmma.fence(*accs))
            accs = self.issue(rows, storage, state, accs)
            ws.wgmma.wait_group(1)                 # the previous stage's group is done
            pipeline.consumer_release(prev)
            prev = state
            state = state.advance()
        if ws.static(turn is not None):
            turn.arrive()
        accs = _fragments(ws.wgmma.wait_group(0, *accs))
        pipeline.consumer_release(prev)
        return accs, state

    def issue(self, rows, storage, state, accs):
        """Issue the 64 x tile_n x tile_k products of stage ``state`` for each row block (four
        k16 wgmmas each, k32 for fp8; overwriting when ``accs`` is None) and commit them as one
        group."""
        da = ws.wgmma.tile_descriptor(storage.a[state.index], major=self.a_major)
        db = ws.wgmma.tile_descriptor(storage.b[state.index], major=self.b_major)
        das = [da.at(row=r) for r in rows]
        out = [None] * len(rows) if accs is None else list(accs)
        for kk in range(self.tile_k // self.mma_k):
            for r, d in enumerate(das):
                if out[r] is None:
                    out[r] = ws.wgmma.mma(d.k_step(kk), db.k_step(kk), None, n=self.tile_n,
                                          scale_d=False)
                else:
                    out[r] = ws.wgmma.mma(d.k_step(kk), db.k_step(kk), out[r])
        ws.wgmma.commit_group()
        return out

    def store_tile(self, accs, tid, c_desc, buffers, m_blk, n_blk, batch, m, n, operands,
                   barrier_id) -> None:
        """The epilogue of tile (m_blk, n_blk): ``epilogue.apply`` per element (its row and
        column clamped into the output, so operand loads stay in bounds; the clipped elements
        are not stored), then the TMA-store epilogue into ``buffers``."""
        row0, col0 = m_blk * self.tile_m, n_blk * self.tile_n
        transform = None
        if self.epilogue is not None:
            epi = self.epilogue
            base = batch * m + row0 if self.batched else row0
            last_row = batch * m + (m - 1) if self.batched else m - 1

            def transform(x, r, c):
                return epi.apply(x, ws.math.min(base + r, last_row),
                                 ws.math.min(col0 + c, n - 1), operands)
        coords = (batch, row0, col0) if self.batched or self.split_k else (row0, col0)
        self.out.store(accs, tid, c_desc, buffers, coords, transform, barrier_id)
