"""GPU A/B of code-generation options (``CompileOptions.llvm_pipeline`` by default): the default
wgmma FlashAttention kernels (the policy ``ws.ops.flash_attention`` picks for each shape) built
with LLVM's default pipeline and with the light one, or with other option sets, timed in turns (device time, CUDA events with a warmed queue), with each
kernel's max error against SDPA in float32 and its cold compile's stages.

    PYTHONPATH=. python3 benchmarks/llvm_pipeline_ab.py [--rows "128,0,4,16,4096;..."] \
        [--rounds 15] [--iters 20] [--variants "default;light:llvm_pipeline='light'"]

A variant is a name, then optionally ``:`` and compile options ``field=value`` (Python
literals, comma-separated); the first variant is the baseline every ratio divides by, e.g.
``--variants "default;ptxas1:ptxas_opt_level=1"`` for ptxas -O1 alone.

A row is D, causal (0/1), B, H, S, then optional policy fields ``name=value`` (Python literals;
e.g. ``shared_boundary=True``) over the default policy's. Each round times every pipeline once per row (``iters``
calls), the order alternating; printed per row: TFLOP/s median and 25th-75th percentile over
the rounds, the ratio light/default, the error, registers and the compile's stages (ms, wall;
each kernel compiled once, cold: the disk cache is a fresh folder; the first row's first
kernel also pays the process's one-time costs, so compare compile stages in
``compile_time.py``'s rows).
"""
from __future__ import annotations

import argparse
import ast
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

ROWS = ("128,0,4,16,4096;128,0,8,16,1024;64,0,4,16,4096;64,0,8,16,1024;128,1,4,16,4096;"
        "128,0,8,16,1024,shared_boundary=True")
VARIANTS = "default;light:llvm_pipeline='light'"


def _variants(text):
    """{name: {option: value}} from ``name[:field=value,...];...``, in order; each option set
    checked by ``CompileOptions`` (a wrong field or value fails here, before torch loads).
    Raises SystemExit naming the part that is wrong."""
    from warpstage.options import CompileOptions
    out = {}
    for part in text.split(";"):
        name, _, opts = part.partition(":")
        name = name.strip()
        if not name or name in out:
            raise SystemExit(f"--variants: {'an empty' if not name else 'a repeated'} variant "
                             f"name in {part!r} (of {text!r}); expected name[:field=value,...] "
                             "joined by ';', each name once")
        fields = {}
        for o in (o for o in opts.split(",") if o.strip()):
            field, eq, value = o.partition("=")
            try:
                if not eq:
                    raise ValueError("no '='")
                fields[field.strip()] = ast.literal_eval(value.strip())
            except (ValueError, SyntaxError) as e:
                raise SystemExit(f"--variants: {o!r} in variant {name!r} is not field=value with "
                                 f"a Python literal ({e}); e.g. llvm_pipeline='light' (quoted), "
                                 "ptxas_opt_level=1") from None
        try:
            CompileOptions().with_(**fields)
        except Exception as e:  # noqa: BLE001 - ArgumentError / OperandError: say which variant
            raise SystemExit(f"--variants: variant {name!r}: {e}") from None
        out[name] = fields
    return out


def _kernels(variants):
    import warpstage as ws
    from warpstage.ops.attention_wgmma import flash_attention_wgmma_kernel as base
    return {name: ws.kernel(max_specializations=64, **opts)(base.fn)
            for name, opts in variants.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", default=ROWS, help="D,causal,B,H,S[,field=value...] joined by ';'")
    ap.add_argument("--rounds", type=int, default=15, help="rounds of every variant per row")
    ap.add_argument("--iters", type=int, default=20, help="calls per timing")
    ap.add_argument("--variants", default=VARIANTS,
                    help="name[:option=value,...] joined by ';'; the first is the baseline")
    args = ap.parse_args()
    variants = _variants(args.variants)
    names = tuple(variants)
    os.environ["WARPSTAGE_CACHE_DIR"] = tempfile.mkdtemp(prefix="ws-llvm15-")   # cold compiles
    import torch
    import torch.nn.functional as F
    from attention import _launcher, error, flops, inputs
    from gpu_timing import seconds_per_call
    from warpstage.ops import attention_plan
    kernels = _kernels(variants)
    for row in args.rows.split(";"):
        parts = row.split(",")
        d, causal, b, h, s = (int(x) for x in parts[:5])
        fields = tuple(sorted((name, ast.literal_eval(value))
                              for name, value in (p.split("=") for p in parts[5:])))
        causal = bool(causal)
        fa = attention_plan.wgmma_policy_for(d, "BFloat16", causal, d ** -0.5,
                                             short=attention_plan.is_short(s, d, causal),
                                             overrides=fields)
        q, k, v = inputs(b, h, s, d)
        ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal)
        runs, facts = {}, {}
        for p, kern in kernels.items():
            o = torch.full_like(q, float("nan"))
            run = _launcher(fa, q, k, v, o, kern)
            run()
            torch.cuda.synchronize()
            ck = kern._cache[kern._cache.keys[-1]]           # this row's specialization
            regs = getattr(ck.resources, "registers", "?") if ck.resources else "?"
            facts[p] = (error(o, ref), regs, dict(ck.timings))
            runs[p] = run
        times = {p: [] for p in runs}
        for r in range(args.rounds):
            for p in (names if r % 2 == 0 else names[::-1]):
                times[p].append(seconds_per_call(runs[p], args.iters, 1, warm_queue=True))
        f = flops(b, h, s, s, d, causal)
        med = {}
        short = attention_plan.is_short(s, d, causal)
        print(f"D={d} causal={causal} B={b} H={h} S={s} ({args.rounds} rounds x {args.iters} "
              f"calls, interleaved; the default policy, short={short}, {dict(fields)})")
        for p in names:
            tf = sorted(f / t / 1e12 for t in times[p])
            med[p] = statistics.median(tf)
            err, regs, stages = facts[p]
            st = " ".join(f"{k} {1e3 * v:.0f}" for k, v in stages.items())
            q1, q3 = tf[len(tf) // 4], tf[len(tf) * 3 // 4]
            print(f"  {p:8s} {med[p]:6.1f} TFLOP/s [{q1:6.1f}-{q3:6.1f}]  err {err:.2e}  "
                  f"registers {regs}  compile ms: {st}")
        for p in names[1:]:
            print(f"  {p} / {names[0]}: {med[p] / med[names[0]]:.4f}")
        del q, k, v, ref
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
