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

    def set_schedule_fields(self, skip_idle, partial_last, head_group, lead_waits) -> None:
        """Check and store ``skip_idle``, ``partial_last``, ``head_group`` and ``lead_waits``
        (after ``causal``, ``persistent``, ``pingpong`` and ``overlap_tiles`` are set).
        OperandError (a ValueError) for a value or a combination the kernel cannot run."""
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
        self.skip_idle = bool(skip_idle)
        self.partial_last = bool(partial_last)
        self.head_group = head_group
        self.lead_waits = bool(lead_waits)

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
