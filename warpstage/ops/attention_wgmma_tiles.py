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

With ``shared_boundary`` the boundary is not a peeled copy of the K/V step (``next_tile_start``)
but the same step (``kv_step``) in one flat loop over the CTA's (output tile, K/V tile) steps
(``consume_tiles_shared``): at a boundary its S operand is the next tile's Q and K'_0 (the Q
descriptor, the rows, the key offset 0 and a fresh m, l selected at run time) and its P V the
last of the current tile, whose O is then stored; so the K/V step's code (two GEMMs, one softmax)
exists twice in the kernel (the CTA's first S, the loop) instead of three times.
"""
from __future__ import annotations

import warpstage as ws

__all__ = ["TileOverlap"]


class TileOverlap:
    """The ``overlap_tiles`` consumer loop of ``FlashAttentionWgmma`` (module docstring); uses
    ``WgmmaConsumer``'s pieces (``first_scores``, ``kv_loop``, ``kv_step``, ``last_pv``,
    ``store_out``)."""

    def consumers_start(self, o, seq_k, k_pipe, v_pipe) -> tuple:
        """What each overlapped consumer loop starts from: (consumer thread index, the turns,
        lane, (S_k, the causal diagonal's offset), K ring state, V ring state)."""
        tid = self.consumer_tid()
        turn = self.make_turns(ws.arch.make_warp_uniform(tid // 128))
        lane = ws.arch.lane_idx()
        keys = (seq_k, self.causal_offset(o.shape[2], seq_k))
        kst = k_pipe.consumer_start_state()
        return tid, turn, lane, keys, kst, v_pipe.consumer_start_state()

    def consumers_finish(self, tid, turn) -> None:
        """After the loop: the last turns, and with ``tma_store`` the wait for the stores."""
        self.finish_turns(turn)
        if ws.static(self.tma_store):
            self.out.tail(tid % 128)

    @ws.jit
    def consume_tiles_shared(self, o, lse, o_desc, seq_k, k_pipe, v_pipe, storage):
        """``consume_tiles_overlapped`` with ``shared_boundary``: one loop of ``kv_step`` over
        the CTA's (output tile, K/V tile) steps, static or claimed tiles alike
        (``following_tile``). ``tile`` is the K/V tile of the step's S; when it reaches the
        tile's count (``ends``) the step is the boundary: the current Q is released, the next
        tile's (b, h, m_block, n_tiles) read, and the step issues that tile's S'_0 beside this
        tile's last P V, then this tile's O is stored; b = -1 (no next tile) runs the last P V
        alone (``last_pv``) and ends the loop."""
        tid, turn, lane, keys, kst, vst = self.consumers_start(o, seq_k, k_pipe, v_pipe)
        sched = None if ws.static(self.dynamic_tiles) else self.scheduler(o)
        t = ws.Int32(0) if ws.static(self.dynamic_tiles) else sched.first()
        b, h, m_block, n_tiles, t = self.following_tile(sched, t, True, 0, o, seq_k, storage)
        rows, row_wg, dq = self.tile_rows(m_block, 0, storage)
        p, m_i, l_i, alpha, kst = self.first_scores(dq, rows, lane, row_wg, keys, k_pipe, kst,
                                                    turn, storage)
        acc = self.rescale_at_wait_of(ws.wgmma.zeros(self.head_dim), alpha)
        local = ws.Int32(0)
        tile = ws.Int32(1)
        while b >= 0:
            ends = tile >= n_tiles
            b2, h2, m_block2, n_tiles2 = b, h, m_block, n_tiles
            rows_o, row_wg_o = rows, row_wg               # the tile whose last P V this is
            if ends:
                self.release_q(storage, local)
                b2, h2, m_block2, n_tiles2, t = self.following_tile(sched, t, False, local + 1,
                                                                    o, seq_k, storage)
                rows, row_wg, dq = self.tile_rows(m_block2, local + 1, storage)
            m2, l2 = m_i, l_i
            if b2 >= 0:
                fresh = self.softmax_start()
                m_in = [ws.math.select(ends, fresh[0][r], m_i[r]) for r in ws.static_range(2)]
                l_in = [ws.math.select(ends, fresh[1][r], l_i[r]) for r in ws.static_range(2)]
                acc, p, m2, l2, alpha, kst, vst = self.kv_step(
                    dq, rows, lane, row_wg, keys, ws.math.select(ends, 0, tile), k_pipe, v_pipe,
                    kst, vst, turn, storage, acc, p, m_in, l_in, alpha, False, ends)
            else:
                acc, vst = self.last_pv(acc, p, alpha, v_pipe, vst, storage)
            tile = ws.math.select(ends, 1, tile + 1)
            if ends:
                self.store_out(o, lse, o_desc, b, h, rows_o, row_wg_o, acc, m_i, l_i, storage)
                acc = ws.wgmma.zeros(self.head_dim)
                local = local + 1
            m_i, l_i = m2, l2
            b, h, m_block, n_tiles = b2, h2, m_block2, n_tiles2
        self.consumers_finish(tid, turn)

    @ws.jit
    def following_tile(self, sched, t, first, local, o, seq_k, storage):
        """The (b, h, m_block, n_tiles) of the CTA's ``local``-th output tile, its Q waited
        for, and the schedule's index of it: claimed tiles (``sched`` None) read it from the
        Q buffer (``next_tile``, b = -1: none left); the static schedule takes tile ``t``
        (``first``, static) or the one after ``t``, with b = -1 past the last."""
        if ws.static(sched is None):
            b, h, m_block, n_tiles = self.next_tile(local, storage)
            return b, h, m_block, n_tiles, t
        if ws.static(first):                # the CTA's first tile exists (``grid``)
            b, h, m_block, n_tiles = self.tile_work(sched, t, o, seq_k)
            self.wait_q(local, storage)
            return b, h, m_block, n_tiles, t
        nxt = t + sched.stride()
        b, h, m_block, n_tiles = ws.Int32(-1), ws.Int32(0), ws.Int32(0), ws.Int32(0)
        if nxt < sched.num_tiles():
            b, h, m_block, n_tiles = self.tile_work(sched, nxt, o, seq_k)
            self.wait_q(local, storage)
        return b, h, m_block, n_tiles, nxt

    @ws.jit
    def consume_tiles_overlapped(self, o, lse, o_desc, seq_k, k_pipe, v_pipe, storage):
        """The consumer warpgroups over this CTA's output tiles (persistent schedule), each
        tile boundary overlapped (``next_tile_start``); the ring states, the turns and the
        softmax state of the tile whose first S is done are carried across tiles."""
        if ws.static(self.shared_boundary):
            self.consume_tiles_shared(o, lse, o_desc, seq_k, k_pipe, v_pipe, storage)
            return
        if ws.static(self.dynamic_tiles):
            self.consume_claimed_overlapped(o, lse, o_desc, seq_k, k_pipe, v_pipe, storage)
            return
        tid, turn, lane, keys, kst, vst = self.consumers_start(o, seq_k, k_pipe, v_pipe)
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
        self.consumers_finish(tid, turn)

    @ws.jit
    def consume_claimed_overlapped(self, o, lse, o_desc, seq_k, k_pipe, v_pipe, storage):
        """``consume_tiles_overlapped`` over the tiles the producer claims (``dynamic_tiles``):
        each tile's (b, h, m_block, n_tiles) is read from its Q buffer (``next_tile``) before
        the boundary, which overlaps the next tile's first S with this tile's last P V when the
        next buffer holds a tile (b >= 0) and ends the walk with the last P V alone when it holds
        the producer's b = -1. The CTA's first tile always exists (the grid is at most the
        tile count: ``grid``)."""
        tid, turn, lane, keys, kst, vst = self.consumers_start(o, seq_k, k_pipe, v_pipe)
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
        self.consumers_finish(tid, turn)

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
        acc, p2, m_i, l_i, alpha = self.softmax_and_wait(s, m_i, l_i, acc, v_pipe, vst,
                                                         rescale=False)
        return acc, self.to_a(p2), m_i, l_i, alpha, kst.advance(), vst.advance()
