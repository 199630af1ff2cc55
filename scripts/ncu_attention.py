"""Run one attention forward a few times so Nsight Compute can profile one launch of it.

    ncu --clock-control none -k regex:flash_attention --launch-skip 2 --launch-count 1 \
        --set full --import-source no -o OUT/ws_d128 \
        python3 scripts/ncu_attention.py --impl warpstage --shape 2,16,8192,128
    ncu --import OUT/ws_d128.ncu-rep --page source --csv --print-source sass > OUT/ws_d128_sass.csv

``--impl warpstage`` calls the public ``ws.ops.flash_attention`` (the wgmma kernel, its default
policy for the shape); ``--impl fa4`` FlashAttention-4's ``flash_attn.cute.flash_attn_func``
where it imports (its kernel's name holds ``flash`` too: filter with ``-k regex:Sm90`` or
``regex:kernel``). bf16 inputs, (B, H, S, D) for warpstage and (B, S, H, D) for FA4. The calls
before the profiled launch compile the kernel and warm the caches; the script synchronizes after
each call. Nothing is timed here: ncu's figures are what this is for (per-SASS-instruction
warp-state samples, the stall reasons, issue-slot use), read on the CPU from the CSV.
"""
from __future__ import annotations

import argparse
import sys


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--impl", choices=("warpstage", "fa4"), default="warpstage")
    ap.add_argument("--shape", default="2,16,8192,128", help="B,H,S,D (default 2,16,8192,128)")
    ap.add_argument("--causal", action="store_true")
    ap.add_argument("--calls", type=int, default=4, help="calls in all (default 4)")
    args = ap.parse_args(argv)
    try:
        b, h, s, d = (int(x) for x in args.shape.split(","))
    except ValueError:
        ap.error(f"--shape takes B,H,S,D as four integers, got {args.shape!r}")
    import torch
    g = torch.Generator(device="cuda").manual_seed(0)
    q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16, generator=g)
               for _ in range(3))
    if args.impl == "warpstage":
        import warpstage as ws

        def run():
            return ws.ops.flash_attention(q, k, v, causal=args.causal, mma="wgmma")
    else:
        from flash_attn.cute import flash_attn_func
        qt, kt, vt = (x.transpose(1, 2).contiguous() for x in (q, k, v))

        def run():
            return flash_attn_func(qt, kt, vt, causal=args.causal)
    for _ in range(args.calls):
        run()
        torch.cuda.synchronize()
    print(f"{args.impl} {args.shape} causal={args.causal}: {args.calls} calls done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
