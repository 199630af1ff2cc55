"""GPU A/B of ``CompileOptions.llvm_pipeline``: the default wgmma FlashAttention kernels (the
policy ``ws.ops.flash_attention`` picks for each shape) built with LLVM's default pipeline and
with the light one, timed in turns (device time, CUDA events with a warmed queue), with each
kernel's max error against SDPA in float32 and its cold compile's stages.

    PYTHONPATH=. python3 benchmarks/llvm_pipeline_ab.py [--rows "128,0,4,16,4096;..."] \
        [--rounds 15] [--iters 20]

A row is D, causal (0/1), B, H, S. Each round times every pipeline once per row (``iters``
calls), the order alternating; printed per row: TFLOP/s median and 25th-75th percentile over
the rounds, the ratio light/default, the error, registers and the compile's stages (ms, wall;
each kernel compiled once, cold: the disk cache is a fresh folder).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

ROWS = "128,0,4,16,4096;128,0,8,16,1024;64,0,4,16,4096;64,0,8,16,1024;128,1,4,16,4096"
PIPELINES = ("default", "light")


def _kernels():
    import warpstage as ws
    from warpstage.ops.attention_wgmma import flash_attention_wgmma_kernel as base
    return {p: ws.kernel(llvm_pipeline=p, max_specializations=64)(base.fn) for p in PIPELINES}


def _launcher(kern, fa, q, k, v, o):
    import torch
    import warpstage as ws
    b, h, s, _ = q.shape
    q_box, kv_box = fa.descriptor_boxes()
    descs = [ws.tma.TensorDescriptor(x, box, swizzle=fa.swizzle)
             for x, box in ((q, q_box), (k, kv_box), (v, kv_box))]
    sms = torch.cuda.get_device_properties(q.device).multi_processor_count
    launch = kern[fa.grid(b, h, s, sms=sms), fa.threads]
    o_desc = (ws.tma.TensorDescriptor(o, fa.o_box, swizzle=fa.out.swizzle) if fa.tma_store
              else None)
    tiles = torch.zeros(2, dtype=torch.int32, device=q.device) if fa.dynamic_tiles else None
    return lambda: launch(fa, *descs, o, k.shape[2], None, o_desc, tiles)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", default=ROWS)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--iters", type=int, default=20)
    args = ap.parse_args()
    os.environ.setdefault("WARPSTAGE_CACHE_DIR", tempfile.mkdtemp(prefix="ws-llvm15-"))
    import torch
    import torch.nn.functional as F
    from attention import error, flops, inputs
    from gpu_timing import seconds_per_call
    from warpstage.ops import attention_plan
    kernels = _kernels()
    for row in args.rows.split(";"):
        d, causal, b, h, s = (int(x) for x in row.split(","))
        causal = bool(causal)
        fa = attention_plan.wgmma_policy_for(d, "BFloat16", causal, d ** -0.5,
                                             short=attention_plan.is_short(s, d, causal))
        q, k, v = inputs(b, h, s, d)
        ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal)
        runs, facts = {}, {}
        for p, kern in kernels.items():
            o = torch.full_like(q, float("nan"))
            run = _launcher(kern, fa, q, k, v, o)
            run()
            torch.cuda.synchronize()
            ck = kern._cache[kern._cache.keys[-1]]           # this row's specialization
            regs = getattr(ck.resources, "registers", "?") if ck.resources else "?"
            facts[p] = (error(o, ref), regs, dict(ck.timings))
            runs[p] = run
        times = {p: [] for p in runs}
        for r in range(args.rounds):
            for p in (PIPELINES if r % 2 == 0 else PIPELINES[::-1]):
                times[p].append(seconds_per_call(runs[p], args.iters, 1, warm_queue=True))
        f = flops(b, h, s, s, d, causal)
        med = {}
        print(f"D={d} causal={causal} B={b} H={h} S={s} ({args.rounds} rounds x {args.iters} "
              f"calls, interleaved; policy {type(fa).__name__} short={attention_plan.is_short(s, d, causal)})")
        for p in PIPELINES:
            tf = sorted(f / t / 1e12 for t in times[p])
            med[p] = statistics.median(tf)
            err, regs, stages = facts[p]
            st = " ".join(f"{k} {1e3 * v:.0f}" for k, v in stages.items())
            print(f"  {p:8s} {med[p]:6.1f} TFLOP/s [{tf[len(tf) // 4]:6.1f}-{tf[len(tf) * 3 // 4]:6.1f}]"
                  f"  err {err:.2e}  registers {regs}  compile ms: {st}")
        print(f"  light / default: {med['light'] / med['default']:.4f}")
        del q, k, v, ref
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
