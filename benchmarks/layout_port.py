"""The library's kernels before and after their port to ``ws.layout`` (issue 15), timed in one run
on the GPU: the GEMM (``ws.ops.matmul``: bf16 and f32 outputs, a split-K shape) and the wgmma
FlashAttention (``ws.ops.flash_attention``: D 64 and 128, causal or not), each from an old tree
and from this one, in alternating child processes (old, new, old, new) so that clock drift
shows up as a spread rather than as a difference.

    rm -rf bench_old && mkdir bench_old && git archive <old commit> | tar -x -C bench_old
    PYTHONPATH=. python3 benchmarks/layout_port.py --old-tree bench_old/

Each child imports warpstage from its tree (``PYTHONPATH``; its own disk cache, so the second
round does not compile), runs every case once against torch (max |error|: the ported kernels
must agree with the old ones and with torch), then times it: the median of ``--repeats`` CUDA-
event timings of ``--iters`` back-to-back calls on a warmed queue (``gpu_timing``: device time).
Prints a table (the best of the rounds per tree, new / old) and writes ``layout_port.json`` into
``$OUT`` (or a temporary folder). A benchmark, not a test: nothing is asserted.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# name -> (kind, shape, options)
CASES = {
    "gemm 4096^3 bf16": ("mm", (4096, 4096, 4096), {}),
    "gemm 4096^3 -> f32": ("mm", (4096, 4096, 4096), {"out_dtype": "float32"}),
    "gemm 128x8192x8192 (split-K)": ("mm", (128, 8192, 8192), {}),
    "attn D128 S4096": ("fa", (4, 16, 4096, 128), {"causal": False}),
    "attn D128 S4096 causal": ("fa", (4, 16, 4096, 128), {"causal": True}),
    "attn D64 S4096": ("fa", (4, 16, 4096, 64), {"causal": False}),
}


def child(iters: int, repeats: int) -> None:
    """Run in a tree's process: every case checked once, then timed; JSON on the last line."""
    import warnings
    warnings.simplefilter("ignore")
    import torch
    import warpstage as ws
    sys.path.insert(0, HERE)
    from gpu_timing import seconds_per_call
    torch.manual_seed(0)
    out = {"warpstage": os.path.dirname(ws.__file__), "cases": {}}
    for name, (kind, shape, opts) in CASES.items():
        if kind == "mm":
            m, n, k = shape
            a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
            b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
            dt = getattr(torch, opts.get("out_dtype", "bfloat16"))
            fn = lambda a=a, b=b, dt=dt: ws.ops.matmul(a, b, out_dtype=dt)    # noqa: E731
            ref = (a.float() @ b.float())
            scale = k ** 0.5
        else:
            bsz, h, s, d = shape
            q, kk, v = (torch.randn(bsz, h, s, d, device="cuda", dtype=torch.bfloat16)
                        for _ in range(3))
            fn = lambda q=q, kk=kk, v=v, c=opts["causal"]: ws.ops.flash_attention(  # noqa: E731
                q, kk, v, causal=c)
            ref = torch.nn.functional.scaled_dot_product_attention(
                q.float(), kk.float(), v.float(), is_causal=opts["causal"])
            scale = 1.0
        err = float((fn().float() - ref).abs().max()) / scale
        t = seconds_per_call(fn, iters, repeats, warm_queue=True)
        out["cases"][name] = {"seconds": t, "error": err}
    print(json.dumps(out))


def run_tree(tree: str, cache: str, iters: int, repeats: int) -> dict:
    env = dict(os.environ, PYTHONPATH=os.path.abspath(tree), WARPSTAGE_CACHE_DIR=cache)
    r = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", "--iters",
                        str(iters), "--repeats", str(repeats)], env=env, capture_output=True,
                       text=True, timeout=300)
    if r.returncode:
        raise SystemExit(f"child for {tree} failed (rc {r.returncode}):\n{r.stderr[-4000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--old-tree", help="a warpstage source tree from before the port")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--out", default=os.environ.get("OUT") or tempfile.mkdtemp())
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        return child(args.iters, args.repeats)
    if not args.old_tree:
        raise SystemExit("--old-tree is required (see the module docstring)")
    os.makedirs(args.out, exist_ok=True)
    trees = {"old": args.old_tree, "new": ROOT}
    caches = {k: tempfile.mkdtemp(prefix=f"ws-cache-{k}-") for k in trees}
    runs = {k: [] for k in trees}
    for _ in range(args.rounds):
        for k in ("old", "new"):
            runs[k].append(run_tree(trees[k], caches[k], args.iters, args.repeats))
            print(f"{k}: {runs[k][-1]['warpstage']}", flush=True)
    with open(os.path.join(args.out, "layout_port.json"), "w") as f:
        json.dump(runs, f, indent=1)
    print(f"\n{'case':32s} {'old us':>9s} {'new us':>9s} {'new/old':>8s} {'spread':>7s} "
          f"{'err old':>8s} {'err new':>8s}")
    for name in CASES:
        t = {k: [r["cases"][name]["seconds"] * 1e6 for r in runs[k]] for k in trees}
        e = {k: max(r["cases"][name]["error"] for r in runs[k]) for k in trees}
        spread = max(max(v) / min(v) - 1 for v in t.values())
        print(f"{name:32s} {min(t['old']):9.1f} {min(t['new']):9.1f} "
              f"{min(t['new']) / min(t['old']):8.3f} {spread:7.1%} {e['old']:8.2g} "
              f"{e['new']:8.2g}")


if __name__ == "__main__":
    main()
