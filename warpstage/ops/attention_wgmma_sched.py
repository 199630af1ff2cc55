"""The output-tile schedule of the wgmma FlashAttention kernel, as a mixin of
``FlashAttentionWgmma``: which (batch, head, row block) each CTA computes and in what order, for
the one-CTA-per-tile grid and the persistent grid (``ws.sched.PersistentTileScheduler``).

Persistent, non-causal: the row blocks of one batch-head together (they share K/V in L2),
batch-heads in order. With ``partial_last`` the row blocks that run past S_q (the last one of
each batch-head when S_q is not a multiple of ``tile_m``) come after every full one
(``row_block_order``): with ``skip_idle`` their warpgroups past S_q do no work, so those tiles
are the short ones, and a static round-robin over the tiles then gives each CTA its long tiles
first and the short ones in the tail. Without it, a stride of 132 CTAs that is a multiple of
the row blocks per batch-head hands every partial tile to the same few CTAs, and the makespan
is that of the CTAs with only full tiles (docs/performance.md, "Short sequences").

Causal: longest first. Persistent: the row blocks from the last (the most keys) down, each over
all batch-heads; one CTA per tile: each batch-head's row blocks in reverse, batch-head after
batch-head, so the hardware's CTA dispatch (in linear block order) mixes long and short tiles up
to the end of the grid. ``head_group`` = G makes both walk bands of G batch-heads, each band's
row blocks from the last down over its batch-heads (``coordinates``, ``scheduler``): longest
first over the band, whose K/V (G x 2 x S_k x D x 2 bytes) stay in L2.

Dynamic (``dynamic_tiles``, persistent): the CTAs take the tiles of the one-CTA-per-tile grid's
order (``linear_tile``) first come, first served: CTA c starts with tile c, and its producer
claims each next one from a global counter (``claim_tile``: ``atomicAdd`` + the grid size) and
hands its coordinates to the consumer warpgroups in shared memory (``tile_info``: b, h, the row
block and its K/V tiles, written before the arrive on the Q buffer's mbarrier, so the
consumers' wait on Q orders their read after it, and the consumers do none of the index
arithmetic); b = -1, with a plain arrive, ends the consumers' walk. So the tiles are
list-scheduled as the hardware dispatches a one-CTA-per-tile grid (a causal grid's mix of
long and short tiles stays balanced, and each band of batch-heads is worked on together, so
its K/V stay in L2), while the barrier set-up is paid once per SM and the producer loads the
next tile's Q and K/V under the current tile's last steps and epilogue. The counter pair
(claims, retired CTAs) is zero before a launch and left zero after it: the last CTA to retire
resets both (``retire_counter``); the op keeps a pair per stream, so two streams' launches
never share one (``attention.tile_counters``; FlashAttention-3's
sm90 forward claims its causal tiles from a semaphore the same way; this is our own code).
"""
from __future__ import annotations

import warpstage as ws

__all__ = ["TileSchedule", "row_block_order"]


def row_block_order(t, heads, seq_q, tile_m):
    """(batch-head, row block) of linear tile ``t`` (``0 <= t < heads * ceil(seq_q / tile_m)``)
    when the full row blocks of every batch-head come first, batch-head by batch-head, and the
    partial ones (rows past ``seq_q``) after all of them, one per batch-head. With ``seq_q`` a
    multiple of ``tile_m`` this is the plain order (``t // n_m``, ``t % n_m``). Works on Python
    ints and dynamic ``Int32`` alike (non-negative values): the device code and host-side checks
    share it."""
    n_full = seq_q // tile_m
    full = heads * n_full
    is_full = t < full
    per = ws.math.max(n_full, 1)                 # no row block is full when S_q < tile_m
    bh = ws.math.select(is_full, t // per, t - full)
    m_block = ws.math.select(is_full, t % per, n_full)
    return bh, m_block


class TileSchedule:
    """Tile-schedule methods of ``FlashAttentionWgmma`` (module docstring); reads its fields
    ``causal``, ``tile_m``, ``persistent``, and sets and reads ``partial_last``, ``skip_idle``,
    ``head_group`` (and ``lead_waits``, which the consumer's turns read)."""

    def set_schedule_fields(self, skip_idle, partial_last, head_group, lead_waits,
                            dynamic_tiles=False) -> None:
        """Check and store ``skip_idle``, ``partial_last``, ``head_group``, ``lead_waits`` and
        ``dynamic_tiles`` (after ``causal``, ``persistent``, ``pingpong`` and
        ``overlap_tiles`` are set). OperandError (a ValueError) for a value or a combination
        the kernel cannot run."""
        if head_group is not None and (isinstance(head_group, bool) or not isinstance(
                head_group, int) or not 1 <= head_group <= 65536):
            raise self.policy_error("head_group", head_group, "None or an int in [1, 65536] "
                                    "(batch-heads per band of the causal order)",
                                    "head_group=None, or e.g. head_group=16")
        if head_group is not None and not self.causal:
            raise self.policy_error("head_group", head_group, "None without causal (it orders "
                                    "the causal tiles' longest-first walk)", "head_group=None")
        if partial_last and (self.causal or not self.persistent):
            raise self.policy_error("partial_last", partial_last, "False unless persistent and "
                                    "not causal (it orders the persistent non-causal tiles)",
                                    "partial_last=False")
        if lead_waits and not self.pingpong:
            raise self.policy_error("lead_waits", lead_waits, "False unless pingpong=True (the "
                                    "other warpgroups rely on the turns' order)",
                                    "lead_waits=False, or pingpong=True")
        if skip_idle and self.overlap_tiles:
            raise self.policy_error("skip_idle", skip_idle, "False with overlap_tiles=True (the "
                                    "cross-tile loop carries every warpgroup's next tile)",
                                    "skip_idle=False, or overlap_tiles=False")
        if dynamic_tiles and not self.persistent:
            raise self.policy_error("dynamic_tiles", dynamic_tiles, "False unless persistent "
                                    "(it hands a persistent CTA its next output tile)",
                                    "dynamic_tiles=False, or persistent=True")
        self.dynamic_tiles = self.flag("dynamic_tiles", dynamic_tiles)
        self.skip_idle = self.flag("skip_idle", skip_idle)
        self.partial_last = self.flag("partial_last", partial_last)
        self.head_group = head_group
        self.lead_waits = self.flag("lead_waits", lead_waits)

    def scheduler(self, o):
        """The persistent schedule of the output tiles (``ws.sched.PersistentTileScheduler``,
        the GEMM's): row blocks of one batch-head together (they share K/V in L2), or with
        ``causal`` the row blocks from the last (the most keys) down, each over all
        batch-heads, so long tiles start first. Every role walks it on its own."""
        create = ws.sched.PersistentTileScheduler.create
        n_m = (o.shape[2] + (self.tile_m - 1)) // self.tile_m
        heads = o.shape[0] * o.shape[1]
        if ws.static(self.causal):
            group = 65536 if self.head_group is None else self.head_group
            return create(heads, n_m, 1, raster="M", group=group)
        return create(n_m, 1, heads, raster="M", group=65536)

    def coordinates(self, heads):
        """(b, h, m_block) of this CTA of the one-CTA-per-tile grid: ``AttentionPolicy``'s
        (each batch-head's row blocks together, with ``causal`` from the last down), or with
        ``causal`` and ``head_group`` = G the CTAs' linear index walks bands of G batch-heads,
        and in a band the row blocks from the last down, each over the band's batch-heads
        (``ws.sched.tile_coords`` with raster M, group G): longest first within a band whose
        K/V stay in L2, and G = 1 is the default order."""
        if ws.static(not self.causal or self.head_group is None):
            return super().coordinates(heads)
        x, y, _ = ws.arch.block_idx()
        n_m, n_bh, _ = ws.arch.grid_dim()
        bh, j, _ = ws.sched.tile_coords(x + y * n_m, n_bh, n_m, "M", self.head_group)
        return bh // heads, bh % heads, n_m - 1 - j

    def tile_work(self, sched, t, o, seq_k):
        """(b, h, m_block, K/V tiles) of output tile ``t`` of ``sched`` (``scheduler``), or with
        ``sched`` None of this CTA's one tile (``coordinates``): what both roles walk."""
        if sched is None:
            b, h, m_block = self.coordinates(o.shape[1])
        else:
            b, h, m_block = self.tile_coordinates(sched, t, o)
        return b, h, m_block, self.kv_tiles(o.shape[2], seq_k, m_block)

    def tile_coordinates(self, sched, t, o):
        """(b, h, m_block) of output tile ``t`` (dynamic) of ``scheduler``'s order (with
        ``partial_last``, non-causal: ``row_block_order``)."""
        if ws.static(self.partial_last and not self.causal):
            bh, m_block = row_block_order(t, o.shape[0] * o.shape[1], o.shape[2], self.tile_m)
            return bh // o.shape[1], bh % o.shape[1], m_block
        i, j, batch = sched.tile(t)
        if ws.static(self.causal):
            bh, m_block = i, sched.tiles_n - 1 - j
        else:
            bh, m_block = batch, i
        return bh // o.shape[1], bh % o.shape[1], m_block

    # -- dynamic_tiles: first come, first served -----------------------------------------------
    def tile_count(self, o):
        """Output tiles of the launch: B * H * ceil(S_q / tile_m) (dynamic)."""
        return o.shape[0] * o.shape[1] * ((o.shape[2] + (self.tile_m - 1)) // self.tile_m)

    def linear_tile(self, t, o):
        """(b, h, m_block) of linear tile ``t`` (dynamic, ``0 <= t < tile_count``) in the order
        of the one-CTA-per-tile grid (``coordinates``' block order): each batch-head's row
        blocks together; with ``causal`` from the last (the most keys) down, over bands of
        ``head_group`` batch-heads (None: one); with ``partial_last`` (non-causal) the partial
        row blocks after every full one (``row_block_order``)."""
        heads = o.shape[0] * o.shape[1]
        n_m = (o.shape[2] + (self.tile_m - 1)) // self.tile_m
        if ws.static(self.causal):
            group = 1 if self.head_group is None else self.head_group
            bh, j, _ = ws.sched.tile_coords(t, heads, n_m, "M", group)
            m_block = n_m - 1 - j
        elif ws.static(self.partial_last):
            bh, m_block = row_block_order(t, heads, o.shape[2], self.tile_m)
        else:
            bh, m_block = t // n_m, t % n_m
        return bh // o.shape[1], bh % o.shape[1], m_block

    @ws.jit
    def claim_tile(self, tiles):
        """The producer warp's next output tile: lane 0 adds 1 to the claim counter
        (``tiles[0]``, global, relaxed ``atom.add``) and the warp takes the old value plus the
        grid size (the first ``grid`` tiles are the CTAs' own, ``block_idx``); returned in
        every lane (a shuffle from lane 0)."""
        got = ws.Int32(0)
        if ws.arch.lane_idx() == 0:
            got = ws.atomic_add(tiles.ptr, 1)
        return ws.arch.shfl_sync(got, 0) + ws.arch.grid_dim()[0]

    @ws.jit
    def retire_counter(self, tiles):
        """One thread per CTA, after its producer's last claim: count the CTA retired
        (``tiles[1]``); the last of the grid's CTAs resets both counters to 0 (every claim is
        done by then: each CTA claims before it retires, with a GPU-scope fence in between),
        so the next launch finds them zero."""
        ws.arch.fence_acq_rel("gpu")
        done = ws.atomic_add(tiles.ptr + 1, 1)
        if done == ws.arch.grid_dim()[0] - 1:
            ws.arch.fence_acq_rel("gpu")            # after every CTA's last claim
            tiles[0] = 0
            tiles[1] = 0

    @ws.jit
    def produce_dynamic(self, q_desc, k_desc, v_desc, o, seq_k, tiles, k_pipe, v_pipe, kst, vst,
                        storage):
        """The producer warp's walk with ``dynamic_tiles``: tile ``block_idx`` first, then
        each claimed one (``claim_tile``) until the counter passes the last tile; each tile's
        coordinates go to the consumers with its Q (``load``'s ``publish``), and b = -1 with a
        plain arrive on the next Q buffer's mbarrier ends their walk. Returns the advanced ring
        states."""
        num = self.tile_count(o)
        t = ws.arch.block_idx()[0]
        local = ws.Int32(0)
        while t < num:
            b, h, m_block = self.linear_tile(t, o)
            n_tiles = self.kv_tiles(o.shape[2], seq_k, m_block)
            idx, parity = self.q_slot(local)
            storage.q_empty[idx].wait(parity ^ 1)      # that buffer's last S are done
            kst, vst = self.load(q_desc, k_desc, v_desc, b, h, m_block, n_tiles, k_pipe, v_pipe,
                                 kst, vst, storage, local, True)
            t = self.claim_tile(tiles)
            local = local + 1
        idx, parity = self.q_slot(local)
        storage.q_empty[idx].wait(parity ^ 1)
        if ws.arch.elect_one():
            self.publish_tile(storage, idx, (-1, 0, 0, 0))     # b = -1: the consumers stop
            storage.q_bar[idx].arrive()
            self.retire_counter(tiles)
        return kst, vst

    def publish_tile(self, storage, idx, info) -> None:
        """The producer's elected thread: (b, h, m_block, n_tiles) of the tile in Q buffer
        ``idx`` into ``storage.tile_info`` (before the buffer's mbarrier arrive)."""
        for i in ws.static_range(4):
            storage.tile_info[4 * idx + i] = info[i]

    def next_tile(self, local, storage):
        """The consumers' ``local``-th output tile with ``dynamic_tiles``: waits for its Q
        buffer's mbarrier (``wait_q``), then reads the (b, h, m_block, n_tiles) the producer
        stored before its arrive (b = -1: no tile left). Warp-uniform, dynamic."""
        self.wait_q(local, storage)
        idx = self.q_slot(local)[0]
        return [ws.arch.make_warp_uniform(storage.tile_info[4 * idx + i])
                for i in ws.static_range(4)]

    def rows_idle(self, row_wg, seq_q):
        """Whether this consumer warpgroup (first row ``row_wg``) has no row below ``seq_q`` in
        its tile and ``skip_idle`` is on: it then computes nothing (``idle_loop``). Static
        False without ``skip_idle``; dynamic and warpgroup-uniform with it."""
        if ws.static(self.skip_idle):
            return row_wg >= seq_q
        return False

    @ws.jit
    def idle_loop(self, n_tiles, k_pipe, v_pipe, kst, vst, turn, local, storage):
        """A consumer warpgroup whose rows are all past S_q (``rows_idle``): per K/V tile it
        takes its turn and waits for and releases the K and V stages the other warpgroups use
        (the rings count every consumer thread's arrival, and a release before the stage has
        landed would count towards the stage's previous use), with no GEMM, softmax or store;
        then it releases the tile's Q. Returns the advanced ring states."""
        for tile in range(n_tiles):
            self.wait_k(k_pipe, kst)
            self.begin_turn(turn)
            self.end_turn(turn)
            self.release_k(k_pipe, kst)
            self.wait_v(v_pipe, vst)
            self.release_v(v_pipe, vst)
            kst = kst.advance()
            vst = vst.advance()
        self.release_q(storage, local)
        return kst, vst
