"""What the two FlashAttention kernels share: ``attention_kernel.py`` (``FlashAttention``,
mma.sync, FlashAttention-2 style) and ``attention_wgmma.py`` (``FlashAttentionWgmma``, wgmma +
TMA, FlashAttention-3 style). ``AttentionPolicy`` is their common base: the checks of the fields
both have (head_dim, dtype, tile_n, num_stages, the register split, shared memory), the softmax
scale, ``__static_key__`` / ``__repr__``, the launch grid, and the consumer arithmetic that does
not depend on the MMA instruction (the masks here, the online softmax in ``attention_softmax.py``).

That arithmetic runs on a thread's accumulator elements in one order for both kernels: the f32
C fragment of ``mma.sync.m16n8`` (PTX ISA 9.7.14.5.8) holds rows ``g = lane / 4`` (elements 0, 1)
and ``g + 8`` (elements 2, 3) at columns ``2 (lane % 4)``, ``+1``; a list of n8 tiles laid end to
end is exactly wgmma's m64nN accumulator for one warp (PTX ISA 9.7.15.5.1, "Matrix fragments for
wgmma.mma_async", the D layout). So element ``i`` of the flattened accumulator is row half
``(i / 2) % 2`` and column ``8 (i / 4) + 2 (lane % 4) + i % 2``. A subclass says how its
fragments flatten and regroup (``elements`` / ``fragments``).
"""
from __future__ import annotations

import functools
import math
import sys

import warpstage as ws

from ..lang.operands import operand_error
from ..lang.scalars import BFloat16, Float16
from .attention_softmax import OnlineSoftmax, tree

__all__ = ["AttentionPolicy", "LOG2E", "tree"]

LOG2E = 1.4426950408889634
_DTYPES = (Float16, BFloat16)
_NEG_INF = -math.inf


def _plain(value):
    """A numpy scalar as its Python value (``.item()``); anything else as it is."""
    np = sys.modules.get("numpy")              # a numpy scalar means numpy is imported
    return value.item() if np is not None and isinstance(value, np.generic) else value


class AttentionPolicy(OnlineSoftmax):
    """Base of the FlashAttention policies. A subclass sets ``policy_name`` (error messages and
    the first pair of ``__static_key__``), ``key_fields`` / ``repr_fields`` (its own fields, after
    head_dim, dtype, causal (and softmax_scale for the key)), ``consumer_rows`` (query rows of one
    consumer unit: 16 for an mma.sync warp, 64 for a wgmma warpgroup), ``tile_m``,
    ``producer_threads`` / ``consumer_threads``, and ``elements`` / ``fragments``."""

    policy_name = "AttentionPolicy"
    key_fields: tuple = ()
    repr_fields: tuple = ()
    consumer_rows = 16
    causal_align = "top_left"
    """Where the causal diagonal sits when S_q != S_k: "top_left" (key j is masked for query i
    when j > i: torch SDPA's ``is_causal``) or "bottom_right" (j > i + S_k - S_q:
    FlashAttention's, where the last query sees every key, as in decoding)."""
    fast_exp2 = True
    """Softmax exponentials as ``ex2.approx.ftz.f32`` (``ws.math.exp2(approx=True)``): results
    below 2^-126 flush to 0, which a softmax sum cannot see (they are < 2^-126 of the row's
    largest term, 1), and ptxas drops the ~3 range fix-up instructions around each MUFU.EX2."""

    # -- configuration (host side) -------------------------------------------------------------
    head_dims = (64, 128)
    """The head dimensions D the policy's kernel takes (subclasses widen it)."""

    def __init_subclass__(cls, **kwargs):
        """Each policy's ``__init__`` takes numpy scalars as their Python values
        (``tile_n=np.int64(128)``, ``rescale_threshold=np.float32(8)``: the checks, the layouts
        and the static key see ints, floats and bools)."""
        super().__init_subclass__(**kwargs)
        init = cls.__dict__.get("__init__")
        if init is not None:
            @functools.wraps(init)
            def plain_init(self, *args, **fields):
                return init(self, *map(_plain, args), **{k: _plain(v) for k, v in fields.items()})
            cls.__init__ = plain_init

    def policy_error(self, name: str, got, expected: str, fix: str):
        """The OperandError (a ValueError) of the policy's parameter ``name`` = ``got``; its
        ``field`` is ``name`` (the op's plan reads it: ``attention_plan.wgmma_policy_for``)."""
        err = operand_error(f"ws.ops.{self.policy_name}'s {name}", got, expected, fix)
        err.field = name
        return err

    def flag(self, name: str, value, expected: str = "True or False") -> bool:
        """The policy's bool field ``name`` (a numpy bool arrives as a bool: ``__init__``
        takes numpy scalars as their Python values), else OperandError (a ValueError;
        ``overlap='no'`` is not True)."""
        if type(value) is bool:
            return value
        raise self.policy_error(name, value, expected, f"{name}=True or {name}=False")

    def check_operands(self, head_dim, dtype) -> None:
        """OperandError (a ValueError) unless D is one of ``head_dims`` and the dtype fp16 or
        bf16."""
        if head_dim not in self.head_dims or isinstance(head_dim, bool):
            dims = ", ".join(map(str, self.head_dims[:-1])) + f" or {self.head_dims[-1]}"
            raise self.policy_error("head_dim", head_dim, dims, "pad the head dimension to "
                                    f"one of {dims} (zeros do not change the scores)")
        if dtype not in _DTYPES:
            raise self.policy_error("dtype", dtype, "ws.Float16 or ws.BFloat16",
                                    "dtype=ws.BFloat16 (the default)")

    def check_stages(self, tile_n, num_stages, tile_n_fix) -> None:
        """OperandError unless tile_n is a multiple of 16 in [16, 256] and num_stages in [1, 8]."""
        if (not isinstance(tile_n, int) or isinstance(tile_n, bool) or not 16 <= tile_n <= 256
                or tile_n % 16):
            raise self.policy_error("tile_n", tile_n, "a multiple of 16 in [16, 256] (keys per "
                                    "stage)", tile_n_fix)
        if (not isinstance(num_stages, int) or isinstance(num_stages, bool)
                or not 1 <= num_stages <= 8):
            raise self.policy_error("num_stages", num_stages, "an int in [1, 8] (K/V stages "
                                    "in the smem ring)", "num_stages=2 or 3")

    def check_register_split(self, producer_regs, mma_regs, consumer_threads) -> None:
        """OperandError when 128 producer threads and the consumer threads at their
        ``setmaxnreg`` counts need more than the SM's 65536 registers."""
        need = producer_regs * 128 + mma_regs * consumer_threads
        if need > 65536:
            raise self.policy_error("mma_regs", mma_regs, f"producer_regs x 128 + mma_regs x "
                                    f"{consumer_threads} <= 65536 (the SM's registers); "
                                    f"{producer_regs} x 128 + {mma_regs} x {consumer_threads} "
                                    f"= {need}", "lower mma_regs or producer_regs")

    def set_fields(self, head_dim, dtype, causal, softmax_scale, tile_n, num_stages,
                   producer_regs, mma_regs) -> None:
        """Store the common fields and the softmax constants: ``scale_log2`` = scale * log2(e);
        ``exp2_scale``, the c of ``p = 2^(s c - m c)``. OperandError unless ``causal`` is a
        bool and ``softmax_scale`` None or a finite real number."""
        if not isinstance(causal, bool) and type(causal).__name__ not in ("bool_", "bool"):
            raise self.policy_error("causal", causal, "a bool", "causal=True or causal=False")
        if softmax_scale is not None:
            try:
                ok = (not isinstance(softmax_scale, (bool, str, bytes))
                      and math.isfinite(float(softmax_scale)))
            except (TypeError, ValueError):
                ok = False
            if not ok:
                raise self.policy_error("softmax_scale", softmax_scale, "None (1/sqrt(D)) or "
                                        "a finite real number", "softmax_scale=None, or e.g. "
                                        "softmax_scale=0.125")
        self.head_dim = head_dim
        self.dtype = dtype
        self.causal = self.flag("causal", causal)
        self.softmax_scale = float(1.0 / math.sqrt(head_dim) if softmax_scale is None
                                   else softmax_scale)
        self.scale_log2 = self.softmax_scale * LOG2E
        # p = 2^(s c - m c) with m = max(s) holds for c > 0; for c <= 0 the scores are scaled
        # first (max(s c) is not max(s) c) and the softmax runs with c = 1
        self.exp2_scale = self.scale_log2 if self.scale_log2 > 0 else 1.0
        self.tile_n = tile_n
        self.num_stages = num_stages
        self.producer_regs = producer_regs
        self.mma_regs = mma_regs

    def check_smem(self, what: str, ring_bytes_per_key: int, min_stages: int = 1,
                   others=()) -> None:
        """OperandError when ``SharedStorage`` (``what`` describes it) exceeds a CTA's dynamic
        shared memory. Its fix names what would fit: one stage fewer (down to ``min_stages``),
        the widest ``tile_n`` (a multiple of 16) at these stages, from ``ring_bytes_per_key``
        (the ring's bytes per key per stage), and ``others`` (further fixes, e.g.
        ``tma_store=False``)."""
        if self.smem_bytes > ws.smem.MAX_DYNAMIC_SMEM:
            ring = self.num_stages * ring_bytes_per_key
            free = ws.smem.MAX_DYNAMIC_SMEM - (self.smem_bytes - ring * self.tile_n)
            widest = free // ring // 16 * 16
            fixes = ([f"num_stages={self.num_stages - 1}"] if self.num_stages > min_stages
                     else []) + ([f"tile_n={widest}"] if widest >= 16 else []) + list(others)
            err = self.policy_error("num_stages", self.num_stages, f"a ring that fits the "
                                    f"{ws.smem.MAX_DYNAMIC_SMEM} bytes of shared memory a CTA "
                                    f"may use; {what} need {self.smem_bytes} bytes",
                                    " or ".join(fixes) if fixes else "a smaller head_dim")
            err.smem_overflow = True        # the op's plan drops a shipped field on this one
            raise err

    def __static_key__(self):
        """The configuration as (field name, value) pairs: equal configurations share a
        compiled kernel, and a RecompileWarning names the fields that changed
        (docs/binding-time.md, "Static keys")."""
        return ((("policy", self.policy_name), ("head_dim", self.head_dim),
                 ("dtype", self.dtype.__name__), ("causal", self.causal),
                 ("softmax_scale", self.softmax_scale), ("fast_exp2", self.fast_exp2))
                + tuple((f, getattr(self, f)) for f in self.key_fields))

    def __repr__(self) -> str:
        return (f"{self.policy_name}(head_dim={self.head_dim}, dtype=ws.{self.dtype.__name__}, "
                f"causal={self.causal}, "
                + ", ".join(f"{f}={getattr(self, f)!r}" for f in self.repr_fields) + ")")

    def check_block(self, kernel: str) -> None:
        """Trace-time check that the launch block is ``(threads, 1, 1)``: the roles are picked
        by warp index and the pipeline's barrier counts are ``producer_threads`` and
        ``consumer_threads``, so another block deadlocks (too few threads) or runs warps
        without a role (too many). The block is part of the specialization (the kernel's
        ``.maxntid``), so the trace knows it. OperandError with the fix."""
        block = ws.arch.static_block_dim()
        if block != (self.threads, 1, 1):
            raise operand_error(
                f"{kernel}: the launch block (threads per CTA) for {self!r}", block,
                f"({self.threads}, 1, 1): fa.threads = {self.producer_threads} producer + "
                f"{self.consumer_threads} consumer threads",
                f"launch as {kernel}[fa.grid(B, H, S_q), fa.threads](...) "
                f"(ws.compile(..., block=(fa.threads, 1, 1)) ahead of time), or call "
                "warpstage.ops.flash_attention, which does it")

    @property
    def smem_bytes(self) -> int:
        """Dynamic shared memory one CTA needs (bytes)."""
        return ws.smem.size_of(self.SharedStorage)

    def grid(self, batch: int, heads: int, seq_q: int) -> tuple:
        """The launch grid for (B, H, S_q): ``(ceil(S_q / tile_m), B * H)``."""
        return (-(-seq_q // self.tile_m), batch * heads)

    # -- device code shared by both roles ------------------------------------------------------
    def coordinates(self, heads):
        """(b, h, m_block) of this CTA: dynamic Int32s from the block index. With ``causal`` the
        row blocks run in reverse (block x = 0 takes the last rows, the most keys), so the
        longest CTAs are scheduled first."""
        m_block, bh, _ = ws.arch.block_idx()
        if ws.static(self.causal):
            m_block = ws.arch.grid_dim()[0] - 1 - m_block
        return bh // heads, bh % heads, m_block

    def causal_offset(self, seq_q, seq_k):
        """The diagonal's shift: query i sees keys j <= i + offset (0 top-left; S_k - S_q
        bottom-right, dynamic)."""
        return seq_k - seq_q if ws.static(self.causal_align == "bottom_right") else 0

    def kv_tiles(self, seq_q, seq_k, m_block):
        """How many K/V tiles this CTA visits (dynamic, the same in every thread): all of S_k,
        or with ``causal`` the keys up to its last valid query row (at least one tile, so a
        CTA whose rows see no key at all still writes them)."""
        if ws.static(self.causal):
            last_row = ws.math.min((m_block + 1) * self.tile_m, seq_q)
            seq_k = ws.math.min(seq_k, last_row + self.causal_offset(seq_q, seq_k))
            seq_k = ws.math.max(seq_k, 1)
        return (seq_k + (self.tile_n - 1)) // self.tile_n

    # -- consumer arithmetic on the accumulator elements ---------------------------------------
    def stage_is_live(self, n0, row0):
        """Whether the consumer unit whose first row is ``row0`` computes on the stage of keys
        n0.. (static True without causal; with causal, whether the stage's first key is at most
        the unit's last row). Uniform over the unit, as mma.sync / wgmma need."""
        if ws.static(self.causal):
            return n0 <= row0 + (self.consumer_rows - 1)
        return True

    def needs_mask(self, n0, row0, seq_k, offset=0):
        """Whether some key of the stage is masked for some row of the unit (unit-uniform): the
        stage runs past S_k, or (causal) its last key is past the unit's first row (shifted by
        the diagonal's ``offset``)."""
        past_end = n0 + self.tile_n > seq_k
        if ws.static(self.causal):
            return past_end | (n0 + (self.tile_n - 1) > row0 + offset)
        return past_end

    @ws.jit
    def mask(self, s, n0, rows, lane, seq_k, offset=0):
        """S with ``-inf`` where the key is past S_k or (causal) past the row's diagonal (key
        > row + ``offset``): element i is key ``n0 + 8 (i / 4) + 2 (lane % 4) + i % 2`` of row
        ``rows[(i / 2) % 2]``."""
        base = n0 + (lane & 3) * 2
        last = [seq_k - 1 - base, seq_k - 1 - base]          # last valid key - base, per row
        if ws.static(self.causal):
            last = [ws.math.min(last[r], rows[r] + offset - base) for r in ws.static_range(2)]
        x = self.elements(s)
        return self.fragments([
            ws.math.select((i >> 2) * 8 + (i & 1) <= last[(i >> 1) & 1], x[i], _NEG_INF)
            for i in ws.static_range(len(x))])

    def store_row(self, o, b, h, row, r, lane, acc, inv):
        """o[b, h, row, c] = O's row half r times ``inv``, for this thread's columns
        c = 8 j + 2 (lane % 4), +1 (rounded to o's dtype)."""
        x = self.elements(acc)
        for j in ws.static_range(self.head_dim // 8):
            col = j * 8 + (lane & 3) * 2
            o[b, h, row, col] = x[4 * j + 2 * r] * inv
            o[b, h, row, col + 1] = x[4 * j + 2 * r + 1] * inv
