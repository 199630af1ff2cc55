"""FlashAttention forward on Hopper's warpgroup MMA and TMA (FlashAttention-3 style: Shah et al.,
"FlashAttention-3", 2024, §3.1; docs/warp-specialization.md §10 walks through it).

    O[b, h, i, :] = softmax(scale * Q[b, h, i, :] @ K[b, h, :, :]^T) @ V[b, h, :, :]

q, k, v: (B, H, S, D) fp16/bf16 tensors read through 4-D TMA descriptors (box ``(1, 1, rows,
64)``, 128-byte swizzle; D = 128 takes two boxes); o: the (B, H, S_q, D) output, plain stores.
Grid ``(ceil(S_q / 128), B * H)``, 384 threads: warpgroup 0 is the producer (one elected thread
of warp 0 loads Q once and K/V per stage through ``ws.pipeline.PipelineTmaAsync``; rows past
S_q / S_k arrive as zeros), warpgroups 1 and 2 the consumers (64 query rows each): S = Q K^T by
wgmma m64n{tile_n}k16 from shared memory, masking and the base-2 online softmax on the
accumulator fragment, O += P V by wgmma m64n{D}k16 with P from registers and V MN-major, the
stage released after that wgmma's ``wait_group``; with ``overlap`` the softmax of stage j runs
while P_{j-1} V_{j-1} is on the tensor cores. fp32 accumulation; P rounded to the input dtype.
"""
from __future__ import annotations

import warpstage as ws

from ..lang.operands import operand_error
from ..lang.scalars import BFloat16, Float32
from ..lang.wgmma import TileLayout
from ..lang.epilogue import TmaStoreEpilogue
from ..options import LIBRARY_SPECIALIZATIONS
from .attention_common import AttentionPolicy
from .attention_wgmma_consumer import WgmmaConsumer
from .attention_wgmma_sched import TileSchedule
from .attention_wgmma_tiles import TileOverlap

__all__ = ["FlashAttentionWgmma", "flash_attention_wgmma_kernel", "BOX_COLS"]

BOX_COLS = 64                  # columns per TMA box: 128 bytes of a 16-bit dtype = the swizzle span


def swizzle_for(head_dim: int) -> int:
    """The shared-memory swizzle (bytes) of the Q, K and V tiles of head dimension ``head_dim``:
    128 when D is a multiple of 64 (boxes of 64 columns), else 64 (D = 96: three boxes of 32
    columns, the widest swizzle span that divides D's 192 bytes, as CUTLASS's smem layout
    selector picks for a K extent of 96)."""
    return 128 if head_dim % BOX_COLS == 0 else 64


class FlashAttentionWgmma(TileSchedule, TileOverlap, WgmmaConsumer, AttentionPolicy):
    """Static policy of the wgmma + TMA FlashAttention kernel (configuration + per-role code).

    ``head_dim``: D, 64, 96, 128, 192 or 256 (``D / 64`` TMA boxes of 64 columns per row,
    128-byte swizzle; D = 96: 3 boxes of 32 columns, 64-byte swizzle (``swizzle_for``), and
    the TMA-store epilogue in 64 x 32 blocks of that swizzle; at D = 192 and 256
    shared memory holds 2 stages of at most 112 and 80 keys). ``dtype``: ``ws.Float16`` or
    ``ws.BFloat16``. ``causal``: mask
    key j > query i (top-left aligned). ``softmax_scale``: default 1/sqrt(D). ``tile_n``: keys
    per stage, a multiple of 16 in [16, 256] (the N of the S = Q K^T wgmma). ``num_stages``:
    depth of the K ring and of the V ring (``split_kv``) or of the joint K/V ring (at least 2
    with ``overlap``). ``consumer_wgs``: consumer warpgroups, 2 or 3, of 64 query rows each
    (``tile_m = 64 consumer_wgs`` rows per CTA, ``128 (1 + consumer_wgs)`` threads).
    ``overlap``: FlashAttention-3's intra-warpgroup overlap of the softmax with P V (default),
    else each GEMM is waited for in turn. ``pingpong``: the consumer warpgroups take turns
    issuing their GEMMs (``ws.pipeline.OrderedBarrier``, named barriers 1..consumer_wgs), so one
    warpgroup's softmax runs under another's wgmmas. ``split_kv``: separate K and V rings, so
    S = Q K^T starts as soon as K lands and K is released as soon as S completes (FlashAttention-
    3's ``pipeline_k`` / ``pipeline_v``); else one ring holds K and V of a tile together.
    ``fast_exp2``: softmax exponentials as ``ex2.approx.ftz.f32`` (``AttentionPolicy.fast_exp2``).
    ``persistent``: a grid of at most one CTA per SM (``grid(..., sms=...)``) in which each CTA
    walks output tiles (static round-robin; with ``causal`` the longest first), so the barrier
    set-up is paid once and the producer loads the next tile's Q (once the consumers' last S of
    the tile has completed: the ``q_empty`` mbarrier) and K/V while the consumers finish the
    previous one. ``causal_align``: "top_left" (SDPA's ``is_causal``) or "bottom_right"
    (FlashAttention's: key j is masked for query i when j > i + S_k - S_q; rows that see no key
    give 0). ``kv_group``: query heads per K/V head (grouped-query attention: query head h reads
    K/V head h // kv_group, no copies). ``late_wait``: end the basic block after the softmax
    with a never-taken branch so that ptxas keeps the P V wait below the softmax (it hoists it
    above otherwise; docs/performance.md). ``exp_after_wait``: with ``overlap``, the block
    ends after the row max and the exponent arguments instead (FlashAttention-4's order in its
    SASS): the P V wait, O's rescale and V's release come next, then the exponentials, the row
    sums and P's conversion, which ptxas interleaves (the MUFU's exponentials with the FMULs
    and conversions) in place of a conversion tail after the wait; ``late_wait`` is then
    unused. ``poly_exp2``: of every 8 elements of P, how many
    take their exponential from ``ws.math.exp2_poly`` (FMA and integer pipes, relative error
    1e-4) instead of the MUFU's ``ex2``, which at D = 64 is as busy as the tensor cores
    (FlashAttention-4's exponential emulation). ``fma_scores``: the exponent ``s c - m c`` as
    one FFMA per score while every row of the warp has |m c| < 2^15, the exact ``(s - m) c``
    otherwise (``OnlineSoftmax.exponentials``). ``fma_select``: the exponent as one FFMA per
    score with no branch, ``fma(s, c_r, -o_r)`` with the row's scale and offset selected once
    per row (``OnlineSoftmax.row_offset``) and alpha taken from the offsets, so the rounding of
    m c cancels exactly (docs/performance.md, "The exponent"). ``tma_store``: the epilogue
    writes O through shared memory and one TMA store per 64-row block of one swizzle span of
    each consumer warpgroup (``ws.epilogue.TmaStoreEpilogue`` with the tiles' swizzle: 64 x 64
    blocks at 128 bytes, 64 x 32 at D = 96's 64 bytes; named barrier 1 + consumer_wgs +
    warpgroup); None: on when its buffers (16 KiB per warpgroup, 8 KiB at D = 96) fit beside
    the rings; the kernel then takes ``o``'s descriptor (``o_box``, swizzle ``out.swizzle``).
    ``overlap_tiles``: a persistent CTA starts the next output tile's first S = Q K^T (and its
    softmax) before the current tile's last P V and epilogue, so each
    tile's fill and drain overlap (``TileOverlap``); Q is double-buffered (``q_buffers`` = 2)
    so that the next tile's Q has landed by then. ``skip_idle``: a consumer warpgroup whose
    64 rows all lie past S_q (the last row block when S_q is not a multiple of ``tile_m``) does
    no GEMM, softmax or store, only its turns and the ring waits and releases (``idle_loop``).
    ``partial_last``: the persistent non-causal schedule puts those partial row blocks after
    every full one (``row_block_order``), so that with ``skip_idle`` the short tiles fill the
    tail (``attention_wgmma_sched.py``). ``head_group``: with ``causal``, the tiles'
    longest-first order runs over bands of this many batch-heads (None: all of them with
    ``persistent``, one at a time without). ``lead_waits``: with ``pingpong``, only consumer
    warpgroup 0 waits on the K and V mbarriers before its turn; the others' turns begin after
    its turn did (FlashAttention-3's order with its scheduler barrier). ``packed_p``: P's
    A fragments for P V as ``ws.wgmma.PackedFragment``s (one ``cvt.rn.bf16x2.f32`` per pair
    of P, b32 registers the wgmma reads as they are) instead of 16-bit scalars that the backend
    packs before the wgmma (and ptxas may repack with ``PRMT`` inside the turn;
    docs/performance.md, "Session 7: packed P"). ``rescale_at_wait``: with ``overlap``, O is
    multiplied by the step's alpha right after the wait that completes its P V (at the end of
    the K/V step) instead of beside the next P V issue, where ptxas may schedule the
    multiplies inside the ping-pong turn. ``rescale_threshold``: with ``overlap``, O is
    rescaled only when some row of the warp changed its max (a warp vote on alpha != 1 and a
    uniform branch around the multiplies, at ``rescale_at_wait``'s place), and a row keeps
    its running max while the tile's max exceeds it by at most this many powers of two (a
    float in [0, 15]; P's terms are then up to 2^(t + 1/2), l and O are scaled alike, so
    O / l and the log-sum-exp are unchanged); 0 skips only the exact no-op rescales
    (FlashAttention-4's conditional rescale; ``OnlineSoftmax.stale_max``); None: every step
    rescales. ``dynamic_tiles``: with ``persistent``, the CTAs take the output tiles in the
    one-CTA-per-tile grid's order first come, first served (each producer claims its next tile
    from a global counter and hands the index to its consumers with the tile's Q;
    ``attention_wgmma_sched.py``); the kernel then takes ``tiles``, two int32 counters that are
    zero before the launch and left zero after it. With ``overlap_tiles`` too, the consumers
    read whether a next tile exists from its Q buffer before each boundary
    (``TileOverlap.consume_claimed_overlapped``). ``shared_boundary``: with ``overlap_tiles``,
    the tile boundary is one more step of the K/V loop (one flat loop over the CTA's (tile,
    K/V tile) steps whose S operand is the next tile's Q and K'_0 at a boundary:
    ``TileOverlap.consume_tiles_shared``) instead of a peeled copy of the step (less code
    to compile, the same turns). ``narrow_last``: with ``overlap``, a
    consumer warpgroup whose output tile's last K/V tile holds no key it may see in its second
    half (past S_k, or causal: past its last row's diagonal, as warpgroup 0's rows on a
    top-left diagonal) issues that tile's S over the first tile_n / 2 keys only (wgmma N =
    tile_n / 2, the rest -inf) and its last P V over those keys' k-steps (``half_visible``, a
    warpgroup-uniform branch between two forms of the step).
    ``producer_regs`` / ``mma_regs``: ``setmaxnreg``
    counts of the producer and of each consumer warpgroup (multiples of 8 in [24, 256], 128 x producer + 128 x consumer_wgs x mma at
    most 65536; None: 24 / 240 for 2 consumer warpgroups, 32 / 160 for 3).

    The host side (``warpstage.ops.attention``) builds one ``ws.tma.TensorDescriptor`` per input
    with the boxes of ``descriptor_boxes`` and ``swizzle=fa.swizzle``. Raises ValueError for a
    configuration the kernel cannot run (the message names the field)."""

    producer_threads = 128
    policy_name = "FlashAttentionWgmma"
    head_dims = (64, 96, 128, 192, 256)
    key_fields = ("tile_n", "num_stages", "producer_regs", "mma_regs", "overlap", "consumer_wgs",
                  "pingpong", "split_kv", "persistent", "causal_align", "kv_group",
                  "late_wait", "tma_store", "poly_exp2", "fma_scores", "fma_select",
                  "overlap_tiles", "skip_idle", "partial_last", "head_group",
                  "lead_waits", "packed_p", "rescale_at_wait", "rescale_threshold",
                  "dynamic_tiles", "narrow_last", "shared_boundary", "exp_after_wait")
    repr_fields = ("tile_n", "num_stages", "consumer_wgs", "overlap", "pingpong", "split_kv",
                   "persistent")
    consumer_rows = 64          # a consumer warpgroup's query rows (wgmma's M)
    DEFAULT_REGS = {2: (24, 240), 3: (32, 160)}

    def __init__(self, head_dim=64, dtype=BFloat16, causal=False, softmax_scale=None,
                 tile_n=128, num_stages=2, producer_regs=None, mma_regs=None, overlap=True,
                 consumer_wgs=2, pingpong=True, split_kv=True, fast_exp2=True,
                 persistent=True, causal_align="top_left", kv_group=1, late_wait=True,
                 tma_store=None, poly_exp2=0, fma_scores=False, fma_select=False,
                 overlap_tiles=False, skip_idle=False, partial_last=False,
                 head_group=None, lead_waits=False, packed_p=False,
                 rescale_at_wait=False, rescale_threshold=None, dynamic_tiles=False,
                 narrow_last=False, shared_boundary=False, exp_after_wait=False):
        self.check_operands(head_dim, dtype)
        self.check_stages(tile_n, num_stages, "tile_n=128")
        if consumer_wgs not in (2, 3) or isinstance(consumer_wgs, bool):
            raise self.policy_error("consumer_wgs", consumer_wgs, "2 or 3 (consumer warpgroups "
                                    "of 64 query rows)", "consumer_wgs=2")
        if overlap and num_stages < 2:
            raise self.policy_error("num_stages", num_stages, "at least 2 with overlap=True "
                                    "(a consumer waits for stage j before it releases stage "
                                    "j - 1)", "num_stages=2 (or, in a policy of your own, "
                                    "overlap=False)")
        regs = self.DEFAULT_REGS[consumer_wgs]
        producer_regs = regs[0] if producer_regs is None else producer_regs
        mma_regs = regs[1] if mma_regs is None else mma_regs
        for name, r in (("producer_regs", producer_regs), ("mma_regs", mma_regs)):
            if isinstance(r, bool) or not isinstance(r, int) or r % 8 or not 24 <= r <= 256:
                raise self.policy_error(name, r, "a multiple of 8 in [24, 256] (setmaxnreg's "
                                        "register count)", f"{name}=None (the default for "
                                        "consumer_wgs)")
        self.consumer_wgs = consumer_wgs
        self.tile_m = 64 * consumer_wgs
        self.consumer_threads = 128 * consumer_wgs
        self.threads = self.producer_threads + self.consumer_threads
        self.check_register_split(producer_regs, mma_regs, self.consumer_threads)
        self.set_fields(head_dim, dtype, causal, softmax_scale, tile_n, num_stages,
                        producer_regs, mma_regs)
        self.overlap = self.flag("overlap", overlap)
        self.pingpong = self.flag("pingpong", pingpong)
        self.split_kv = self.flag("split_kv", split_kv)
        self.fast_exp2 = self.flag("fast_exp2", fast_exp2)
        self.persistent = self.flag("persistent", persistent)
        if causal_align not in ("top_left", "bottom_right"):
            raise self.policy_error("causal_align", causal_align, "'top_left' or "
                                    "'bottom_right'", "causal_align='top_left' (the default)")
        self.causal_align = causal_align
        if isinstance(kv_group, bool) or not isinstance(kv_group, int) or kv_group < 1:
            raise self.policy_error("kv_group", kv_group, "an int >= 1 (query heads per K/V "
                                    "head)", "kv_group=1, or H_q // H_kv")
        self.kv_group = kv_group
        self.late_wait = self.flag("late_wait", late_wait)
        self.exp_after_wait = self.flag("exp_after_wait", exp_after_wait)
        if self.exp_after_wait and (not self.overlap or fma_scores):
            raise self.policy_error("exp_after_wait", exp_after_wait, "False unless overlap "
                                    "is on and fma_scores off (it orders the overlapped step's "
                                    "P V wait before the exponentials; fma_scores picks its "
                                    "exponent form by a branch around them)",
                                    "exp_after_wait=False, or overlap=True, fma_scores=False")
        if (isinstance(poly_exp2, bool) or not isinstance(poly_exp2, int)
                or not 0 <= poly_exp2 <= 8):
            raise self.policy_error("poly_exp2", poly_exp2, "an int in [0, 8] (P elements of "
                                    "every 8 whose exponential runs on the FMA pipe)",
                                    "poly_exp2=0 (all on the MUFU)")
        self.poly_exp2 = poly_exp2
        self.fma_scores = self.flag("fma_scores", fma_scores)
        self.fma_select = self.flag("fma_select", fma_select)
        self.overlap_tiles = self.flag("overlap_tiles", overlap_tiles)
        if self.overlap_tiles and not (self.persistent and self.overlap and self.split_kv):
            raise self.policy_error("overlap_tiles", overlap_tiles, "False unless persistent, "
                                    "overlap and split_kv are on (it overlaps a persistent "
                                    "CTA's consecutive output tiles in the overlapped loop)",
                                    "overlap_tiles=False, or " + ", ".join(
                                        f"{n}=True" for n, on in (
                                            ("persistent", self.persistent),
                                            ("overlap", self.overlap),
                                            ("split_kv", self.split_kv)) if not on))
        self.shared_boundary = self.flag("shared_boundary", shared_boundary)
        if self.shared_boundary and not self.overlap_tiles:
            raise self.policy_error("shared_boundary", shared_boundary, "False unless "
                                    "overlap_tiles=True (it is a form of overlap_tiles' tile "
                                    "boundary)", "shared_boundary=False, or overlap_tiles=True")
        self.set_schedule_fields(skip_idle, partial_last, head_group, lead_waits, dynamic_tiles)
        self.packed_p = self.flag("packed_p", packed_p)
        self.rescale_at_wait = self.flag("rescale_at_wait", rescale_at_wait)
        self.set_rescale_threshold(rescale_threshold)
        if narrow_last and not (self.overlap and tile_n % 32 == 0 and not self.overlap_tiles):
            wrong = [fix for fix, bad in (("overlap=True", not self.overlap),
                                          ("overlap_tiles=False", self.overlap_tiles),
                                          ("tile_n=128", tile_n % 32)) if bad]
            raise self.policy_error("narrow_last", narrow_last, "False unless overlap is on, "
                                    "overlap_tiles off and tile_n a multiple of 32 (the half "
                                    "tile is a wgmma N and whole 16-key P V k-steps)",
                                    "narrow_last=False, or " + ", ".join(wrong))
        self.narrow_last = self.flag("narrow_last", narrow_last)
        self.q_buffers = 2 if self.overlap_tiles else 1
        self.swizzle = swizzle_for(head_dim)
        self.box_cols = self.swizzle // 2           # columns per TMA box (one swizzle span)
        self.blocks = head_dim // self.box_cols     # TMA boxes (column blocks) per row
        self.q_layout = TileLayout(self.tile_m, head_dim, dtype, swizzle=self.swizzle)
        self.kv_layout = TileLayout(tile_n, head_dim, dtype, swizzle=self.swizzle)
        self.kv_bytes = self.kv_layout.nbytes
        stage = (num_stages,) + self.kv_layout.shape
        # the TMA-store epilogue writes 64-row blocks one swizzle span wide (64 columns at
        # 128 bytes, 32 at D = 96's 64): D a multiple of the span
        self.out = TmaStoreEpilogue(dtype, 64, head_dim, barrier_id=1 + consumer_wgs,
                                    warpgroups=1, swizzle=self.swizzle)
        kv_smem = 2 * num_stages * self.kv_layout.nbytes + self.q_buffers * self.q_layout.nbytes
        if tma_store is None:       # on when the buffers fit beside the rings
            self.tma_store = (kv_smem + consumer_wgs * self.out.smem_bytes + 2048
                              <= ws.smem.MAX_DYNAMIC_SMEM)
        else:
            self.tma_store = self.flag("tma_store", tma_store, "None (on where its buffers fit "
                                       "beside the rings), True or False")
        extra = (dict(o_buf=ws.smem.Array(dtype, (consumer_wgs,) + self.out.buffer_shape,
                                          swizzle=self.out.swizzle)) if self.tma_store else {})
        if self.dynamic_tiles:      # (b, h, m_block, K/V tiles) of the tile in each Q buffer
            extra["tile_info"] = ws.smem.Array(ws.Int32, (4 * self.q_buffers,))
        rings = (dict(k_barriers=ws.pipeline.BarrierStorage[num_stages],
                      v_barriers=ws.pipeline.BarrierStorage[num_stages]) if self.split_kv
                 else dict(barriers=ws.pipeline.BarrierStorage[num_stages]))
        self.SharedStorage = ws.smem.make_storage(
            "FlashAttentionWgmmaStorage",
            q=ws.smem.Array(dtype, ((self.q_buffers,) if self.overlap_tiles else ())
                            + self.q_layout.shape, swizzle=self.swizzle),
            k=ws.smem.Array(dtype, stage, swizzle=self.swizzle),
            v=ws.smem.Array(dtype, stage, swizzle=self.swizzle),
            q_bar=ws.smem.MbarrierArray[self.q_buffers],
            q_empty=ws.smem.MbarrierArray[self.q_buffers], **rings, **extra)
        self.check_smem(f"{self.q_buffers} x a {self.tile_m} x {head_dim} Q tile, {num_stages} "
                        "stages of K and "
                        f"V ({tile_n} x {head_dim})"
                        + (f" and {consumer_wgs} x {self.out.smem_bytes} bytes of TMA-store "
                           "buffers" if self.tma_store else ""),
                        2 * head_dim * dtype.ir_type.nbytes, 2 if self.overlap else 1,
                        ["tma_store=False"] if self.tma_store else [])

    def grid(self, batch: int, heads: int, seq_q: int, sms: int = 132) -> tuple:
        """The launch grid: ``(ceil(S_q / tile_m), B * H)``, or with ``persistent`` ``(min(tiles,
        sms), 1)`` for ``sms`` multiprocessors (the device's count; 132 on the H200)."""
        if not self.persistent:
            return super().grid(batch, heads, seq_q)
        tiles = batch * heads * -(-seq_q // self.tile_m)
        return (max(1, min(tiles, sms)), 1)

    @property
    def o_box(self) -> tuple:
        """The TMA box of o's descriptor (``tma_store``): one warpgroup's 64 rows x one
        swizzle span (64 columns; 32 at D = 96)."""
        return (1, 1) + self.out.box

    def descriptor_boxes(self) -> tuple:
        """The TMA boxes (outermost first) of the q and of the k/v descriptors."""
        return (1, 1) + self.q_layout.box, (1, 1) + self.kv_layout.box

    def elements(self, frag) -> list:
        """The elements of a wgmma f32 accumulator fragment (already in the shared order)."""
        return list(frag)

    def fragments(self, xs):
        """Elements back into one wgmma f32 accumulator fragment."""
        return ws.wgmma.Fragment(Float32, xs)

    def check(self, q_desc, k_desc, v_desc, o) -> None:
        """Trace-time checks of the descriptors and the output against the policy."""
        boxes = dict(zip(("q", "k", "v"), (self.descriptor_boxes()[0],) +
                         (self.descriptor_boxes()[1],) * 2))
        for name, d in (("q", q_desc), ("k", k_desc), ("v", v_desc)):
            if not isinstance(d, ws.tma.TmaDescriptor):
                raise operand_error(f"FlashAttentionWgmma: {name}_desc", type(d).__name__,
                                    "a ws.tma.TensorDescriptor kernel argument",
                                    "call warpstage.ops.flash_attention(..., mma='wgmma')")
            if (d.dtype is not self.dtype or d.box != boxes[name]
                    or d.swizzle != self.swizzle):
                raise operand_error(f"FlashAttentionWgmma: {name}_desc",
                                    f"{d.dtype.__name__} box {d.box} swizzle {d.swizzle}",
                                    f"{self.dtype.__name__} box {boxes[name]} swizzle "
                                    f"{self.swizzle}", "build it as ws.tma.TensorDescriptor(x, "
                                    f"box, swizzle={self.swizzle}) with box from "
                                    "policy.descriptor_boxes()")
        if o.ndim != 4 or o.dtype is not self.dtype:
            raise operand_error("FlashAttentionWgmma: tensor o", f"{o.ndim}-d {o.dtype.__name__}",
                                f"a 4-d (B, H, S_q, D) {self.dtype.__name__} tensor",
                                "pass the output like q")

    def check_o_desc(self, o_desc) -> None:
        """Trace-time check of o's TMA descriptor: present exactly when ``tma_store``."""
        if ws.static(self.tma_store) != (o_desc is not None):
            raise operand_error("FlashAttentionWgmma: o_desc", type(o_desc).__name__,
                                f"a TMA descriptor of o with box {self.o_box}, swizzle "
                                f"{self.out.swizzle}"
                                if self.tma_store else "None (the policy's tma_store is off)",
                                "call warpstage.ops.flash_attention, or launch_wgmma, which "
                                "pass it")
        if o_desc is not None and (not isinstance(o_desc, ws.tma.TmaDescriptor)
                                   or o_desc.box != self.o_box
                                   or o_desc.swizzle != self.out.swizzle
                                   or o_desc.dtype is not self.dtype):
            raise operand_error("FlashAttentionWgmma: o_desc", repr(o_desc),
                                f"a {self.dtype.__name__} TMA descriptor with box {self.o_box}, "
                                f"swizzle {self.out.swizzle}", "build it as "
                                "ws.tma.TensorDescriptor(o, fa.o_box, swizzle=fa.out.swizzle)")

    def check_tiles(self, tiles) -> None:
        """Trace-time check of the tile counters: a 1-d int32 tensor of 2 elements exactly when
        ``dynamic_tiles`` (its shape is checked on the host: ``launch_wgmma``), else None."""
        if ws.static(self.dynamic_tiles) != (tiles is not None) or (
                tiles is not None and (not isinstance(tiles, ws.Tensor) or tiles.ndim != 1
                                       or tiles.dtype is not ws.Int32)):
            got = (f"{tiles.ndim}-d {tiles.dtype.__name__} tensor" if isinstance(tiles, ws.Tensor)
                   else type(tiles).__name__)
            raise operand_error("FlashAttentionWgmma: tiles", got,
                                "a 1-d int32 tensor of 2 zeros" if self.dynamic_tiles else
                                "None (the policy's dynamic_tiles is off)",
                                "call warpstage.ops.flash_attention, or launch_wgmma, which "
                                "pass it")

    def check_lse(self, lse, o) -> None:
        """Trace-time check of the log-sum-exp output: a (B, H, S_q) float32 tensor."""
        if not isinstance(lse, ws.Tensor) or lse.ndim != 3 or lse.dtype is not Float32:
            got = (f"{lse.ndim}-d {lse.dtype.__name__} tensor" if isinstance(lse, ws.Tensor)
                   else type(lse).__name__)
            raise operand_error("FlashAttentionWgmma: lse", got, "None or a (B, H, S_q) "
                                "float32 tensor", "pass torch.empty(B, H, S_q, dtype=float32) "
                                "or call warpstage.ops.flash_attention(..., return_lse=True)")

    # -- pipelines -----------------------------------------------------------------------------
    def make_pipelines(self, storage) -> tuple:
        """(K ring, V ring): two ``PipelineTmaAsync`` with ``split_kv``, else one joint ring
        (K and V of a tile in one stage) returned twice. Initializes their mbarriers."""
        create = ws.pipeline.PipelineTmaAsync.create
        if ws.static(self.split_kv):
            return (create(storage.k_barriers, num_stages=self.num_stages,
                           consumer_count=self.consumer_threads, transaction_bytes=self.kv_bytes),
                    create(storage.v_barriers, num_stages=self.num_stages,
                           consumer_count=self.consumer_threads, transaction_bytes=self.kv_bytes))
        kv = create(storage.barriers, num_stages=self.num_stages,
                    consumer_count=self.consumer_threads, transaction_bytes=2 * self.kv_bytes)
        return kv, kv

    def wait_k(self, k_pipe, state) -> None:
        """Wait until K of ``state``'s tile has landed (with the joint ring: K and V)."""
        k_pipe.consumer_wait(state)

    def release_k(self, k_pipe, state) -> None:
        """Release K's stage once S = Q K^T has completed (joint ring: kept until V is done)."""
        if ws.static(self.split_kv):
            k_pipe.consumer_release(state)

    def wait_v(self, v_pipe, state) -> None:
        """Wait until V of ``state``'s tile has landed (joint ring: ``wait_k`` did)."""
        if ws.static(self.split_kv):
            v_pipe.consumer_wait(state)

    def release_v(self, v_pipe, state) -> None:
        """Release V's stage (joint ring: the tile's stage) once O += P V has completed."""
        v_pipe.consumer_release(state)

    # -- producer role -------------------------------------------------------------------------
    @ws.jit
    def produce(self, q_desc, k_desc, v_desc, o, seq_k, k_pipe, v_pipe, storage, tiles=None):
        """Producer warp 0: per output tile of this CTA, ``load`` (with ``dynamic_tiles`` the
        tiles it claims: ``produce_dynamic``); then the rings' tails."""
        warp = ws.arch.make_warp_uniform(ws.arch.warp_idx())
        if warp == 0:
            kst = k_pipe.producer_start_state()
            vst = v_pipe.producer_start_state()
            if ws.static(self.dynamic_tiles):
                kst, vst = self.produce_dynamic(q_desc, k_desc, v_desc, o, seq_k, tiles, k_pipe,
                                                v_pipe, kst, vst, storage)
            elif ws.static(self.persistent):
                local = ws.Int32(0)
                sched = self.scheduler(o)
                for t in range(sched.first(), sched.num_tiles(), sched.stride()):
                    b, h, m_block, n_tiles = self.tile_work(sched, t, o, seq_k)
                    idx, parity = self.q_slot(local)
                    storage.q_empty[idx].wait(parity ^ 1)      # that buffer's last S are done
                    kst, vst = self.load(q_desc, k_desc, v_desc, b, h, m_block, n_tiles, k_pipe,
                                         v_pipe, kst, vst, storage, local)
                    local = local + 1
            else:
                b, h, m_block, n_tiles = self.tile_work(None, None, o, seq_k)
                kst, vst = self.load(q_desc, k_desc, v_desc, b, h, m_block, n_tiles, k_pipe,
                                     v_pipe, kst, vst, storage, 0)
            k_pipe.producer_tail(kst)
            if ws.static(self.split_kv):
                v_pipe.producer_tail(vst)

    @ws.jit
    def load(self, q_desc, k_desc, v_desc, b, h, m_block, n_tiles, k_pipe, v_pipe, kst, vst,
             storage, local, publish=False):
        """One output tile's loads (one elected thread issues): Q (into the Q buffer of the
        CTA's ``local``-th tile, ``q_slot``; with ``publish`` the tile's (b, h, m_block,
        n_tiles) are stored in the buffer's ``storage.tile_info`` slots first, before the
        mbarrier's arrive: ``dynamic_tiles``), then K and V in the order
        the consumers use them: K_0, then K_j before V_{j-1}, then the last V (with the joint
        ring: K_j and V_j into one stage). Returns the advanced ring states."""
        if ws.arch.elect_one():
            bar = storage.q_bar[self.q_slot(local)[0]]
            if ws.static(publish):
                self.publish_tile(storage, self.q_slot(local)[0], (b, h, m_block, n_tiles))
            bar.arrive_expect_tx(self.q_layout.nbytes)
            ws.tma.load_tile(q_desc, self.q_layout, self.q_buffer(storage, local),
                             (b, h, m_block * self.tile_m, 0), bar)
        if ws.static(self.split_kv):
            hk = h // self.kv_group                         # the query head's K/V head (GQA)
            kst = self.load_tile(k_desc, storage.k, b, hk, 0, k_pipe, kst)
            for tile in range(1, n_tiles):
                kst = self.load_tile(k_desc, storage.k, b, hk, tile, k_pipe, kst)
                vst = self.load_tile(v_desc, storage.v, b, hk, tile - 1, v_pipe, vst)
            vst = self.load_tile(v_desc, storage.v, b, hk, n_tiles - 1, v_pipe, vst)
        else:
            for tile in range(n_tiles):
                k_pipe.producer_acquire(kst)
                if ws.arch.elect_one():
                    bar = k_pipe.producer_get_barrier(kst)
                    for blk in ws.static_range(self.blocks):
                        coords = (b, h // self.kv_group, tile * self.tile_n,
                                  blk * self.box_cols)
                        ws.tma.load(k_desc, self.kv_layout.block(storage.k[kst.index], blk),
                                    coords, bar)
                        ws.tma.load(v_desc, self.kv_layout.block(storage.v[kst.index], blk),
                                    coords, bar)
                k_pipe.producer_commit(kst)
                kst = kst.advance()
        return kst, vst

    @ws.jit
    def load_tile(self, desc, ring, b, h, tile, pipe, state):
        """One K or V tile (rows tile * tile_n ..) into the ring stage of ``state``; returns the
        advanced state."""
        pipe.producer_acquire(state)
        if ws.arch.elect_one():
            bar = pipe.producer_get_barrier(state)
            ws.tma.load_tile(desc, self.kv_layout, ring[state.index],
                             (b, h, tile * self.tile_n, 0), bar)
        pipe.producer_commit(state)
        return state.advance()


@ws.jit
def attention_wgmma_body(fa, q_desc, k_desc, v_desc, o, lse, o_desc, seq_k, storage, tiles):
    """Barriers (Q's and the rings'), then the role by warpgroup."""
    warp = ws.arch.make_warp_uniform(ws.arch.warp_idx())
    if warp == 0:
        if ws.arch.elect_one():
            for i in ws.static_range(fa.q_buffers):     # fenced and synced by the pipeline's init
                storage.q_bar[i].init(1)
                storage.q_empty[i].init(fa.consumer_threads)
    k_pipe, v_pipe = fa.make_pipelines(storage)
    if warp < 4:
        ws.arch.setmaxnreg_decrease(fa.producer_regs)
        fa.produce(q_desc, k_desc, v_desc, o, seq_k, k_pipe, v_pipe, storage, tiles)
    else:
        ws.arch.setmaxnreg_increase(fa.mma_regs)
        fa.consume_all(o, lse, o_desc, seq_k, k_pipe, v_pipe, storage)


@ws.kernel(max_specializations=LIBRARY_SPECIALIZATIONS)
def flash_attention_wgmma_kernel(fa: ws.Static[FlashAttentionWgmma], q_desc, k_desc, v_desc,
                                 o: ws.Tensor, seq_k: ws.Int32, lse=None, o_desc=None,
                                 tiles=None):
    """FlashAttention forward on wgmma + TMA: launch ``[fa.grid(B, H, S_q), fa.threads]`` with
    TMA descriptors of q (box ``fa.descriptor_boxes()[0]``), k and v (box ``[1]``), swizzle
    ``fa.swizzle``,
    the (B, H, S_q, D) output o and S_k (see the module docstring; ``warpstage.ops.
    flash_attention(..., mma='wgmma')`` does it).

    The block must be ``fa.threads`` (checked while tracing: OperandError). Not checked (run
    time values): the grid must be ``fa.grid(B, H, S_q)`` (CTA (x, y) computes query rows
    ``128 x .. 128 (x + 1) - 1`` of batch-head y, with ``causal`` in reverse order: a smaller
    grid leaves rows of o unwritten), and ``seq_k`` must be k's and v's S_k (TMA fills rows
    past the tensor with zeros, so a larger ``seq_k`` adds zero keys to the softmax). ``tiles``:
    with ``fa.dynamic_tiles`` a 1-d int32 tensor of 2 zeros (the tile counters; left zero),
    else None."""
    fa.check_block("flash_attention_wgmma_kernel")
    fa.check(q_desc, k_desc, v_desc, o)
    storage = ws.smem.allocate(fa.SharedStorage)
    if lse is not None:
        fa.check_lse(lse, o)
    fa.check_o_desc(o_desc)
    fa.check_tiles(tiles)
    attention_wgmma_body(fa, q_desc, k_desc, v_desc, o, lse, o_desc, seq_k, storage, tiles)
