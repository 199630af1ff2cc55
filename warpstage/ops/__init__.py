"""Ready-made operators built on warpstage kernels (``ws.ops``).

- ``flash_attention(q, k, v, causal=False, scale=None)``: scaled dot-product attention on
  (B, H, S, D) fp16/bf16 tensors with the warp-specialized FlashAttention kernel
  (``attention_kernel.py``); like ``torch.nn.functional.scaled_dot_product_attention``.
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
