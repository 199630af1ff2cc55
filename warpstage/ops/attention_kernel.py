"""FlashAttention forward on tensor cores (``mma.sync``), warp-specialized: the program warpstage was designed around,
FlashAttention-2's consumer arithmetic (Dao, "FlashAttention-2", 2023, §3.1 and Algorithm 1).

    O[b, h, i, :] = softmax(scale * Q[b, h, i, :] @ K[b, h, :, :]^T) @ V[b, h, :, :]

q, k, v, o: global tensors of shape (B, H, S, D) (D = ``head_dim``, 64 or 128; fp16 or bf16;
any strides, the last one 1 for cp.async), q with S_q rows, k and v with S_k rows. ``causal``
masks key j > query i (top-left aligned, as ``torch.nn.functional.scaled_dot_product_attention``
with ``is_causal=True``). Accumulation is fp32; P is rounded to the input dtype for P @ V (as in
FlashAttention-2); the output is rounded to o's dtype.

Grid ``(ceil(S_q / tile_m), B * H)``; block ``128 + 2 * tile_m`` threads:

- warpgroup 0, the **producer** (``FlashAttention.load``): gives registers away
  (``setmaxnreg_decrease``) and streams K and V tiles of ``tile_n`` rows into a ring of
  ``num_stages`` shared-memory stages through a ``ws.pipeline.PipelineAsync``: 16-byte
  ``cp.async`` copies that arrive on the stage's ``full`` mbarrier when they land
  (``cp.async.mbarrier.arrive.noinc``), or plain loads and ``st.shared`` + ``mbarrier.arrive``
  with ``copy='ld/st'``. Shared rows are padded to ``D + 8`` elements, so the 8 row addresses of
  each ``ldmatrix`` fall in 8 different 16-byte bank groups (no bank conflicts). The last tile's
  rows past S_k are zero-filled (never left as stale bytes, which could hold NaN bit patterns
  that ``0 * NaN`` would spread into P @ V); that tile waits for its own copies
  (``cp.async.wait_all``) and arrives with a plain ``mbarrier.arrive``.
- ``tile_m / 16`` **consumer** warps (``FlashAttention.mma``; one or two warpgroups) take the
  registers (``setmaxnreg_increase``). Each owns 16 query rows; lane ``l`` holds rows
  ``g = l >> 2`` and ``g + 8`` at columns ``2 (l & 3)``, ``+1`` of every m16n8 tile (PTX ISA
  9.7.14.5.8, ``ws.mma.c_coords``). Per K/V stage:

  1. ``S = Q K^T``: ``tile_n / 8`` f32 accumulators of m16n8, ``mma.sync.m16n8k16`` over D; Q
     is in registers as ``D / 16`` A fragments (loaded once from global), K from shared memory
     by ``ldmatrix.x4`` (K's rows are B's columns: mma's ``.col`` B without ``.trans``).
  2. Masking (only on tiles that need it, a warp-uniform branch): keys past S_k and, with
     ``causal``, keys past the row get ``-inf``.
  3. Online softmax in base 2 on the fragments: each row's max over its quad of 4 lanes
     (``shfl.sync.bfly`` 1 and 2), ``m' = max(m, rowmax)``, ``alpha = 2^((m - m') c)``,
     ``p = 2^(s c - m' c)`` with ``c = softmax_scale * log2(e)`` (one FMA and one ``ex2``),
     ``l = l alpha + rowsum(p)`` (per lane; the quad's partial sums are added once at the end),
     ``O = O alpha``.
  4. ``O += P V``: the f32 C fragments of two neighbouring n8 tiles of P, rounded to the input
     dtype, *are* the m16n8k16 A fragment of those 16 keys (the C layout matches the A layout
     pairwise), so P never leaves registers; V comes by ``ldmatrix.x4.trans``.

  With ``causal`` a warp skips the arithmetic of a stage whose first key is past its last row
  (it still waits for and releases the stage), and CTAs run in reverse row order so the longest
  ones start first. At the end each lane divides its O by its rows' ``l`` and stores them (rows
  past S_q are not stored).

The shared-memory ring is the only inter-warp communication; the pipeline's mbarriers order it.
"""
from __future__ import annotations

import warpstage as ws

from ..lang.operands import operand_error
from ..lang.scalars import BFloat16, Float32
from ..options import LIBRARY_SPECIALIZATIONS
from .attention_common import LOG2E, AttentionPolicy

__all__ = ["FlashAttention", "flash_attention_kernel", "attention_body", "LOG2E", "PAD"]

PAD = 8                       # elements of padding per shared K/V row (conflict-free ldmatrix)


class FlashAttention(AttentionPolicy):
    """The static policy of the kernel: configuration plus the per-role device code (``load``,
    ``mma``). A plain object, so it is static by rule 7 whatever the parameter is called; its
    ``__static_key__`` is the configuration, so two equal configurations share one compiled
    kernel and changing a field recompiles.

    ``head_dim``: D (64 or 128). ``dtype``: ``ws.Float16`` or ``ws.BFloat16`` (of q, k, v, o).
    ``causal``: mask key j > query i. ``softmax_scale``: defaults to 1/sqrt(D); applied with
    log2(e) to the f32 scores. ``tile_m``: query rows per CTA, 64 or 128 (4 or 8 consumer warps
    of 16 rows: one or two warpgroups). ``tile_n``: keys per pipeline stage, a multiple of 16
    up to 256. ``num_stages``: depth of the shared-memory ring (the stages must fit the 227 KiB
    of shared memory). The defaults (128 x 128 tiles, 3 stages) were the fastest measured on
    the H200 for D = 64 and 128 (benchmarks/RESULTS.md). ``copy``:
    'cp.async' (16-byte copies; every stride but the last a multiple of 8 elements, the last
    1, a 16-byte aligned base) or 'ld/st' (any strides). ``producer_regs`` / ``mma_regs``: the
    ``setmaxnreg`` per-thread register counts of the producer warpgroup and of the consumer
    warpgroups (multiples of 8 in [24, 256]).

    Treat it as immutable (the storage class is built from the fields at construction). Raises
    ValueError for a configuration the kernel cannot run (the message names the field)."""

    producer_warps = 4          # one warpgroup: setmaxnreg works per warpgroup
    policy_name = "FlashAttention"
    key_fields = ("tile_m", "tile_n", "num_stages", "copy", "producer_regs", "mma_regs")
    repr_fields = ("tile_m", "tile_n", "num_stages", "copy")
    consumer_rows = 16          # a consumer warp's query rows

    def __init__(self, head_dim=64, dtype=BFloat16, causal=False, softmax_scale=None,
                 tile_m=128, tile_n=128, num_stages=3, copy="cp.async", producer_regs=40,
                 mma_regs=232):
        self.check_operands(head_dim, dtype)
        if tile_m not in (64, 128) or isinstance(tile_m, bool):
            raise self.policy_error("tile_m", tile_m, "64 or 128 (query rows per CTA: 4 or 8 "
                                    "consumer warps of 16 rows, one or two warpgroups)",
                                    "tile_m=128")
        self.check_stages(tile_n, num_stages, "tile_n=64 or 128")
        if copy not in ("cp.async", "ld/st"):
            raise self.policy_error("copy", copy, "'cp.async' or 'ld/st'", "copy='cp.async'")
        consumer_threads = 2 * tile_m
        self.check_register_split(producer_regs, mma_regs, consumer_threads)
        self.set_fields(head_dim, dtype, causal, softmax_scale, tile_n, num_stages,
                        producer_regs, mma_regs)
        self.tile_m = tile_m
        self.copy = copy
        self.rows_per_pass = 128 * 8 // head_dim     # K/V rows the 128 producer threads copy at once
        self.consumer_warps = tile_m // 16
        self.consumer_threads = consumer_threads
        self.producer_threads = 32 * self.producer_warps
        self.threads = self.producer_threads + consumer_threads
        stage = (num_stages, tile_n, head_dim + PAD)
        fields = dict(k=ws.smem.Array[dtype, stage, 128], v=ws.smem.Array[dtype, stage, 128],
                      barriers=ws.pipeline.BarrierStorage[num_stages])
        self.SharedStorage = ws.smem.make_storage("FlashAttentionStorage", **fields)
        self.check_smem(f"{num_stages} stages of K and V ({tile_n} x {head_dim + PAD} elements "
                        "each)", 2 * (head_dim + PAD) * dtype.ir_type.nbytes)

    def elements(self, frags) -> list:
        """The accumulator elements of a list of m16n8 f32 fragments, tile after tile."""
        return [x for f in frags for x in f]

    def fragments(self, xs) -> list:
        """Elements back into m16n8 f32 fragments (4 each)."""
        return [ws.mma.Fragment(Float32, xs[i:i + 4]) for i in range(0, len(xs), 4)]

    def check(self, q, k, v, o) -> None:
        """Trace-time checks of the tensors against the policy (OperandError with the fix)."""
        for name, t in (("q", q), ("k", k), ("v", v), ("o", o)):
            if t.ndim != 4:
                raise operand_error(f"FlashAttention: tensor {name}", f"{t.ndim}-d",
                                    "a 4-d (B, H, S, D) tensor", "pass (B, H, S, D) tensors, as "
                                    "for torch's scaled_dot_product_attention")
            if t.dtype is not self.dtype:
                raise operand_error(f"FlashAttention: tensor {name}'s dtype",
                                    t.dtype.__name__, self.dtype.__name__,
                                    f"make the policy with dtype=ws.{t.dtype.__name__}, or "
                                    "convert the tensors")
        if self.copy == "cp.async":
            for name, t in (("k", k), ("v", v)):
                if not (isinstance(t.strides[3], int) and t.strides[3] == 1):
                    raise operand_error(f"FlashAttention(copy='cp.async'): tensor {name}'s "
                                        "last stride", "a stride other than 1",
                                        "1 (16-byte cp.async copies read 8 contiguous elements)",
                                        "make the head dimension contiguous, or use "
                                        "FlashAttention(copy='ld/st')")

    # -- producer role -------------------------------------------------------------------------
    @ws.jit
    def load(self, q, k, v, pipeline, storage):
        """Producer warpgroup: fill the K/V ring, one stage per ``tile_n`` keys; thread t copies
        16 bytes (8 columns) of every ``rows_per_pass``-th row."""
        b, h, m_block = self.coordinates(q.shape[1])
        seq_k = k.shape[2]
        n_tiles = self.kv_tiles(q.shape[2], seq_k, m_block)
        t = ws.arch.thread_idx()[0]                  # 0..127 in warpgroup 0
        chunks = self.head_dim // 8                  # 16-byte chunks per K/V row
        row0 = t // chunks
        col = (t % chunks) * 8
        cp_async = self.copy == "cp.async"
        state = pipeline.producer_start_state()
        for tile in range(n_tiles):
            pipeline.producer_acquire(state)
            k_stage = storage.k[state.index]
            v_stage = storage.v[state.index]
            n0 = tile * self.tile_n
            if n0 + self.tile_n <= seq_k:            # a whole tile of keys
                for p in ws.static_range(self.tile_n // self.rows_per_pass):
                    r = row0 + p * self.rows_per_pass
                    self.copy_row(k, k_stage[r], b, h, n0 + r, col)
                    self.copy_row(v, v_stage[r], b, h, n0 + r, col)
                pipeline.producer_commit(state, cp_async=cp_async)
            else:                                    # the last tile: zero the rows past S_k
                for p in ws.static_range(self.tile_n // self.rows_per_pass):
                    r = row0 + p * self.rows_per_pass
                    if n0 + r < seq_k:
                        self.copy_row(k, k_stage[r], b, h, n0 + r, col)
                        self.copy_row(v, v_stage[r], b, h, n0 + r, col)
                    else:
                        self.zero_row(k_stage[r], col)
                        self.zero_row(v_stage[r], col)
                if ws.static(cp_async):
                    ws.copy.wait_all()               # plain stores and copies: one arrival
                pipeline.producer_commit(state, cp_async=False)
            state = state.advance()
        pipeline.producer_tail(state)

    def copy_row(self, src, dst_row, b, h, key, col):
        """Copy src[b, h, key, col:col+8] (16 bytes) into the shared row ``dst_row``."""
        if ws.static(self.copy == "cp.async"):
            offset = b * src.strides[0] + h * src.strides[1] + key * src.strides[2] + col
            ws.copy.cp_async(dst_row.ptr + col, src.ptr + offset, 16)
        else:
            for e in ws.static_range(8):
                dst_row[col + e] = src[b, h, key, col + e]

    def zero_row(self, dst_row, col):
        """Store zeros to dst_row[col:col+8] (st.shared)."""
        for e in ws.static_range(8):
            dst_row[col + e] = 0.0

    # -- consumer role -------------------------------------------------------------------------
    @ws.jit
    def mma(self, q, k, v, o, pipeline, storage):
        """Consumer warps: 16 query rows each; S = Q K^T and O += P V on the tensor cores with
        the online softmax in between, over the K/V ring."""
        b, h, m_block = self.coordinates(q.shape[1])
        seq_q = q.shape[2]
        seq_k = k.shape[2]
        n_tiles = self.kv_tiles(seq_q, seq_k, m_block)
        tid = ws.arch.thread_idx()[0] - self.producer_threads
        warp = ws.arch.make_warp_uniform(tid // 32)             # 0 .. consumer_warps-1
        lane = ws.arch.lane_idx()
        row0 = m_block * self.tile_m + warp * 16                # the warp's first query row
        rows = [row0 + (lane >> 2), row0 + (lane >> 2) + 8]     # this lane's two rows
        q_frags = self.load_q(q, b, h, rows, lane, seq_q)
        acc = [ws.mma.accumulator() for _ in ws.static_range(self.head_dim // 8)]
        m_i, l_i = self.softmax_start()
        state = pipeline.consumer_start_state()
        for tile in range(n_tiles):
            pipeline.consumer_wait(state)
            n0 = tile * self.tile_n
            if self.stage_is_live(n0, row0):
                s = self.scores(q_frags, storage.k[state.index], lane)
                if self.needs_mask(n0, row0, seq_k):
                    s = self.mask(s, n0, rows, lane, seq_k)
                p, acc, m_i, l_i = self.softmax_rescale(s, acc, m_i, l_i)
                acc = self.add_pv(p, storage.v[state.index], acc, lane)
            pipeline.consumer_release(state)
            state = state.advance()
        for r in ws.static_range(2):
            inv = self.row_inverse(l_i[r])
            if rows[r] < seq_q:
                self.store_row(o, b, h, rows[r], r, lane, acc, inv)

    def load_q(self, q, b, h, rows, lane, seq_q):
        """The warp's 16 x D Q block as ``D / 16`` m16n8k16 A fragments (8 elements per lane:
        ``ws.mma.a_coords``), read from global memory once. Rows past S_q read the last row
        (their results are not stored)."""
        rc = [ws.math.min(r, seq_q - 1) for r in rows]
        col = (lane & 3) * 2
        return [ws.mma.Fragment(self.dtype, [q[b, h, rc[(i >> 1) & 1],
                                               col + (kk * 16 + (i & 1) + 8 * (i >> 2))]
                                             for i in ws.static_range(8)])
                for kk in ws.static_range(self.head_dim // 16)]

    def scores(self, q_frags, k_stage, lane):
        """S = Q K^T for the stage (times ``scale_log2`` if that is <= 0; see ``exp2_scale``):
        ``tile_n / 8`` f32 m16n8 C fragments. K's rows are the
        columns of mma's B (``.col``), so ``ldmatrix.x4`` (no .trans) at rows ``n``, columns
        ``d`` gives two n8 B fragments per 16 x 16 block: lanes 0-15 address keys 0-7 at d and
        d + 8, lanes 16-31 keys 8-15."""
        s = [ws.mma.accumulator() for _ in ws.static_range(self.tile_n // 8)]
        key = (lane & 7) + (lane >> 4) * 8
        dcol = ((lane >> 3) & 1) * 8
        for kk in ws.static_range(self.head_dim // 16):
            for jj in ws.static_range(self.tile_n // 16):
                f = ws.mma.ldmatrix(k_stage[jj * 16 + key].ptr + (kk * 16 + dcol), 4)
                s[2 * jj] = ws.mma.mma_sync(q_frags[kk], f[0:4], s[2 * jj])
                s[2 * jj + 1] = ws.mma.mma_sync(q_frags[kk], f[4:8], s[2 * jj + 1])
        if ws.static(self.exp2_scale != self.scale_log2):
            s = [f * self.scale_log2 for f in s]
        return s

    def softmax_rescale(self, s, acc, m_i, l_i):
        """``softmax_update`` and O rescaled by its alpha: returns (P, O, m, l)."""
        p, m_i, l_i, alpha = self.softmax_update(s, m_i, l_i)
        return p, self.rescale(acc, alpha), m_i, l_i

    def add_pv(self, p, v_stage, acc, lane):
        """O += P V: P's n8 tiles 2 kk and 2 kk + 1, rounded to the input dtype, are the A
        fragment of keys 16 kk .. 16 kk + 15; V (keys x D, row-major) by ``ldmatrix.x4.trans``
        at rows (keys) ``lane % 8 + 8 (lane / 8 % 2)``, columns ``8 (lane / 16)``: two n8 B
        fragments per 16 x 16 block."""
        key = (lane & 7) + ((lane >> 3) & 1) * 8
        dcol = (lane >> 4) * 8
        acc = list(acc)
        for kk in ws.static_range(self.tile_n // 16):
            a = ws.mma.Fragment(Float32, list(p[2 * kk]) + list(p[2 * kk + 1])).to(self.dtype)
            for dj in ws.static_range(self.head_dim // 16):
                f = ws.mma.ldmatrix(v_stage[kk * 16 + key].ptr + (dj * 16 + dcol), 4, trans=True)
                acc[2 * dj] = ws.mma.mma_sync(a, f[0:4], acc[2 * dj])
                acc[2 * dj + 1] = ws.mma.mma_sync(a, f[4:8], acc[2 * dj + 1])
        return acc


@ws.jit
def attention_body(fa, q, k, v, o, storage):
    """Create the pipeline (every thread), then pick the role by warp index."""
    warp = ws.arch.make_warp_uniform(ws.arch.warp_idx())
    pipeline = ws.pipeline.PipelineAsync.create(storage.barriers, num_stages=fa.num_stages,
                                                producer_count=fa.producer_threads,
                                                consumer_count=fa.consumer_threads)
    if warp < fa.producer_warps:                        # dynamic: both branches are traced
        ws.arch.setmaxnreg_decrease(fa.producer_regs)   # static operand, read at compile time
        fa.load(q, k, v, pipeline, storage)             # method looked up at compile time
    else:
        ws.arch.setmaxnreg_increase(fa.mma_regs)
        fa.mma(q, k, v, o, pipeline, storage)


@ws.kernel(max_specializations=LIBRARY_SPECIALIZATIONS)
def flash_attention_kernel(fa: ws.Static[FlashAttention], q: ws.Tensor, k: ws.Tensor,
                           v: ws.Tensor, o: ws.Tensor):
    """FlashAttention forward: launch ``[fa.grid(B, H, S_q), fa.threads]`` (see the module
    docstring; ``warpstage.ops.flash_attention`` does it for torch tensors).

    The block must be ``fa.threads`` (checked while tracing: OperandError). The grid must be
    ``fa.grid(B, H, S_q)``; it is not checked: CTA (x, y) computes query rows ``tile_m x ..
    tile_m (x + 1) - 1`` of batch-head y (with ``causal`` block x takes row block
    ``grid.x - 1 - x``, the same set), so a smaller grid leaves rows of o unwritten and a
    larger one runs CTAs that store nothing. The tensors' head dimension (their last extent, a
    run-time value) must be ``fa.head_dim``; it is not checked here either (a wider D leaves
    o's columns past ``fa.head_dim`` unwritten and reads only the first ``fa.head_dim`` of q
    and k; a narrower one reads out of bounds): ``warpstage.ops.flash_attention`` picks the
    policy from the tensors, so it cannot mismatch."""
    fa.check_block("flash_attention_kernel")
    fa.check(q, k, v, o)
    storage = ws.smem.allocate(fa.SharedStorage)
    attention_body(fa, q, k, v, o, storage)
