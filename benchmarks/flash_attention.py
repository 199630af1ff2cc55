"""FlashAttention forward: warpstage's two kernels, ``warpstage/ops/attention_kernel.py``
(mma.sync, FlashAttention-2 style) and ``warpstage/ops/attention_wgmma.py`` (wgmma + TMA,
FlashAttention-3 style), against ``torch.nn.functional.scaled_dot_product_attention`` in the same
process (GPU only).

    PYTHONPATH=. python benchmarks/flash_attention.py            # the full table
    PYTHONPATH=. python benchmarks/flash_attention.py --quick    # B=2, H=8, S=1024 only
    PYTHONPATH=. python benchmarks/flash_attention.py --quick --policy tile_n=64,num_stages=3
    PYTHONPATH=. python benchmarks/flash_attention.py --shape 2,16,4096 --head-dim 128
    PYTHONPATH=. python benchmarks/flash_attention.py --quick --kernels wgmma \
        --wgmma-policy tile_n=176 --wgmma-policy overlap=0

For each shape (B, H, S, D), causal or not, bf16: the max |error| against SDPA in float32, then
the median over ``--repeats`` timings of ``--iters`` back-to-back launches each (CUDA events,
after a warm-up) for each warpstage kernel and for SDPA. TFLOP/s = 4 B H S^2 D / t, half of that
with ``causal`` (the masked half is not counted). ``--policy`` (repeatable) overrides the default
``FlashAttention`` fields (tile_m, tile_n, num_stages, producer_regs, mma_regs) and
``--wgmma-policy`` the ``FlashAttentionWgmma`` ones (tile_n, num_stages, producer_regs,
mma_regs, overlap) to compare tilings; ``--kernels`` picks which kernels run. The kernels are
launched directly (descriptors built once), so host overhead is the launch's only. A benchmark,
not a test: nothing is asserted.
"""
from __future__ import annotations

import argparse
import os
import sys
import warnings

from gpu_timing import seconds_per_call   # benchmarks/ is on sys.path when run as a script

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FULL = [(2, 16, 1024), (4, 16, 2048), (2, 16, 4096), (2, 8, 8192)]     # (B, H, S)
QUICK = [(2, 8, 1024)]


def parse_policy(text: str) -> dict:
    fields = {}
    for item in filter(None, text.split(",")):
        key, value = item.split("=")
        fields[key.strip()] = int(value)
    return fields


def inputs(batch, heads, seq, head_dim):
    import torch
    g = torch.Generator(device="cuda").manual_seed(0)
    return [torch.randn(batch, heads, seq, head_dim, device="cuda", generator=g)
            .to(torch.bfloat16) for _ in range(3)]


def measure(kernel, q, k, v, causal, policy, iters, repeats):
    """(max error against SDPA in float32, seconds) of one warpstage kernel and policy."""
    import torch
    import torch.nn.functional as F
    import warpstage as ws
    from warpstage.ops import FlashAttention, flash_attention_kernel
    from warpstage.ops.attention_wgmma import FlashAttentionWgmma, flash_attention_wgmma_kernel
    batch, heads, seq, head_dim = q.shape
    o = torch.empty_like(q)
    if kernel == "wgmma":
        fa = FlashAttentionWgmma(head_dim=head_dim, dtype=ws.BFloat16, causal=causal, **policy)
        q_box, kv_box = fa.descriptor_boxes()
        descs = [ws.tma.TensorDescriptor(x, box, swizzle=128)
                 for x, box in ((q, q_box), (k, kv_box), (v, kv_box))]
        o_desc = (ws.tma.TensorDescriptor(o, fa.o_box, swizzle=fa.out.swizzle)
                  if fa.tma_store else None)
        sms = torch.cuda.get_device_properties(q.device).multi_processor_count
        launch = flash_attention_wgmma_kernel[fa.grid(batch, heads, seq, sms=sms), fa.threads]

        def ours():
            launch(fa, *descs, o, seq, None, o_desc)
    else:
        fa = FlashAttention(head_dim=head_dim, dtype=ws.BFloat16, causal=causal, **policy)
        launch = flash_attention_kernel[fa.grid(batch, heads, seq), fa.threads]

        def ours():
            launch(fa, q, k, v, o)

    ours()
    ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal)
    err = (o.float() - ref).abs().max().item()
    return err, seconds_per_call(ours, iters, repeats)


def measure_sdpa(q, k, v, causal, iters, repeats):
    import torch.nn.functional as F
    return seconds_per_call(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal), iters,
                 repeats)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="only B=2, H=8, S=1024")
    ap.add_argument("--shape", action="append", default=None,
                    help="B,H,S instead of the built-in shapes (repeatable)")
    ap.add_argument("--head-dim", type=int, action="append", help="64 and/or 128 (default both)")
    ap.add_argument("--causal", choices=("no", "yes", "both"), default="both")
    ap.add_argument("--policy", action="append", default=None,
                    help="FlashAttention fields, e.g. tile_n=64,num_stages=3 (repeatable)")
    ap.add_argument("--wgmma-policy", action="append", default=None,
                    help="FlashAttentionWgmma fields, e.g. tile_n=176,overlap=0 (repeatable)")
    ap.add_argument("--kernels", choices=("both", "wgmma", "mma.sync"), default="both")
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)
    sys.path.insert(0, ROOT)
    try:
        import torch
    except ImportError:
        torch = None
    if torch is None or not torch.cuda.is_available():
        print("flash_attention benchmark: no usable CUDA GPU (and torch); nothing measured")
        return 0
    import warpstage as ws
    ws.set_target("cuda")
    warnings.simplefilter("ignore", ws.RecompileWarning)     # one kernel per policy, by design
    shapes = QUICK if args.quick else FULL
    if args.shape:
        shapes = [tuple(int(x) for x in shape.split(",")) for shape in args.shape]
    dims = args.head_dim or [64, 128]
    causals = {"no": [False], "yes": [True], "both": [False, True]}[args.causal]
    runs = []
    if args.kernels in ("both", "mma.sync"):
        runs += [("mma.sync", parse_policy(p)) for p in (args.policy or [""])]
    if args.kernels in ("both", "wgmma"):
        runs += [("wgmma", parse_policy(p)) for p in (args.wgmma_policy or [""])]
    print(f"# {torch.cuda.get_device_name()}, bf16, medians of {args.repeats} x {args.iters} "
          "launches")
    print("| B | H | S | D | causal | kernel | policy | max err | warpstage TFLOP/s (ms) | "
          "SDPA TFLOP/s (ms) | ratio |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for batch, heads, seq in shapes:
        for head_dim in dims:
            q, k, v = inputs(batch, heads, seq, head_dim)
            for causal in causals:
                sdpa = measure_sdpa(q, k, v, causal, args.iters, args.repeats)
                flops = 4 * batch * heads * seq * seq * head_dim / (2 if causal else 1)
                for kernel, policy in runs:
                    err, ours = measure(kernel, q, k, v, causal, policy, args.iters,
                                        args.repeats)
                    name = ",".join(f"{key}={val}" for key, val in policy.items()) or "default"
                    print(f"| {batch} | {heads} | {seq} | {head_dim} | {causal} | {kernel} | "
                          f"{name} | {err:.2g} | {flops / ours / 1e12:.1f} ({ours * 1e3:.3f}) | "
                          f"{flops / sdpa / 1e12:.1f} ({sdpa * 1e3:.3f}) | {sdpa / ours:.2f} |",
                          flush=True)


if __name__ == "__main__":
    main()
