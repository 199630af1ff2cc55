"""FlashAttention forward: warpstage's kernel (``warpstage/ops/attention_kernel.py``, mma.sync)
against ``torch.nn.functional.scaled_dot_product_attention`` in the same process (GPU only).

    PYTHONPATH=. python benchmarks/flash_attention.py            # the full table
    PYTHONPATH=. python benchmarks/flash_attention.py --quick    # B=2, H=8, S=1024 only
    PYTHONPATH=. python benchmarks/flash_attention.py --quick --policy tile_n=64,num_stages=3
    PYTHONPATH=. python benchmarks/flash_attention.py --shape 2,16,4096 --head-dim 128

For each shape (B, H, S, D), causal or not, bf16: the max |error| against SDPA in float32, then
the median over ``--repeats`` timings of ``--iters`` back-to-back launches each (CUDA events,
after a warm-up) for warpstage and for SDPA. TFLOP/s = 4 B H S^2 D / t, half of that with
``causal`` (the masked half is not counted). ``--policy`` (repeatable) overrides the default
``FlashAttention`` fields (tile_m, tile_n, num_stages, producer_regs, mma_regs) to compare
tilings. A benchmark, not a test: nothing is asserted.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FULL = [(2, 16, 1024), (4, 16, 2048), (2, 16, 4096), (2, 8, 8192)]     # (B, H, S)
QUICK = [(2, 8, 1024)]


def parse_policy(text: str) -> dict:
    fields = {}
    for item in filter(None, text.split(",")):
        key, value = item.split("=")
        fields[key.strip()] = int(value)
    return fields


def timed(fn, iters: int, repeats: int) -> float:
    """Median seconds per call of ``fn`` over ``repeats`` runs of ``iters`` calls."""
    import torch
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1e3 / iters)
    return statistics.median(times)


def measure(batch, heads, seq, head_dim, causal, policy, iters, repeats):
    """(max error, warpstage seconds, SDPA seconds) for one shape and policy."""
    import torch
    import torch.nn.functional as F
    import warpstage as ws
    from warpstage.ops import FlashAttention, flash_attention_kernel
    g = torch.Generator(device="cuda").manual_seed(0)
    q, k, v = (torch.randn(batch, heads, seq, head_dim, device="cuda", generator=g)
               .to(torch.bfloat16) for _ in range(3))
    o = torch.empty_like(q)
    fa = FlashAttention(head_dim=head_dim, dtype=ws.BFloat16, causal=causal, **policy)
    launch = flash_attention_kernel[fa.grid(batch, heads, seq), fa.threads]

    def ours():
        launch(fa, q, k, v, o)

    ours()
    ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal)
    err = (o.float() - ref).abs().max().item()
    t_ours = timed(ours, iters, repeats)
    t_sdpa = timed(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal), iters,
                   repeats)
    return err, t_ours, t_sdpa


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="only B=2, H=8, S=1024")
    ap.add_argument("--shape", action="append", default=None,
                    help="B,H,S instead of the built-in shapes (repeatable)")
    ap.add_argument("--head-dim", type=int, action="append", help="64 and/or 128 (default both)")
    ap.add_argument("--causal", choices=("no", "yes", "both"), default="both")
    ap.add_argument("--policy", action="append", default=None,
                    help="FlashAttention fields, e.g. tile_n=64,num_stages=3 (repeatable)")
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)
    sys.path.insert(0, ROOT)
    import torch
    import warpstage as ws
    ws.set_target("cuda")
    warnings.simplefilter("ignore", ws.RecompileWarning)     # one kernel per policy, by design
    shapes = QUICK if args.quick else FULL
    if args.shape:
        shapes = [tuple(int(x) for x in shape.split(",")) for shape in args.shape]
    dims = args.head_dim or [64, 128]
    causals = {"no": [False], "yes": [True], "both": [False, True]}[args.causal]
    policies = [parse_policy(p) for p in (args.policy or [""])]
    print(f"# {torch.cuda.get_device_name()}, bf16, medians of {args.repeats} x {args.iters} "
          "launches")
    print("| B | H | S | D | causal | policy | max err | warpstage TFLOP/s (ms) | "
          "SDPA TFLOP/s (ms) | ratio |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for batch, heads, seq in shapes:
        for head_dim in dims:
            for causal in causals:
                for policy in policies:
                    err, ours, sdpa = measure(batch, heads, seq, head_dim, causal, policy,
                                              args.iters, args.repeats)
                    flops = 4 * batch * heads * seq * seq * head_dim / (2 if causal else 1)
                    name = ",".join(f"{k}={v}" for k, v in policy.items()) or "default"
                    print(f"| {batch} | {heads} | {seq} | {head_dim} | {causal} | {name} | "
                          f"{err:.2g} | {flops / ours / 1e12:.1f} ({ours * 1e3:.3f}) | "
                          f"{flops / sdpa / 1e12:.1f} ({sdpa * 1e3:.3f}) | {sdpa / ours:.2f} |",
                          flush=True)


if __name__ == "__main__":
    main()
