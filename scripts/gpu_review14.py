"""Session 14 review, GPU side (scripts/gpu_review14.sh runs it): what three of the problems
review14_repros.py shows in the simulator do on the H200, with torch CUDA tensors.

1. K/V broadcast over heads (``expand``: head stride 0), mma='wgmma': ``tma_compatible`` lets a
   0 stride through to cuTensorMapEncodeTiled; the simulator computes it right. Prints the
   max |error| against SDPA on the repeated K/V, or the error raised.
2. scale=1e38 (finite, accepted): the fraction of NaN outputs (all of them in the simulator).
3. ``launch_wgmma`` with an lse of the wrong shape (B, H, 10) inside a larger buffer: whether
   the kernel writes past it (the sentinel after it changes), which the host does not check.
One line per check; nothing here asserts.
"""
import torch
import torch.nn.functional as F

import warpstage as ws
from warpstage.ops.attention import launch_wgmma


def main():
    torch.manual_seed(0)
    dev = "cuda"
    b, h, s, d = 2, 8, 1024, 128
    q = torch.randn(b, h, s, d, device=dev, dtype=torch.bfloat16)
    k1 = torch.randn(b, 1, s, d, device=dev, dtype=torch.bfloat16)
    v1 = torch.randn(b, 1, s, d, device=dev, dtype=torch.bfloat16)
    k, v = k1.expand(b, h, s, d), v1.expand(b, h, s, d)
    ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float())
    dense = ws.ops.flash_attention(q, k.contiguous(), v.contiguous(), mma="wgmma")
    try:
        out = ws.ops.flash_attention(q, k, v, mma="wgmma")
        torch.cuda.synchronize()
        print(f"broadcast K/V (strides {tuple(k.stride())}) mma=wgmma: max |err| vs SDPA "
              f"{(out.float() - ref).abs().max().item():.3g} (contiguous K/V: "
              f"{(dense.float() - ref).abs().max().item():.3g})")
    except Exception as e:      # report what the GPU path raised, whatever it is
        print(f"broadcast K/V mma=wgmma: {type(e).__name__}: {str(e).splitlines()[0]}")
    out = ws.ops.flash_attention(q, k.contiguous(), v.contiguous(), scale=1e38, mma="wgmma")
    torch.cuda.synchronize()
    print(f"scale=1e38: NaN fraction {out.isnan().float().mean().item():.3f} "
          "(1.000 in the simulator)")
    fa = ws.ops.FlashAttentionWgmma(head_dim=d, tile_n=128)
    buf = torch.full((b * h * 10 + 4096,), 7.0, device=dev, dtype=torch.float32)
    lse = buf[: b * h * 10].view(b, h, 10)
    o = torch.empty_like(q)
    try:
        launch_wgmma(fa, q, k.contiguous(), v.contiguous(), o, lse=lse)
        torch.cuda.synchronize()
        changed = (buf[b * h * 10:] != 7.0).sum().item()
        print(f"lse of shape {tuple(lse.shape)} (S_q = {s}): launched; {changed} of 4096 "
              "floats past it overwritten")
    except Exception as e:      # a host-side check would land here
        print(f"lse of the wrong shape: {type(e).__name__}: {str(e).splitlines()[0]}")


if __name__ == "__main__":
    main()
