"""Ready-made operators built on warpstage kernels (``ws.ops``).

- ``flash_attention(q, k, v, causal=False, scale=None, *, tile_n=None, num_stages=None,
  mma='auto')``: scaled dot-product attention on (B, H, S, D) fp16/bf16 tensors with one of the
  two warp-specialized FlashAttention kernels (``attention_kernel.py``, mma.sync; or
  ``attention_wgmma.py``, picked by ``mma``); like
  ``torch.nn.functional.scaled_dot_product_attention``.
- ``FlashAttention``: the kernel's static policy (configuration + per-role device code), and
  ``flash_attention_kernel``, the kernel itself, for direct launches.
- ``FlashAttentionWgmma`` / ``flash_attention_wgmma_kernel``: the wgmma + TMA kernel
  (FlashAttention-3 style, ``attention_wgmma.py``), ``flash_attention(..., mma='wgmma')``.
"""
from .attention import flash_attention, reference
from .attention_kernel import FlashAttention, flash_attention_kernel
from .attention_wgmma import FlashAttentionWgmma, flash_attention_wgmma_kernel

__all__ = ["flash_attention", "reference", "FlashAttention", "flash_attention_kernel",
           "FlashAttentionWgmma", "flash_attention_wgmma_kernel"]
