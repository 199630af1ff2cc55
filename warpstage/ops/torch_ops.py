"""``ws.ops``' torch.library ops: ``torch.ops.warpstage.flash_attention`` and
``torch.ops.warpstage.matmul`` and ``torch.ops.warpstage.scaled_matmul``, registered with
``ws.torch.custom_op`` (warpstage/runtime/torch_library.py says what each takes and why no
autograd formula is registered). Imported only by
``ops/torch_dispatch.py`` on the first call with torch tensors: it imports torch."""
from __future__ import annotations

from typing import Optional

import torch

from ..runtime.torch_library import custom_op

__all__ = ["flash_attention_op", "matmul_op", "scaled_matmul_op", "OPS"]


def _flash_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False,
                     scale: Optional[float] = None, causal_align: str = "top_left",
                     tile_n: Optional[int] = None, num_stages: Optional[int] = None,
                     mma: str = "auto") -> torch.Tensor:
    from .attention import flash_attention_eager
    return flash_attention_eager(q, k, v, causal, scale, causal_align=causal_align,
                                 tile_n=tile_n, num_stages=num_stages, mma=mma)


def _flash_attention_fake(q, k, v, causal=False, scale=None, causal_align="top_left",
                          tile_n=None, num_stages=None, mma="auto"):
    batch, heads, seq_q, head_dim = q.shape
    return torch.empty((batch, heads, seq_q, head_dim), dtype=q.dtype, device=q.device)


flash_attention_op = custom_op("warpstage::flash_attention", _flash_attention, mutates_args=(),
                               fake=_flash_attention_fake)


def _matmul(a: torch.Tensor, b: torch.Tensor, out_dtype: Optional[torch.dtype] = None,
            tile_n: Optional[int] = None, num_stages: Optional[int] = None, raster: str = "M",
            group: Optional[int] = None, schedule: str = "cooperative",
            splits: Optional[int] = None, tile_m: Optional[int] = None) -> torch.Tensor:
    from .matmul_host import matmul_eager
    return matmul_eager(a, b, out_dtype=out_dtype, tile_n=tile_n, num_stages=num_stages,
                        raster=raster, group=group, schedule=schedule, splits=splits,
                        tile_m=tile_m)


def _product_like(a, b, dtype) -> torch.Tensor:
    """An empty (batch..., M, N) tensor of a (batched) product: a 2-D operand broadcasts."""
    batch = a.shape[:-2] or b.shape[:-2]
    return torch.empty((*batch, a.shape[-2], b.shape[-1]), dtype=dtype, device=a.device)


def _matmul_fake(a, b, out_dtype=None, tile_n=None, num_stages=None, raster="M", group=None,
                 schedule="cooperative", splits=None, tile_m=None):
    return _product_like(a, b, out_dtype or a.dtype)


matmul_op = custom_op("warpstage::matmul", _matmul, mutates_args=(), fake=_matmul_fake)


def _scaled_matmul(a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor,
                   scale_b: torch.Tensor, bias: Optional[torch.Tensor] = None,
                   out_dtype: Optional[torch.dtype] = None, tile_n: Optional[int] = None,
                   num_stages: Optional[int] = None, raster: str = "M",
                   group: Optional[int] = None, schedule: str = "cooperative",
                   splits: Optional[int] = None, tile_m: Optional[int] = None) -> torch.Tensor:
    from .scaled_matmul import scaled_matmul_eager
    return scaled_matmul_eager(a, b, scale_a, scale_b, out_dtype=out_dtype, bias=bias,
                               tile_n=tile_n, num_stages=num_stages, raster=raster, group=group,
                               schedule=schedule, splits=splits, tile_m=tile_m)


def _scaled_matmul_fake(a, b, scale_a, scale_b, bias=None, out_dtype=None, tile_n=None,
                        num_stages=None, raster="M", group=None, schedule="cooperative",
                        splits=None, tile_m=None):
    return _product_like(a, b, out_dtype or torch.bfloat16)


scaled_matmul_op = custom_op("warpstage::scaled_matmul", _scaled_matmul, mutates_args=(),
                             fake=_scaled_matmul_fake)

OPS = {"flash_attention": flash_attention_op, "matmul": matmul_op,
       "scaled_matmul": scaled_matmul_op}
