"""The configuration spaces ``ws.ops.matmul(..., tune=True)`` and ``ws.ops.flash_attention(...,
tune=True)`` search (``ws.autotune``, docs/autotune.md), and their shape classes.

Without ``tune`` the ops keep their shipped, measured defaults (``choose_config``,
``WGMMA_DEFAULTS``): nobody waits for tuning unless asked. With it, the first call of a shape
class compiles and times the space once; the winner is stored on disk per device, warpstage
version and shape class, so later calls and later processes take it at once.

- GEMM (``matmul_space``): the cooperative schedule with tile_n 128 and 256, the deepest ring and
  one stage less, tile-order bands (group) 4, 8 and 16, raster along M and along N (24), and
  the ping-pong schedule with tile_n 128, groups 4 and 8 (2): 26 configurations, the shipped
  default first.
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

__all__ = ["MatmulTuning", "AttentionTuning", "matmul_space", "attention_space",
           "matmul_shape_class", "attention_shape_class", "tuned_matmul", "tuned_attention"]


@dataclass(frozen=True)
class MatmulTuning:
    """One GEMM candidate: the ``ws.ops.matmul`` policy arguments it sets."""

    tile_n: int
    num_stages: int
    group: int
    raster: str = "M"
    schedule: str = "cooperative"


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
    from .matmul_host import _out_dtype, _sms, _shapes, choose_config
    from .matmul_kernel import max_stages
    ta, tb = as_tensor_arg(a, "a"), as_tensor_arg(b, "b")
    dtype = Float16 if str(ta.dtype) == "f16" else BFloat16
    odt = _out_dtype(out_dtype, dtype)
    batches, m, n, k, _, _ = _shapes(ta, tb)
    tile_n, group, _ = choose_config(m, n, k, batches, _sms(ta))

    def deepest(tn, schedule):
        return min(8, max_stages(tn, odt, dtype, schedule))
    space = [MatmulTuning(tile_n, deepest(tile_n, "cooperative"), group)]
    for tn, less, g, raster in itertools.product((256, 128), (0, 1), (4, 8, 16), ("M", "N")):
        space.append(MatmulTuning(tn, deepest(tn, "cooperative") - less, g, raster))
    space += [MatmulTuning(128, deepest(128, "pingpong"), g, "M", "pingpong") for g in (4, 8)]
    return list(dict.fromkeys(space))           # the default once, in first place


def tuned_matmul(a, b, out=None, out_dtype=None, epilogue=None, *, config: MatmulTuning):
    """``matmul_eager`` with one candidate's policy arguments (the tuned launch function)."""
    from .matmul_host import matmul_eager
    return matmul_eager(a, b, out=out, out_dtype=out_dtype, epilogue=epilogue,
                        tile_n=config.tile_n, num_stages=config.num_stages, raster=config.raster,
                        group=config.group, schedule=config.schedule)


def attention_shape_class(q, k, v, causal=False, scale=None, causal_align="top_left",
                          return_lse=False) -> tuple:
    """The attention's tuning key: dtype, head dimension, causality and alignment, whether the
    LSE is returned, K/V heads per query head, B x H, S_q, S_k rounded up to powers of two, and
    whether S_q is short (``SHORT_SEQ``: the shipped defaults differ there)."""
    tq, tk = as_tensor_arg(q, "q"), as_tensor_arg(k, "k")
    b, h, s_q, d = tq.shape
    from .attention import SHORT_SEQ
    return ("attention", str(tq.dtype), d, bool(causal), causal_align, bool(return_lse),
            h // max(1, tk.shape[1]), _pow2(b * h), _pow2(s_q), s_q <= SHORT_SEQ,
            _pow2(tk.shape[2]))


def attention_space(q, k, v, causal=False, scale=None, causal_align="top_left",
                    return_lse=False) -> list:
    """The wgmma kernel's candidates for these tensors (see the module docstring), shipped
    default first; combinations the policy refuses are left out."""
    from .attention import NATIVE_HEAD_DIMS, SHORT_SEQ, WGMMA_DEFAULTS, WGMMA_SHORT
    from .attention_wgmma import FlashAttentionWgmma
    import warpstage as ws
    tq = as_tensor_arg(q, "q")
    d = next(n for n in NATIVE_HEAD_DIMS if n >= tq.shape[3])     # the host pads D to it
    dtype = ws.Float16 if str(tq.dtype) == "f16" else ws.BFloat16
    from ..core.static_key import static_key
    shipped = dict(WGMMA_DEFAULTS[(d, bool(causal))])
    if tq.shape[2] <= SHORT_SEQ:                                # as wgmma_policy_for's short
        shipped.update(WGMMA_SHORT.get((d, bool(causal)), {}))
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
    """The ``ws.autotune`` object of ``op`` ('matmul' or 'attention'), made on first use."""
    t = _TUNERS.get(op)
    if t is None:
        from ..tune import autotune
        if op == "matmul":
            t = autotune(matmul_space, key=matmul_shape_class, name="ws.ops.matmul")(tuned_matmul)
        else:
            t = autotune(attention_space, key=attention_shape_class,
                         name="ws.ops.flash_attention")(tuned_attention)
        _TUNERS[op] = t
    return t

