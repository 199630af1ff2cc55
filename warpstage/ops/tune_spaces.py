"""The configuration spaces ``ws.ops.matmul(..., tune=True)``, ``ws.ops.scaled_matmul(...,
tune=True)`` and ``ws.ops.flash_attention(..., tune=True)`` search (``ws.autotune``,
docs/autotune.md), and their shape classes.

Without ``tune`` the ops keep their shipped, measured defaults (``choose_config``,
``WGMMA_DEFAULTS``): nobody waits for tuning unless asked. With it, the first call of a shape
class compiles and times the space once; the winner is stored on disk per device, warpstage
version and shape class, so later calls and later processes take it at once.

- GEMM (``matmul_space``): the cooperative schedule with tile_n 128 and 256, the deepest ring and
  one stage less, tile-order bands (group) 4, 8 and 16, raster along M and along N (24), and
  the ping-pong schedule with tile_n 128, groups 4 and 8 (2): 26 configurations, the shipped
  default first; at small M (fewer 128 x 128 output tiles than SMs) also tile_n 256 / 128 x 1,
  2, 4, 8 K splits x 128-row and (M <= 128) 64-row tiles (up to 16 more). FP8
  (``scaled_matmul_space``): the same space on the fp8 ring (K per stage 128 elements, the
  same stage bytes).
- Attention (``attention_space``, the wgmma kernel, D padded as the host pads it): tile_n 64,
  128 and the shipped one, ring depths 2 and 3, 2 or 3 consumer warpgroups, persistent or one
  CTA per tile; those the policy refuses (shared memory, register split) and those equal to
  the shipped default left out, the shipped default first: 14 configurations for D = 128, 16
  for D = 64, 12 for D = 192 and 4 for D = 256 (where most rings do not fit).

Shape classes: each extent rounded up to a power of two, with dtypes, transposes (which stride
is 1), batching, causality and head dimension, so that nearby shapes share a winner.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Optional, Tuple

from ..runtime.tensors import as_tensor_arg

__all__ = ["MatmulTuning", "AttentionTuning", "matmul_space", "gemm_space",
           "scaled_matmul_space", "attention_space", "matmul_shape_class",
           "scaled_matmul_shape_class", "attention_shape_class", "tuned_matmul",
           "tuned_scaled_matmul", "tuned_attention"]


@dataclass(frozen=True)
class MatmulTuning:
    """One GEMM candidate: the ``ws.ops.matmul`` policy arguments it sets."""

    tile_n: int
    num_stages: int
    group: int
    raster: str = "M"
    schedule: str = "cooperative"
    splits: Optional[int] = None
    """K ranges (split-K); None: planned per shape for the candidate's tile_n."""
    tile_m: Optional[int] = None
    """Rows per tile (128, 64); None: the per-shape plan's (``matmul_plan.plan``)."""


@dataclass(frozen=True)
class AttentionTuning:
    """One attention candidate: ``FlashAttentionWgmma`` fields over the shipped defaults, as
    sorted (name, value) pairs."""

    fields: Tuple[Tuple[str, object], ...]

    def __repr__(self) -> str:
        return "AttentionTuning(" + ", ".join(f"{k}={v!r}" for k, v in self.fields) + ")"


def _pow2(n: int) -> int:
    return 1 << max(0, int(n) - 1).bit_length()


def _unit_stride(ta) -> int:
    """Which dimension has stride 1 (the last that does), -1 for none."""
    return max((i for i, s in enumerate(ta.strides) if s == 1), default=-1)


def matmul_shape_class(a, b, out=None, out_dtype=None, epilogue=None) -> tuple:
    """The GEMM's tuning key: dtypes, ranks, unit-stride dimensions, and batches, M, N, K
    rounded up to powers of two."""
    ta, tb = as_tensor_arg(a, "a"), as_tensor_arg(b, "b")
    m, k = ta.shape[-2:]
    n = tb.shape[-1]
    batches = ta.shape[0] if ta.ndim == 3 else tb.shape[0] if tb.ndim == 3 else 1
    return ("matmul", str(ta.dtype), str(out_dtype), type(epilogue).__name__, ta.ndim, tb.ndim,
            _unit_stride(ta), _unit_stride(tb), _pow2(batches), _pow2(m), _pow2(n), _pow2(k))


def matmul_space(a, b, out=None, out_dtype=None, epilogue=None) -> list:
    """The GEMM candidates for these operands (see the module docstring), shipped default
    first."""
    from ..lang.scalars import BFloat16, Float16
    from .matmul_host import _out_dtype
    ta = as_tensor_arg(a, "a")
    dtype = Float16 if str(ta.dtype) == "f16" else BFloat16
    return gemm_space(a, b, dtype, _out_dtype(out_dtype, dtype))


def gemm_space(a, b, dtype, odt) -> list:
    """The candidates of ``matmul_space`` for operands ``a``, ``b`` of ws dtype ``dtype``
    (16-bit or fp8: the ring depths and split-K plan follow its K per stage) and output dtype
    ``odt``; when the output has fewer 128 x 128 tiles than SMs (small M), also tile_n 256 and
    128 with 1, 2, 4 and 8 K splits, with 128-row tiles and (M <= 256) 64-row ones (the
    per-shape plan is an estimate: the tuner measures). The cooperative candidates name their
    tile rows (the plan's, where not swept), so each ring depth fits its tile."""
    from .matmul_host import _sms, _shapes, choose_config
    from .matmul_kernel import max_stages, tile_k_of
    ta, tb = as_tensor_arg(a, "a"), as_tensor_arg(b, "b")
    batches, m, n, k, _, _ = _shapes(ta, tb)
    sms, k_step = _sms(ta), tile_k_of(dtype)
    tm, tile_n, group, _ = choose_config(m, n, k, batches, sms, k_step=k_step)

    def deepest(tn, schedule, rows=tm):
        return min(8, max_stages(tn, odt, dtype, schedule, rows if schedule != "pingpong"
                                 else 128))
    space = [MatmulTuning(tile_n, deepest(tile_n, "cooperative"), group, tile_m=tm)]
    for tn, less, g, raster in itertools.product((256, 128), (0, 1), (4, 8, 16), ("M", "N")):
        space.append(MatmulTuning(tn, deepest(tn, "cooperative") - less, g, raster, tile_m=tm))
    space += [MatmulTuning(128, deepest(128, "pingpong"), g, "M", "pingpong") for g in (4, 8)]
    if -(-m // 128) * -(-n // 128) * batches < sms:
        for rows, tn, sp in itertools.product((64, 128) if m <= 256 else (128,), (256, 128),
                                              (1, 2, 4, 8)):
            space.append(MatmulTuning(tn, deepest(tn, "cooperative", rows), group, splits=sp,
                                      tile_m=rows))
    return list(dict.fromkeys(space))           # the default once, in first place


def tuned_matmul(a, b, out=None, out_dtype=None, epilogue=None, *, config: MatmulTuning):
    """``matmul_eager`` with one candidate's policy arguments (the tuned launch function)."""
    from .matmul_host import matmul_eager
    return matmul_eager(a, b, out=out, out_dtype=out_dtype, epilogue=epilogue,
                        tile_n=config.tile_n, num_stages=config.num_stages, raster=config.raster,
                        group=config.group, schedule=config.schedule, splits=config.splits,
                        tile_m=config.tile_m)


def scaled_matmul_shape_class(a, b, scale_a, scale_b, out=None, out_dtype=None,
                              bias=None) -> tuple:
    """The FP8 GEMM's tuning key: ``matmul_shape_class``'s, with both operand dtypes and
    whether the scales are per-tensor and a bias is added."""
    row_a, col_b = (getattr(as_tensor_arg(s), "numel", 0) > 1 for s in (scale_a, scale_b))
    base = matmul_shape_class(a, b, out, out_dtype)
    return ("scaled_matmul", str(as_tensor_arg(b, "b").dtype), row_a, col_b,
            bias is not None) + base[1:3] + base[4:]


def scaled_matmul_space(a, b, scale_a, scale_b, out=None, out_dtype=None, bias=None) -> list:
    """The FP8 GEMM's candidates: ``gemm_space`` with the fp8 ring (K per stage 128)."""
    from ..ir.fp8 import is_fp8
    from ..lang.scalars import DTYPES, BFloat16
    from .matmul_host import _out_dtype
    ta = as_tensor_arg(a, "a")
    dtype = DTYPES[ta.dtype] if is_fp8(ta.dtype) else None
    if dtype is None:                   # the tuned call explains it (scaled_matmul_eager)
        return [MatmulTuning(256, 4, 8)]
    return gemm_space(a, b, dtype, _out_dtype(out_dtype, BFloat16))


def tuned_scaled_matmul(a, b, scale_a, scale_b, out=None, out_dtype=None, bias=None, *,
                        config: MatmulTuning):
    """``scaled_matmul_eager`` with one candidate's policy arguments."""
    from .scaled_matmul import scaled_matmul_eager
    return scaled_matmul_eager(a, b, scale_a, scale_b, out=out, out_dtype=out_dtype, bias=bias,
                               tile_n=config.tile_n, num_stages=config.num_stages,
                               raster=config.raster, group=config.group,
                               schedule=config.schedule, splits=config.splits,
                               tile_m=config.tile_m)


def attention_shape_class(q, k, v, causal=False, scale=None, causal_align="top_left",
                          return_lse=False) -> tuple:
    """The attention's tuning key: dtype, head dimension, causality and alignment, whether the
    LSE is returned, K/V heads per query head, B x H, S_q, S_k rounded up to powers of two, and
    whether S_q is short (``attention_plan.is_short``: the shipped defaults differ there)."""
    tq, tk = as_tensor_arg(q, "q"), as_tensor_arg(k, "k")
    b, h, s_q, d = tq.shape
    from .attention import NATIVE_HEAD_DIMS
    from .attention_plan import is_short
    padded = next((n for n in NATIVE_HEAD_DIMS if n >= d), d)
    return ("attention", str(tq.dtype), d, bool(causal), causal_align, bool(return_lse),
            h // max(1, tk.shape[1]), _pow2(b * h), _pow2(s_q), is_short(s_q, padded, causal),
            _pow2(tk.shape[2]))


def attention_space(q, k, v, causal=False, scale=None, causal_align="top_left",
                    return_lse=False) -> list:
    """The wgmma kernel's candidates for these tensors (see the module docstring), shipped
    default first; combinations the policy refuses are left out."""
    from .attention import NATIVE_HEAD_DIMS
    from .attention_plan import is_short, shipped_fields
    from .attention_wgmma import FlashAttentionWgmma
    import warpstage as ws
    tq = as_tensor_arg(q, "q")
    d = next(n for n in NATIVE_HEAD_DIMS if n >= tq.shape[3])     # the host pads D to it
    dtype = ws.Float16 if str(tq.dtype) == "f16" else ws.BFloat16
    from ..core.static_key import static_key
    shipped = shipped_fields(d, bool(causal), is_short(tq.shape[2], d, causal))
    seen = {static_key(FlashAttentionWgmma(head_dim=d, dtype=dtype, causal=bool(causal),
                                           **shipped))}
    space = [AttentionTuning(())]
    widths = tuple(dict.fromkeys((128, 64, shipped["tile_n"])))
    # overlap_tiles is searched only where it ships on (it needs a persistent grid, and was
    # slower everywhere else it was measured: ops/attention_plan.py, WGMMA_SHORT)
    overlaps = (True, False) if shipped.get("overlap_tiles") else (False,)
    for tile_n, stages, wgs, persistent, overlap in itertools.product(
            widths, (2, 3), (2, 3), (True, False), overlaps):
        fields = dict(tile_n=tile_n, num_stages=stages, consumer_wgs=wgs, persistent=persistent,
                      overlap_tiles=overlap)
        # the schedule fields that need a persistent grid (partial_last, dynamic_tiles) or no
        # overlap_tiles (skip_idle) follow the varied ones instead of removing their candidates
        if shipped.get("partial_last") and not persistent:
            fields["partial_last"] = False
        if shipped.get("skip_idle") and overlap:
            fields["skip_idle"] = False
        if shipped.get("dynamic_tiles") and not persistent:
            fields["dynamic_tiles"] = False     # it needs a persistent grid
        try:
            key = static_key(FlashAttentionWgmma(head_dim=d, dtype=dtype, causal=bool(causal),
                                                 **dict(shipped, **fields)))
        except ValueError:
            continue
        if key not in seen:             # the shipped default, or one equal to it, is in once
            seen.add(key)
            space.append(AttentionTuning(tuple(sorted(fields.items()))))
    return space


def tuned_attention(q, k, v, causal=False, scale=None, causal_align="top_left",
                    return_lse=False, *, config: AttentionTuning):
    """``flash_attention_eager`` on the wgmma kernel with one candidate's fields (the tuned
    launch function)."""
    from .attention import flash_attention_eager
    return flash_attention_eager(q, k, v, causal, scale, causal_align=causal_align,
                                 return_lse=return_lse, mma="wgmma", policy=dict(config.fields))


_TUNERS: dict = {}


def tuner(op: str):
    """The ``ws.autotune`` object of ``op`` ('matmul', 'scaled_matmul' or 'attention'), made on
    first use."""
    t = _TUNERS.get(op)
    if t is None:
        from ..tune import autotune
        if op == "matmul":
            t = autotune(matmul_space, key=matmul_shape_class, name="ws.ops.matmul")(tuned_matmul)
        elif op == "scaled_matmul":
            t = autotune(scaled_matmul_space, key=scaled_matmul_shape_class,
                         name="ws.ops.scaled_matmul")(tuned_scaled_matmul)
        else:
            t = autotune(attention_space, key=attention_shape_class,
                         name="ws.ops.flash_attention")(tuned_attention)
        _TUNERS[op] = t
    return t

