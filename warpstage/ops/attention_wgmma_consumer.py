"""The consumer warpgroups of the wgmma + TMA FlashAttention kernel (``attention_wgmma.py``),
as a mixin of ``FlashAttentionWgmma``: per output tile, S = Q K^T and O += P V on wgmma with the
online softmax in between (``overlapped_loop``: FlashAttention-3's intra-warpgroup overlap;
``serial_loop``), the consumer warpgroups' turns (``ws.pipeline.OrderedBarrier``), and the
epilogue (O / l, the log-sum-exp). The policy fields it reads are ``FlashAttentionWgmma``'s.
"""
from __future__ import annotations

import math

import warpstage as ws

from .attention_common import _NEG_INF

__all__ = ["WgmmaConsumer"]


class WgmmaConsumer:
    """Consumer-role methods of ``FlashAttentionWgmma`` (see the module docstring)."""

    # -- consumer role -------------------------------------------------------------------------
    @ws.jit
    def consume_all(self, o, lse, o_desc, seq_k, k_pipe, v_pipe, storage):
        """Consumer warpgroups: ``consume`` per output tile of this CTA (all of them with
        ``persistent``, those its producer hands over with ``dynamic_tiles``, else the CTA's
        one), the ring states and the turns carried across;
        with ``overlap_tiles`` the tiles' boundaries overlap (``consume_tiles_overlapped``)."""
        if ws.static(self.overlap_tiles):
            self.consume_tiles_overlapped(o, lse, o_desc, seq_k, k_pipe, v_pipe, storage)
            return
        tid = self.consumer_tid()
        wg = ws.arch.make_warp_uniform(tid // 128)                 # 0 .. consumer_wgs - 1
        turn = self.make_turns(wg)
        kst = k_pipe.consumer_start_state()
        vst = v_pipe.consumer_start_state()
        if ws.static(self.dynamic_tiles):
            local = ws.Int32(0)
            b, h, m_block, n_tiles = self.next_tile(local, storage)
            while b >= 0:
                kst, vst = self.consume(o, lse, o_desc, seq_k, b, h, m_block, n_tiles, k_pipe,
                                        v_pipe, kst, vst, turn, local, storage)
                local = local + 1
                b, h, m_block, n_tiles = self.next_tile(local, storage)
        elif ws.static(self.persistent):
            local = ws.Int32(0)
            sched = self.scheduler(o)
            for t in range(sched.first(), sched.num_tiles(), sched.stride()):
                b, h, m_block, n_tiles = self.tile_work(sched, t, o, seq_k)
                kst, vst = self.consume(o, lse, o_desc, seq_k, b, h, m_block, n_tiles, k_pipe,
                                        v_pipe, kst, vst, turn, local, storage)
                local = local + 1
        else:
            b, h, m_block, n_tiles = self.tile_work(None, None, o, seq_k)
            kst, vst = self.consume(o, lse, o_desc, seq_k, b, h, m_block, n_tiles, k_pipe,
                                    v_pipe, kst, vst, turn, 0, storage)
        self.finish_turns(turn)
        if ws.static(self.tma_store):
            self.out.tail(tid % 128)

    @ws.jit
    def consume(self, o, lse, o_desc, seq_k, b, h, m_block, n_tiles, k_pipe, v_pipe, kst, vst,
                turn, local, storage):
        """One output tile (the CTA's ``local``-th): 64 query rows per consumer warpgroup;
        S = Q K^T and O += P V on wgmma with the online softmax in between, over the K/V
        rings; then O / l to ``o``. Returns the advanced ring states."""
        rows, row_wg, dq = self.tile_rows(m_block, local, storage)
        self.wait_q(local, storage)
        if self.rows_idle(row_wg, o.shape[2]):          # skip_idle: nothing to compute here
            kst, vst = self.idle_loop(n_tiles, k_pipe, v_pipe, kst, vst, turn, local, storage)
        else:
            kst, vst = self.consume_rows(o, lse, o_desc, seq_k, b, h, rows, row_wg, dq, n_tiles,
                                         k_pipe, v_pipe, kst, vst, turn, local, storage)
        return kst, vst

    @ws.jit
    def consume_rows(self, o, lse, o_desc, seq_k, b, h, rows, row_wg, dq, n_tiles, k_pipe,
                     v_pipe, kst, vst, turn, local, storage):
        """``consume``'s work for a warpgroup with rows to compute: the K/V loop, then the
        epilogue. Returns the advanced ring states."""
        lane = ws.arch.lane_idx()
        keys = (seq_k, self.causal_offset(o.shape[2], seq_k))
        if ws.static(self.overlap):
            acc, m_i, l_i, kst, vst = self.overlapped_loop(dq, rows, lane, row_wg, keys, n_tiles,
                                                      k_pipe, v_pipe, kst, vst, turn, local,
                                                      storage)
        else:
            acc, m_i, l_i, kst, vst = self.serial_loop(dq, rows, lane, row_wg, keys, n_tiles,
                                                  k_pipe, v_pipe, kst, vst, turn, local,
                                                  storage)
        self.store_out(o, lse, o_desc, b, h, rows, row_wg, acc, m_i, l_i, storage)
        return kst, vst

    def consumer_tid(self):
        """This thread's index among the consumer threads (dynamic)."""
        return ws.arch.thread_idx()[0] - self.producer_threads

    def tile_rows(self, m_block, local, storage):
        """The geometry of output tile ``m_block`` (the CTA's ``local``-th) for this thread:
        (its two rows, the warpgroup's first row, the descriptor of the warpgroup's 64 rows of
        Q in the tile's Q buffer)."""
        tid = self.consumer_tid()
        wg = ws.arch.make_warp_uniform(tid // 128)
        warp = ws.arch.make_warp_uniform(tid // 32) % 4            # warp in the warpgroup
        row_wg = m_block * self.tile_m + wg * 64                   # the warpgroup's first row
        r0 = row_wg + warp * 16 + (ws.arch.lane_idx() >> 2)
        q_tile = self.q_buffer(storage, local)
        return [r0, r0 + 8], row_wg, ws.wgmma.tile_descriptor(q_tile, major="K").at(row=wg * 64)

    def q_slot(self, local) -> tuple:
        """(Q buffer, mbarrier parity) of the CTA's ``local``-th output tile: one buffer, the
        parity alternating per tile; with ``q_buffers`` = 2 (``overlap_tiles``) the buffers
        alternate and each one's parity every other tile."""
        if ws.static(self.q_buffers == 1):
            return 0, local & 1
        return local & 1, (local >> 1) & 1

    def q_buffer(self, storage, local):
        """The Q tile (smem array of ``q_layout.shape``) of the ``local``-th output tile."""
        if ws.static(self.q_buffers == 1):
            return storage.q
        return storage.q[self.q_slot(local)[0]]

    def wait_q(self, local, storage) -> None:
        """Wait until Q of the CTA's ``local``-th output tile has landed."""
        idx, parity = self.q_slot(local)
        storage.q_bar[idx].wait(parity)

    @ws.jit
    def store_out(self, o, lse, o_desc, b, h, rows, row_wg, acc, m_i, l_i, storage):
        """The tile's epilogue: ``store_tma`` with ``tma_store``, else ``epilogue``."""
        tid = self.consumer_tid()
        if ws.static(self.tma_store):
            self.store_tma(o_desc, lse, b, h, ws.arch.make_warp_uniform(tid // 128), tid % 128,
                           row_wg, rows, ws.arch.lane_idx(), acc, m_i, l_i, o.shape[2], storage)
        else:
            self.epilogue(o, lse, b, h, rows, ws.arch.lane_idx(), acc, m_i, l_i, o.shape[2])

    def release_q(self, storage, local) -> None:
        """With ``persistent``: every consumer thread arrives on the ``q_empty`` of the
        ``local``-th tile's Q buffer once its last S = Q K^T of the tile has completed, so the
        producer may load a later tile's Q there."""
        if ws.static(self.persistent):
            storage.q_empty[self.q_slot(local)[0]].arrive()

    def make_turns(self, wg):
        """The consumer warpgroups' ``OrderedBarrier`` (named barriers 1..consumer_wgs) with
        ``pingpong``, else None."""
        if ws.static(self.pingpong):
            return ws.pipeline.OrderedBarrier.create(wg, self.consumer_wgs, 128, base_id=1)
        return None

    def begin_turn(self, turn) -> None:
        if ws.static(self.pingpong):
            turn.wait()

    def end_turn(self, turn) -> None:
        if ws.static(self.pingpong):
            turn.arrive()

    @ws.jit
    def serial_loop(self, dq, rows, lane, row_wg, keys, n_tiles, k_pipe, v_pipe, kst, vst,
                    turn, local, storage):
        """Per tile: S = Q K^T (waited), softmax, O += P V (waited). Returns (O, l, K state,
        V state)."""
        acc = ws.wgmma.zeros(self.head_dim)
        m_i, l_i = self.softmax_start()
        for tile in range(n_tiles):
            self.wait_k(k_pipe, kst)
            self.begin_turn(turn)
            s = self.issue_scores(dq, storage.k[kst.index], False)
            self.end_turn(turn)
            s = ws.wgmma.wait_group(0, s)
            self.release_k(k_pipe, kst)
            s = self.finish_scores(s, tile * self.tile_n, rows, lane, row_wg, keys)
            p, m_i, l_i, alpha = self.softmax_update(s, m_i, l_i)
            acc = self.rescale(acc, alpha)
            self.wait_v(v_pipe, vst)
            a = self.fence_all(acc, self.to_a(p))
            acc = ws.wgmma.wait_group(0, self.issue_pv(a[1:], storage.v[vst.index], a[0]))
            self.release_v(v_pipe, vst)
            kst = kst.advance()
            vst = vst.advance()
        self.release_q(storage, local)
        return acc, m_i, l_i, kst, vst

    @ws.jit
    def overlapped_loop(self, dq, rows, lane, row_wg, keys, n_tiles, k_pipe, v_pipe, kst, vst,
                        turn, local, storage):
        """FlashAttention-3's intra-warpgroup overlap: the softmax of tile j runs while the
        tensor cores do P_{j-1} V_{j-1} (``first_scores``, ``kv_loop``, ``last_pv``).
        Returns (O, m, l, K state, V state)."""
        if ws.static(self.narrow_last):
            if (n_tiles == 1) & self.half_visible(0, row_wg, keys):
                p, m_i, l_i, alpha, kst = self.first_scores(dq, rows, lane, row_wg, keys, k_pipe,
                                                            kst, turn, storage, True)
            else:
                p, m_i, l_i, alpha, kst = self.first_scores(dq, rows, lane, row_wg, keys, k_pipe,
                                                            kst, turn, storage, False)
        else:
            p, m_i, l_i, alpha, kst = self.first_scores(dq, rows, lane, row_wg, keys, k_pipe,
                                                        kst, turn, storage, False)
        acc = self.rescale_at_wait_of(ws.wgmma.zeros(self.head_dim), alpha)
        looped = n_tiles - 1 if ws.static(self.narrow_last) else n_tiles
        acc, p, m_i, l_i, alpha, kst, vst = self.kv_loop(dq, rows, lane, row_wg, keys, looped,
                                                         k_pipe, v_pipe, kst, vst, turn,
                                                         storage, acc, p, m_i, l_i, alpha)
        if ws.static(self.narrow_last):
            last = n_tiles - 1
            half = self.half_visible(last * self.tile_n, row_wg, keys)
            if n_tiles > 1:
                if half:
                    acc, p, m_i, l_i, alpha, kst, vst = self.kv_step(
                        dq, rows, lane, row_wg, keys, last, k_pipe, v_pipe, kst, vst, turn,
                        storage, acc, p, m_i, l_i, alpha, True)
                else:
                    acc, p, m_i, l_i, alpha, kst, vst = self.kv_step(
                        dq, rows, lane, row_wg, keys, last, k_pipe, v_pipe, kst, vst, turn,
                        storage, acc, p, m_i, l_i, alpha, False)
            self.release_q(storage, local)
            if half:
                acc, vst = self.last_pv(acc, p, alpha, v_pipe, vst, storage, True)
            else:
                acc, vst = self.last_pv(acc, p, alpha, v_pipe, vst, storage, False)
        else:
            self.release_q(storage, local)
            acc, vst = self.last_pv(acc, p, alpha, v_pipe, vst, storage)
        return acc, m_i, l_i, kst, vst

    def half_visible(self, n0, row_wg, keys):
        """With ``narrow_last``: whether every key of the K/V tile at ``n0`` that this
        consumer warpgroup (rows ``row_wg`` .. + 63) may see lies in the tile's first half:
        the keys past it are past S_k or (causal) past the diagonal of the warpgroup's last
        row. Then S's second half and its P V k-steps are all zeros of P and are skipped
        (dynamic, warpgroup-uniform)."""
        seq_k, offset = keys
        end = seq_k
        if ws.static(self.causal):
            end = ws.math.min(seq_k, row_wg + self.consumer_rows + offset)
        return n0 + self.tile_n // 2 >= end

    @ws.jit
    def first_scores(self, dq, rows, lane, row_wg, keys, k_pipe, kst, turn, storage,
                     narrow=False):
        """An output tile's first K/V tile: (turn) S_0 = Q K_0^T, waited for, K_0 released,
        the first softmax step (``narrow``, static: S of the tile's first half of keys only,
        the rest -inf: ``half_visible``). Returns (P_0 as A fragments, m, l, alpha, K
        state)."""
        m_i, l_i = self.softmax_start()
        self.turn_wait_k(k_pipe, kst)
        self.begin_turn(turn)
        s = self.issue_scores(dq, storage.k[kst.index], False, narrow)
        self.end_turn(turn)
        s = self.widen(ws.wgmma.wait_group(0, s), narrow)
        self.release_k(k_pipe, kst)
        s = self.finish_scores(s, 0, rows, lane, row_wg, keys)
        p, m_i, l_i, alpha = self.softmax_update(s, m_i, l_i)
        return self.to_a(p), m_i, l_i, alpha, kst.advance()

    @ws.jit
    def kv_loop(self, dq, rows, lane, row_wg, keys, n_tiles, k_pipe, v_pipe, kst, vst, turn,
                storage, acc, p, m_i, l_i, alpha):
        """K/V tiles 1 .. n_tiles - 1 of an output tile. Per tile j: (turn) issue S_j, rescale
        O by the previous alpha, issue P_{j-1} V_{j-1} (end of turn); wait for S_j, release
        K_j, softmax; wait for P V, release V_{j-1} (with ``rescale_at_wait`` O is rescaled by
        alpha_j here instead of in the next turn); only then convert P_j to the A fragments
        (the registers of P_{j-1} are read by the wgmma in flight until it completes, so
        converting earlier needs 32 more registers, and ptxas then hoists the wait above the
        softmax). Returns (O, P as A fragments, m, l, alpha, K state, V state)."""
        for tile in range(1, n_tiles):
            acc, p, m_i, l_i, alpha, kst, vst = self.kv_step(dq, rows, lane, row_wg, keys, tile,
                                                             k_pipe, v_pipe, kst, vst, turn,
                                                             storage, acc, p, m_i, l_i, alpha)
        return acc, p, m_i, l_i, alpha, kst, vst

    @ws.jit
    def kv_step(self, dq, rows, lane, row_wg, keys, tile, k_pipe, v_pipe, kst, vst, turn,
                storage, acc, p, m_i, l_i, alpha, narrow=False, ends=None):
        """K/V tile ``tile`` (``kv_loop``'s step; with ``narrow``, static: S of the tile's
        first half of keys only, ``half_visible``). Nothing is in flight when it returns (its
        P V is waited for), so a dynamic branch between the two forms merges only completed
        values. ``ends``: None, or a dynamic bool that is true where the step is a tile
        boundary (``TileOverlap.consume_tiles_shared``: ``dq``, ``rows``, ``tile`` = 0 and the
        fresh m, l are the next output tile's, and the P V the last of this one, whose O is
        then not rescaled by the next tile's alpha). Returns (O, P as A fragments, m, l,
        alpha, K state, V state)."""
        self.turn_wait_k(k_pipe, kst)
        self.begin_turn(turn)
        s = self.issue_scores(dq, storage.k[kst.index], False, narrow)     # S_j: one group
        acc = self.rescale_in_turn(acc, alpha)
        self.turn_wait_v(v_pipe, vst)
        a = self.fence_all(acc, p)                    # here: no branch before the mmas
        acc = self.issue_pv(a[1:], storage.v[vst.index], a[0])    # P_{j-1} V_{j-1}
        self.end_turn(turn)
        s = self.widen(ws.wgmma.wait_group(1, s), narrow)
        self.release_k(k_pipe, kst)
        s = self.finish_scores(s, tile * self.tile_n, rows, lane, row_wg, keys)
        acc, p, m_i, l_i, alpha = self.softmax_and_wait(s, m_i, l_i, acc, v_pipe, vst, ends)
        p = self.to_a(p)
        return acc, p, m_i, l_i, alpha, kst.advance(), vst.advance()

    def softmax_and_wait(self, s, m_i, l_i, acc, v_pipe, vst, ends=None, rescale=True):
        """The overlapped step after its S wait: the softmax step on ``s``, the wait for the P V
        in flight (``acc``), O's rescale there (``rescale_at_wait_of``, by alpha or, where
        ``ends`` holds, by 1; none when ``rescale`` is False: a tile boundary's last P V) and
        V's release, in ``late_wait``'s order (the whole softmax, a block end, the wait) or
        ``exp_after_wait``'s (the max and the exponent arguments, a block end, the wait, the
        rescale, then the exponentials and row sums). Returns (O, P as f32 fragments, m, l,
        alpha)."""
        if ws.static(self.exp_after_wait):
            args, m_i, alpha = self.softmax_begin(s, m_i)
            self.fence_values(m_i)
        else:
            p, m_i, l_i, alpha = self.softmax_update(s, m_i, l_i)
            self.fence_block(l_i)
        acc = ws.wgmma.wait_group(0, acc)
        if ws.static(rescale):
            kept = alpha if ws.static(ends is None) else [ws.math.select(ends, 1.0, a)
                                                           for a in alpha]
            acc = self.rescale_at_wait_of(acc, kept)
        self.release_v(v_pipe, vst)
        if ws.static(self.exp_after_wait):
            p, l_i = self.softmax_end(args, l_i, alpha)
        return acc, p, m_i, l_i, alpha

    @ws.jit
    def last_pv(self, acc, p, alpha, v_pipe, vst, storage, narrow=False):
        """The output tile's last O += P V, alone (rescaled by the last alpha), waited for, V
        released (``narrow``, static: over the tile's first half of keys, the k-steps whose P
        is not all zeros). Returns (O, V state)."""
        acc = self.rescale_in_turn(acc, alpha)
        self.wait_v(v_pipe, vst)
        if ws.static(narrow):
            p = p[:self.tile_n // 32]
        a = self.fence_all(acc, p)
        acc = ws.wgmma.wait_group(0, self.issue_pv(a[1:], storage.v[vst.index], a[0]))
        self.release_v(v_pipe, vst)
        return acc, vst.advance()

    def rescales_at_wait(self) -> bool:
        """Whether O is rescaled right after its P V wait (``rescale_at_wait``, or
        ``rescale_threshold``, whose skipped rescale sits there) rather than in the turn."""
        return self.rescale_at_wait or self.rescale_threshold is not None

    def rescale_in_turn(self, acc, alpha):
        """O times alpha where the overlapped step issues P V (inside the turn; the compiler
        places the multiplies), or O as it is when ``rescales_at_wait``: it was rescaled
        already (``rescale_at_wait_of``)."""
        return acc if ws.static(self.rescales_at_wait()) else self.rescale(acc, alpha)

    def rescale_at_wait_of(self, acc, alpha):
        """When ``rescales_at_wait``: O times alpha right after the wait that completes it (and
        on entry to the loop), so the multiplies sit at the end of the K/V step, outside the
        next turn (with ``rescale_threshold`` only when some row of the warp has alpha != 1:
        ``rescale_if_moved``); else O as it is (``rescale_in_turn`` rescales it)."""
        if ws.static(self.rescale_threshold is not None):
            return self.rescale_if_moved(acc, alpha)
        return self.rescale(acc, alpha) if ws.static(self.rescale_at_wait) else acc

    @ws.jit
    def rescale_if_moved(self, acc, alpha):
        """O times alpha when a warp vote finds a row of the warp with alpha != 1 (its max
        moved: ``OnlineSoftmax.stale_max``), else O as it is: the same values, since x * 1 is
        x; a uniform branch around the 64-register multiply (the warp's 16 rows own their O
        fragments, so the vote is per warp)."""
        if ws.arch.vote_any((alpha[0] != 1.0) | (alpha[1] != 1.0)):
            acc = self.rescale(acc, alpha)
        return acc

    @ws.jit
    def fence_values(self, values):
        """End the basic block here with a branch that is never taken at run time (a NaN
        ``values[0]``), so that ptxas schedules what follows (the P V wait first) after it."""
        if values[0] != values[0]:
            ws.arch.sync_warp()

    @ws.jit
    def fence_block(self, values):
        """With ``late_wait``: end the basic block after the softmax with a branch that is
        never taken at run time (a NaN row sum), so that ptxas keeps the P V wait that follows
        below the softmax."""
        if ws.static(self.late_wait):
            if values[0] != values[0]:
                ws.arch.sync_warp()

    @ws.jit
    def turn_wait_k(self, k_pipe, state):
        """``wait_k`` for a wait followed by this warpgroup's turn; with ``lead_waits`` only
        consumer warpgroup 0 waits (FlashAttention-3's scheduler-barrier order: the others'
        turns start after warpgroup 0's, which began after the stage had landed)."""
        if ws.static(self.lead_waits):
            if ws.arch.make_warp_uniform(self.consumer_tid() // 128) == 0:
                self.wait_k(k_pipe, state)
        else:
            self.wait_k(k_pipe, state)

    @ws.jit
    def turn_wait_v(self, v_pipe, state):
        """``wait_v`` inside this warpgroup's turn; with ``lead_waits`` only in consumer
        warpgroup 0 (``turn_wait_k``)."""
        if ws.static(self.lead_waits):
            if ws.arch.make_warp_uniform(self.consumer_tid() // 128) == 0:
                self.wait_v(v_pipe, state)
        else:
            self.wait_v(v_pipe, state)

    def finish_turns(self, turn) -> None:
        if ws.static(self.pingpong):
            turn.finish()

    @ws.jit
    def epilogue(self, o, lse, b, h, rows, lane, acc, m_i, l_i, seq_q):
        """O / l, stored for rows < S_q; with an ``lse`` tensor (static: not None) also the
        row's log-sum-exp of the scaled scores, ``scale m + ln l`` (float32; -inf for a row
        that saw no key)."""
        for r in ws.static_range(2):
            inv = self.row_inverse(l_i[r])               # quad shuffles: the whole warp
            if ws.static(lse is not None):
                row_lse = self.log_sum_exp(m_i[r], l_i[r])
            if rows[r] < seq_q:
                self.store_row(o, b, h, rows[r], r, lane, acc, inv)
                if ws.static(lse is not None):
                    if lane & 3 == 0:
                        lse[b, h, rows[r]] = row_lse

    @ws.jit
    def store_tma(self, o_desc, lse, b, h, wg, wtid, row_wg, rows, lane, acc, m_i, l_i, seq_q,
                  storage):
        """O / l through shared memory and TMA stores of this warpgroup's 64 rows (rows past
        S_q are clipped by TMA); the log-sum-exp as in ``epilogue``."""
        inv = [self.row_inverse(l_i[r]) for r in ws.static_range(2)]
        scaled = self.fragments([x * inv[(i >> 1) & 1] for i, x in enumerate(self.elements(acc))])
        self.out.store(scaled, wtid, o_desc, storage.o_buf[wg], (b, h, row_wg, 0),
                       barrier_id=1 + self.consumer_wgs + wg)
        if ws.static(lse is not None):
            for r in ws.static_range(2):
                row_lse = self.log_sum_exp(m_i[r], l_i[r])
                if rows[r] < seq_q:
                    if lane & 3 == 0:
                        lse[b, h, rows[r]] = row_lse

    def log_sum_exp(self, m, l):
        """ln(sum_j exp(scale s_j)) of a row from its running max m and its sum
        l = sum_j 2^((s_j - m) c): ``scale m + ln l``, or ``ln(2) m + ln l`` when the scores
        were scaled by scale * log2(e) first (a scale <= 0, ``AttentionPolicy.set_fields``);
        with ``fma_select`` less ``ln(2) d`` (l carries the factor 2^d of the row's offset,
        ``OnlineSoftmax.log2_sum_shift``)."""
        factor = self.softmax_scale if self.scale_log2 > 0 else math.log(2.0)
        lse = m * factor + ws.math.log(self.row_sum(l))
        if ws.static(self.uses_fma_select()):
            lse = lse - self.log2_sum_shift(m) * math.log(2.0)
        return lse

    def issue_scores(self, dq, k_stage, fenced: bool, narrow: bool = False):
        """Issue S = Q K^T (64 x tile_n per warpgroup, f32; ``narrow``: 64 x tile_n / 2, the
        stage's first half of keys) as ``D / 16`` wgmma k-steps in one committed group (after
        a ``wgmma.fence`` unless ``fenced``); not waited for."""
        dk = ws.wgmma.tile_descriptor(k_stage, major="K")
        if ws.static(not fenced):
            ws.wgmma.fence()
        n = self.tile_n // 2 if narrow else self.tile_n
        s = ws.wgmma.mma(dq.k_step(0), dk.k_step(0), None, n=n, scale_d=False)
        for kk in ws.static_range(1, self.head_dim // 16):
            s = ws.wgmma.mma(dq.k_step(kk), dk.k_step(kk), s)
        ws.wgmma.commit_group()
        return s

    @ws.jit
    def finish_scores(self, s, n0, rows, lane, row_wg, keys):
        """The completed (waited for) S of keys n0.., scaled by ``scale_log2`` when that is
        <= 0, masked where the stage needs it."""
        if ws.static(self.exp2_scale != self.scale_log2):
            s = s * self.scale_log2
        seq_k, offset = keys
        if self.needs_mask(n0, row_wg, seq_k, offset):
            s = self.mask(s, n0, rows, lane, seq_k, offset)
        return s

    def to_a(self, p) -> list:
        """P's columns [16 kk, 16 kk + 16) in the input dtype: the A fragments of P V (packed
        pairs in b32 registers with ``packed_p``)."""
        return [ws.wgmma.accumulator_to_a(p, kk, self.dtype, packed=self.packed_p)
                for kk in ws.static_range(self.tile_n // 16)]

    def fence_all(self, acc, a) -> list:
        """``wgmma.fence`` over O and the A fragments ``a``; returns [O, A_0, A_1, ...] as the
        fence hands them back. Placed right before the mmas (ptxas injects a
        ``warpgroup.arrive`` (C7519) when a branch or a repacking sits in between)."""
        return list(ws.wgmma.fence(acc, *a))

    def widen(self, s, narrow: bool):
        """The completed S of a ``narrow`` issue (the stage's first tile_n / 2 keys: the first
        half of a tile_n-wide fragment's elements, ``AttentionPolicy.mask``'s order) as the
        full fragment with -inf for the keys it skipped; else S as it is."""
        if ws.static(not narrow):
            return s
        return self.fragments(self.elements(s) + [_NEG_INF] * len(self.elements(s)))

    def issue_pv(self, a, v_stage, acc):
        """Issue O += P V (one committed group, not waited for): A = P from registers (one
        fragment per 16 keys: ``len(a)`` k-steps), B = V (keys x D, D contiguous:
        MN-major)."""
        dv = ws.wgmma.tile_descriptor(v_stage, major="MN")
        for kk in ws.static_range(len(a)):
            acc = ws.wgmma.mma(a[kk], dv.k_step(kk), acc)
        ws.wgmma.commit_group()
        return acc
