"""Ready-made operators built on warpstage kernels (``ws.ops``).

- ``flash_attention(q, k, v, causal=False, scale=None, *, causal_align='top_left',
  return_lse=False, tile_n=None, num_stages=None, mma='auto', tune=False)``: scaled
  dot-product attention on (B, H, S, D) fp16/bf16 tensors (k, v with H_kv heads dividing H_q)
  with one of the two warp-specialized FlashAttention kernels (``attention_kernel.py``,
  mma.sync; or ``attention_wgmma.py``, picked by ``mma``); like
  ``torch.nn.functional.scaled_dot_product_attention``; ``return_lse`` also returns the rows'
  float32 log-sum-exp (B, H, S_q); ``ws.explain(ws.ops.flash_attention, q, k, v, ...)`` says
  what a call runs and why.
- ``FlashAttention``: the kernel's static policy (configuration + per-role device code), and
  ``flash_attention_kernel``, the kernel itself, for direct launches.
- ``FlashAttentionWgmma`` / ``flash_attention_wgmma_kernel``: the wgmma + TMA kernel
  (FlashAttention-3 style, ``attention_wgmma.py``), ``flash_attention(..., mma='wgmma')``.
- ``matmul(a, b, *, out=None, out_dtype=None, epilogue=None)``: C = epilogue(A @ B) for 2-D /
  3-D fp16/bf16 tensors with the warp-specialized persistent TMA + wgmma GEMM
  (``matmul_host.py``; the kernel ``matmul_kernel`` and its policy ``Matmul`` in
  ``matmul_kernel.py``; split-K for small M in ``matmul_splitk.py``); like ``torch.matmul``.
- ``scaled_matmul(a, b, scale_a, scale_b, *, out_dtype=None, out=None, bias=None)``: the FP8
  (e4m3/e5m2) GEMM with per-tensor or row/column-wise f32 scales (required), like
  ``torch._scaled_mm`` (``scaled_matmul.py``, same kernel; its epilogue ``Scales``).
- ``Epilogue`` and the shipped ``Bias``, ``BiasGelu``, ``BiasSilu``, ``Residual``
  (``matmul_epilogues.py``): static per-element epilogues compiled into the GEMM.
"""
from .attention import flash_attention, reference
from .attention_kernel import FlashAttention, flash_attention_kernel
from .attention_wgmma import FlashAttentionWgmma, flash_attention_wgmma_kernel
from .matmul_host import MatmulCopyWarning, matmul
from .matmul_epilogues import Bias, BiasGelu, BiasSilu, Epilogue, Residual
from .matmul_kernel import Matmul, matmul_kernel
from .scaled_matmul import Scales, scaled_matmul

__all__ = ["flash_attention", "reference", "FlashAttention", "flash_attention_kernel",
           "FlashAttentionWgmma", "flash_attention_wgmma_kernel", "matmul", "Matmul",
           "matmul_kernel", "MatmulCopyWarning", "Epilogue", "Bias", "BiasGelu", "BiasSilu",
           "Residual", "scaled_matmul", "Scales"]
