"""Cross-tile overlap of the wgmma FlashAttention kernel's consumers (``overlap_tiles``), as a
mixin of ``FlashAttentionWgmma`` beside ``attention_wgmma_consumer.py``.

Without it, every output tile of a persistent CTA fills and drains its pipeline alone: the
tile's first S = Q K_0^T is waited for with nothing else on the tensor cores (``first_scores``),
and its last O += P V runs after the softmax of the last K/V tile with no softmax to hide under
it (``last_pv``), then the epilogue. With it the boundary between tile t and tile t + 1 is one
step of the overlapped loop (``next_tile_start``): issue S'_0 of tile t + 1, issue P_last V_last
of tile t, wait for S'_0, softmax of S'_0 while P V runs, wait for P V, then tile t's epilogue.
Q is double-buffered (``q_buffers`` = 2: the producer loads tile t + 1's Q while tile t runs), so
S'_0 need not wait for a Q load. Per CTA only the first tile's first S and the last tile's last
P V are left without overlap.
"""
from __future__ import annotations

import warpstage as ws

__all__ = ["TileOverlap"]


class TileOverlap:
    """The ``overlap_tiles`` consumer loop of ``FlashAttentionWgmma`` (module docstring); uses
    ``WgmmaConsumer``'s pieces (``first_scores``, ``kv_loop``, ``last_pv``, ``store_out``)."""

    @ws.jit
    def consume_tiles_overlapped(self, o, lse, o_desc, seq_k, k_pipe, v_pipe, storage):
        """The consumer warpgroups over this CTA's output tiles (persistent schedule), each
        tile boundary overlapped (``next_tile_start``); the ring states, the turns and the
        softmax state of the tile whose first S is done are carried across tiles."""
        if ws.static(self.dynamic_tiles):
            self.consume_claimed_overlapped(o, lse, o_desc, seq_k, k_pipe, v_pipe, storage)
            return
        tid = self.consumer_tid()
        turn = self.make_turns(ws.arch.make_warp_uniform(tid // 128))
        lane = ws.arch.lane_idx()
        keys = (seq_k, self.causal_offset(o.shape[2], seq_k))
        kst = k_pipe.consumer_start_state()
        vst = v_pipe.consumer_start_state()
        sched = self.scheduler(o)
        b, h, m_block, n_tiles = self.tile_work(sched, sched.first(), o, seq_k)
        rows, row_wg, dq = self.tile_rows(m_block, 0, storage)
        self.wait_q(0, storage)
        p, m_i, l_i, alpha, kst = self.first_scores(dq, rows, lane, row_wg, keys, k_pipe, kst,
                                                    turn, storage)
        acc = self.rescale_at_wait_of(ws.wgmma.zeros(self.head_dim), alpha)
        local = ws.Int32(0)
        for t in range(sched.first(), sched.num_tiles(), sched.stride()):
            rows, row_wg, dq = self.tile_rows(m_block, local, storage)
            acc, p, m_i, l_i, alpha, kst, vst = self.kv_loop(
                dq, rows, lane, row_wg, keys, n_tiles, k_pipe, v_pipe, kst, vst, turn, storage,
                acc, p, m_i, l_i, alpha)
            self.release_q(storage, local)
            nxt = t + sched.stride()
            if nxt < sched.num_tiles():
                b2, h2, m_block2, n_tiles2 = self.tile_work(sched, nxt, o, seq_k)
                rows2, row_wg2, dq2 = self.tile_rows(m_block2, local + 1, storage)
                self.wait_q(local + 1, storage)
                done, p, m2, l2, alpha, kst, vst = self.next_tile_start(
                    dq2, rows2, lane, row_wg2, keys, k_pipe, v_pipe, kst, vst, turn, storage,
                    acc, p, alpha)
            else:
                done, vst = self.last_pv(acc, p, alpha, v_pipe, vst, storage)
                b2, h2, m_block2, n_tiles2, m2, l2 = b, h, m_block, n_tiles, m_i, l_i
            self.store_out(o, lse, o_desc, b, h, rows, row_wg, done, m_i, l_i, storage)
            acc = self.rescale_at_wait_of(ws.wgmma.zeros(self.head_dim), alpha)
            m_i, l_i = m2, l2
            b, h, m_block, n_tiles = b2, h2, m_block2, n_tiles2
            local = local + 1
        self.finish_turns(turn)
        if ws.static(self.tma_store):
            self.out.tail(tid % 128)

    @ws.jit
    def consume_claimed_overlapped(self, o, lse, o_desc, seq_k, k_pipe, v_pipe, storage):
        """``consume_tiles_overlapped`` over the tiles the producer claims (``dynamic_tiles``):
        each tile's (b, h, m_block, n_tiles) is read from its Q buffer (``next_tile``) before
        the boundary, which overlaps the next tile's first S with this tile's last P V when the
        next buffer holds a tile (b >= 0) and ends the walk with the last P V alone when it holds
        the producer's b = -1. The CTA's first tile always exists (the grid is at most the
        tile count: ``grid``)."""
        tid = self.consumer_tid()
        turn = self.make_turns(ws.arch.make_warp_uniform(tid // 128))
        lane = ws.arch.lane_idx()
        keys = (seq_k, self.causal_offset(o.shape[2], seq_k))
        kst = k_pipe.consumer_start_state()
        vst = v_pipe.consumer_start_state()
        b, h, m_block, n_tiles = self.next_tile(0, storage)
        rows, row_wg, dq = self.tile_rows(m_block, 0, storage)
        p, m_i, l_i, alpha, kst = self.first_scores(dq, rows, lane, row_wg, keys, k_pipe, kst,
                                                    turn, storage)
        acc = self.rescale_at_wait_of(ws.wgmma.zeros(self.head_dim), alpha)
        local = ws.Int32(0)
        while b >= 0:
            rows, row_wg, dq = self.tile_rows(m_block, local, storage)
            acc, p, m_i, l_i, alpha, kst, vst = self.kv_loop(
                dq, rows, lane, row_wg, keys, n_tiles, k_pipe, v_pipe, kst, vst, turn, storage,
                acc, p, m_i, l_i, alpha)
            self.release_q(storage, local)
            b2, h2, m_block2, n_tiles2 = self.next_tile(local + 1, storage)
            m2, l2 = m_i, l_i
            if b2 >= 0:
                rows2, row_wg2, dq2 = self.tile_rows(m_block2, local + 1, storage)
                done, p, m2, l2, alpha, kst, vst = self.next_tile_start(
                    dq2, rows2, lane, row_wg2, keys, k_pipe, v_pipe, kst, vst, turn, storage,
                    acc, p, alpha)
            else:
                done, vst = self.last_pv(acc, p, alpha, v_pipe, vst, storage)
            self.store_out(o, lse, o_desc, b, h, rows, row_wg, done, m_i, l_i, storage)
            acc = self.rescale_at_wait_of(ws.wgmma.zeros(self.head_dim), alpha)
            m_i, l_i = m2, l2
            b, h, m_block, n_tiles = b2, h2, m_block2, n_tiles2
            local = local + 1
        self.finish_turns(turn)
        if ws.static(self.tma_store):
            self.out.tail(tid % 128)

    @ws.jit
    def next_tile_start(self, dq, rows, lane, row_wg, keys, k_pipe, v_pipe, kst, vst, turn,
                        storage, acc, p, alpha):
        """The boundary of two output tiles as one overlapped step: (turn) issue the next
        tile's S'_0 = Q' K'_0^T (``dq``: its Q), rescale O by the last alpha, issue the current
        tile's last P V (end of turn); wait for S'_0, release K'_0, the next tile's first
        softmax step (rows ``rows``) while P V runs; wait for P V, release V. Returns (the
        current tile's finished O, the next tile's P_0 as A fragments, its m, l and alpha, K
        state, V state)."""
        m_i, l_i = self.softmax_start()
        self.turn_wait_k(k_pipe, kst)
        self.begin_turn(turn)
        s = self.issue_scores(dq, storage.k[kst.index], False)          # S'_0: one group
        acc = self.rescale_in_turn(acc, alpha)
        self.turn_wait_v(v_pipe, vst)
        a = self.fence_all(acc, p)
        acc = self.issue_pv(a[1:], storage.v[vst.index], a[0])          # P_last V_last
        self.end_turn(turn)
        s = ws.wgmma.wait_group(1, s)
        self.release_k(k_pipe, kst)
        s = self.finish_scores(s, 0, rows, lane, row_wg, keys)
        p2, m_i, l_i, alpha = self.softmax_update(s, m_i, l_i)
        self.fence_block(l_i)
        acc = ws.wgmma.wait_group(0, acc)
        self.release_v(v_pipe, vst)
        return acc, self.to_a(p2), m_i, l_i, alpha, kst.advance(), vst.advance()
