"""FlashAttention forward on CUDA cores, warp-specialized (DESIGN §1 made real).

    O[b, h, i, :] = softmax(scale * Q[b, h, i, :] @ K[b, h, :, :]^T) @ V[b, h, :, :]

q, k, v, o: global tensors of shape (B, H, S, D) (D = ``head_dim``, 64 or 128; fp16 or bf16;
any strides, the last one 1 for cp.async), q with S_q rows, k and v with S_k rows. ``causal``
masks key j > query i (top-left aligned, as ``torch.nn.functional.scaled_dot_product_attention``
with ``is_causal=True``). Accumulation is fp32; the output is rounded to o's dtype.

Grid ``(ceil(S_q / tile_m), B * H)``; block ``128 + tile_m * D / 64`` threads:

- warpgroup 0, the **producer** (``FlashAttention.load``): gives registers away
  (``setmaxnreg_decrease``) and streams K and V tiles of ``tile_n`` rows into a ring of
  ``num_stages`` shared-memory stages through a ``ws.pipeline.PipelineAsync``: 16-byte
  ``cp.async`` copies that arrive on the stage's ``full`` mbarrier when they land
  (``cp.async.mbarrier.arrive.noinc``), or plain loads and ``st.shared`` + ``mbarrier.arrive``
  with ``copy='ld/st'``. Keys past S_k are not copied (their rows are never read).
- the other warps, the **consumers** (``FlashAttention.mma``): take the registers
  (``setmaxnreg_increase``). ``D / 64`` threads share one query row (lanes 2i and 2i+1 for
  D = 128), each holding 64 of its columns: the Q slice, pre-multiplied by ``scale * log2(e)``,
  and 64 fp32 output accumulators, all in registers (~150 per thread). For each key j of a stage
  a thread computes its partial ``q . k_j`` (4 interleaved partial sums), the two halves of a
  row add theirs with ``shfl.sync.bfly``, then the online softmax in base 2:
  ``m' = max(m, s)``, ``alpha = 2^(m - m')``, ``p = 2^(s - m')``, ``l = l * alpha + p``,
  ``acc = acc * alpha + p * v_j``. The key loop has the same trip count in the whole warp
  (the keys up to the tensor's end, and with ``causal`` up to the warp's last row), so the
  shuffles run converged; a causal key past the thread's own row gets ``s = -inf`` (p = 0; key
  0 is never masked, so m is finite from the first key on). At the end each thread stores its
  64 columns of ``acc / l`` (rows past S_q are not stored).

No tensor cores yet (mma.sync / wgmma come later): this is the correctness baseline. The
shared-memory ring is the only inter-warp communication; the pipeline's mbarriers order it.
"""
from __future__ import annotations

import math

import warpstage as ws

from ..lang.operands import operand_error
from ..lang.scalars import BFloat16, Float16

__all__ = ["FlashAttention", "flash_attention_kernel", "attention_body", "LOG2E"]

LOG2E = 1.4426950408889634
_DTYPES = (Float16, BFloat16)


class FlashAttention:
    """The static policy of the kernel: configuration plus the per-role device code (``load``,
    ``mma``). A plain object, so it is static by rule 7 whatever the parameter is called; its
    ``__static_key__`` is the configuration, so two equal configurations share one compiled
    kernel and changing a field recompiles.

    ``head_dim``: D (64 or 128). ``dtype``: ``ws.Float16`` or ``ws.BFloat16`` (of q, k, v, o).
    ``causal``: mask key j > query i. ``softmax_scale``: defaults to 1/sqrt(D); folded with
    log2(e) into the Q row. ``tile_m``: query rows per CTA; each row takes D / 64 consumer
    threads, and the consumer threads (``tile_m * D / 64``) must be 128 or 256 (one or two
    warpgroups). ``tile_n``: keys per pipeline stage. ``num_stages``: depth of the shared-memory
    ring. ``copy``: 'cp.async' (16-byte copies; every stride but the last a multiple of 8
    elements, the last 1, a 16-byte aligned base) or 'ld/st' (any strides).
    ``producer_regs`` / ``mma_regs``: the ``setmaxnreg`` per-thread register counts of the
    producer warpgroup and of the consumer warpgroups (multiples of 8 in [24, 256]).

    Treat it as immutable (the storage class is built from the fields at construction). Raises
    ValueError for a configuration the kernel cannot run (the message names the field)."""

    producer_warps = 4          # one warpgroup: setmaxnreg works per warpgroup

    def __init__(self, head_dim=64, dtype=BFloat16, causal=False, softmax_scale=None,
                 tile_m=128, tile_n=64, num_stages=2, copy="cp.async", producer_regs=40,
                 mma_regs=232):
        if head_dim not in (64, 128):
            raise ValueError(f"FlashAttention: head_dim must be 64 or 128, got {head_dim!r}")
        if dtype not in _DTYPES:
            raise ValueError(f"FlashAttention: dtype must be ws.Float16 or ws.BFloat16, got "
                             f"{dtype!r}")
        threads_per_row = head_dim // 64
        consumer_threads = tile_m * threads_per_row if isinstance(tile_m, int) else None
        if consumer_threads not in (128, 256):
            raise ValueError(f"FlashAttention: tile_m * head_dim / 64 (the consumer threads) must "
                             f"be 128 or 256 (one or two warpgroups); tile_m={tile_m!r} with "
                             f"head_dim={head_dim} gives {consumer_threads}. Fix: tile_m="
                             f"{128 // threads_per_row} or {256 // threads_per_row}")
        rows_per_pass = 128 * 8 // head_dim      # K/V rows the 128 producer threads copy at once
        if not isinstance(tile_n, int) or tile_n <= 0 or tile_n % rows_per_pass:
            raise ValueError(f"FlashAttention: tile_n must be a positive multiple of "
                             f"{rows_per_pass} for head_dim={head_dim}, got {tile_n!r}")
        if not isinstance(num_stages, int) or not 1 <= num_stages <= 8:
            raise ValueError(f"FlashAttention: num_stages must be an int in [1, 8], got "
                             f"{num_stages!r}")
        if copy not in ("cp.async", "ld/st"):
            raise ValueError(f"FlashAttention: copy must be 'cp.async' or 'ld/st', got {copy!r}")
        need = producer_regs * 128 + mma_regs * consumer_threads
        if need > 65536:
            raise ValueError(f"FlashAttention: the register split needs {producer_regs} x 128 + "
                             f"{mma_regs} x {consumer_threads} = {need} registers, more than the "
                             "SM's 65536. Fix: lower mma_regs or producer_regs")
        self.head_dim = head_dim
        self.dtype = dtype
        self.causal = bool(causal)
        self.softmax_scale = float(1.0 / math.sqrt(head_dim) if softmax_scale is None
                                   else softmax_scale)
        self.scale_log2 = self.softmax_scale * LOG2E
        self.tile_m = tile_m
        self.tile_n = tile_n
        self.num_stages = num_stages
        self.copy = copy
        self.producer_regs = producer_regs
        self.mma_regs = mma_regs
        self.rows_per_pass = rows_per_pass
        self.threads_per_row = threads_per_row
        self.consumer_threads = consumer_threads
        self.producer_threads = 32 * self.producer_warps
        self.threads = self.producer_threads + consumer_threads
        stage = (num_stages, tile_n, head_dim)
        fields = dict(k=ws.smem.Array[dtype, stage, 128], v=ws.smem.Array[dtype, stage, 128],
                      barriers=ws.pipeline.BarrierStorage[num_stages])
        self.SharedStorage = ws.smem.make_storage("FlashAttentionStorage", **fields)

    def __static_key__(self):
        return ("FlashAttention", self.head_dim, self.dtype.__name__, self.causal,
                self.softmax_scale, self.tile_m, self.tile_n, self.num_stages, self.copy,
                self.producer_regs, self.mma_regs)

    def __repr__(self) -> str:
        return (f"FlashAttention(head_dim={self.head_dim}, dtype=ws.{self.dtype.__name__}, "
                f"causal={self.causal}, tile_m={self.tile_m}, tile_n={self.tile_n}, "
                f"num_stages={self.num_stages}, copy={self.copy!r})")

    @property
    def smem_bytes(self) -> int:
        """Dynamic shared memory one CTA needs (bytes)."""
        return ws.smem.size_of(self.SharedStorage)

    def grid(self, batch: int, heads: int, seq_q: int) -> tuple:
        """The launch grid for (B, H, S_q): ``(ceil(S_q / tile_m), B * H)``."""
        return (-(-seq_q // self.tile_m), batch * heads)

    # -- device code shared by both roles ------------------------------------------------------
    def coordinates(self, q):
        """(b, h, m_block) of this CTA: dynamic Int32s from the block index."""
        m_block, bh, _ = ws.arch.block_idx()
        return bh // q.shape[1], bh % q.shape[1], m_block

    def kv_tiles(self, q, k, m_block):
        """How many K/V tiles this CTA visits (dynamic, the same in every thread): all of S_k,
        or with ``causal`` the keys up to its last valid query row."""
        seq_k = k.shape[2]
        if ws.static(self.causal):
            last_row = ws.math.min((m_block + 1) * self.tile_m, q.shape[2])
            seq_k = ws.math.min(seq_k, last_row)
        return (seq_k + (self.tile_n - 1)) // self.tile_n

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
        """Producer warpgroup: fill the K/V ring, one stage per ``tile_n`` keys."""
        b, h, m_block = self.coordinates(q)
        seq_k = k.shape[2]
        n_tiles = self.kv_tiles(q, k, m_block)
        t = ws.arch.thread_idx()[0]                  # 0..127 in warpgroup 0
        chunks = self.head_dim // 8                  # 16-byte chunks per K/V row
        row0 = t // chunks
        col = (t % chunks) * 8
        state = pipeline.producer_start_state()
        for tile in range(n_tiles):
            pipeline.producer_acquire(state)
            k_stage = storage.k[state.index]
            v_stage = storage.v[state.index]
            for p in ws.static_range(self.tile_n // self.rows_per_pass):
                r = row0 + p * self.rows_per_pass
                key = tile * self.tile_n + r
                if key < seq_k:
                    self.copy_row(k, k_stage[r], b, h, key, col)
                    self.copy_row(v, v_stage[r], b, h, key, col)
            pipeline.producer_commit(state, cp_async=self.copy == "cp.async")
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

    # -- consumer role -------------------------------------------------------------------------
    @ws.jit
    def mma(self, q, k, v, o, pipeline, storage):
        """Consumer warps: D / 64 threads per query row, 64 columns each; online softmax over
        the K/V ring."""
        b, h, m_block = self.coordinates(q)
        seq_q = q.shape[2]
        seq_k = k.shape[2]
        n_tiles = self.kv_tiles(q, k, m_block)
        c = ws.arch.thread_idx()[0] - self.producer_threads     # 0..consumer_threads-1
        rows_per_warp = 32 // self.threads_per_row
        row = m_block * self.tile_m + c // self.threads_per_row
        col0 = (c % self.threads_per_row) * 64                   # this thread's 64 columns
        row_c = min(row, seq_q - 1)           # rows past S_q compute on the last row, unstored
        warp_last = min(m_block * self.tile_m + (c // 32 + 1) * rows_per_warp, seq_q) - 1
        q_part = [ws.Float32(q[b, h, row_c, col0 + d]) * self.scale_log2
                  for d in ws.static_range(64)]
        acc = [ws.Float32(0.0) for _ in ws.static_range(64)]
        m_i = ws.Float32(-math.inf)
        l_i = ws.Float32(0.0)
        state = pipeline.consumer_start_state()
        for tile in range(n_tiles):
            pipeline.consumer_wait(state)
            k_stage = storage.k[state.index]
            v_stage = storage.v[state.index]
            n0 = tile * self.tile_n
            n_keys = min(self.tile_n, seq_k - n0)                # warp-uniform trip count
            if ws.static(self.causal):
                n_keys = min(n_keys, warp_last + 1 - n0)
            for j in range(n_keys):
                s = self.dot(q_part, k_stage[j], col0)
                if ws.static(self.causal):
                    s = s if n0 + j <= row_c else ws.Float32(-math.inf)
                m_new = max(m_i, s)
                alpha = ws.math.exp2(m_i - m_new)
                p = ws.math.exp2(s - m_new)
                l_i = l_i * alpha + p
                v_row = v_stage[j]
                acc = [ws.math.fma(p, ws.Float32(v_row[col0 + d]), acc[d] * alpha)
                       for d in ws.static_range(64)]
                m_i = m_new
            pipeline.consumer_release(state)
            state = state.advance()
        if row < seq_q:
            inv = 1.0 / l_i
            for d in ws.static_range(64):
                o[b, h, row, col0 + d] = acc[d] * inv

    def dot(self, q_part, k_row, col0):
        """The row's ``q . k_row`` in fp32: this thread's 64 columns as 4 interleaved partial
        sums (short FMA dependency chains), plus, for D = 128, the other half from the
        neighbouring lane (``shfl.sync.bfly`` with lane mask 1; the warp is converged)."""
        part = [ws.Float32(0.0)] * 4
        for d in ws.static_range(64):
            part[d % 4] = ws.math.fma(q_part[d], ws.Float32(k_row[col0 + d]), part[d % 4])
        s = (part[0] + part[1]) + (part[2] + part[3])
        if ws.static(self.threads_per_row == 2):
            s = s + ws.arch.shfl_xor_sync(s, 1)
        return s


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


@ws.kernel
def flash_attention_kernel(fa: ws.Static[FlashAttention], q: ws.Tensor, k: ws.Tensor,
                           v: ws.Tensor, o: ws.Tensor):
    """FlashAttention forward: launch ``[fa.grid(B, H, S_q), fa.threads]`` (see the module
    docstring; ``warpstage.ops.flash_attention`` does it for torch tensors)."""
    fa.check(q, k, v, o)
    storage = ws.smem.allocate(fa.SharedStorage)
    attention_body(fa, q, k, v, o, storage)
