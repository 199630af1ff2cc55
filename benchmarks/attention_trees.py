"""Device-time A/B of ``ws.ops.flash_attention`` between two source trees, rounds interleaved.

Why: a change to the compiler that changes the PTX but not the kernel's source (the backend's
lowering, a pass) is judged by the kernels' speed in both trees; one process cannot import two
warpstages, so each round runs one fresh process per tree, in turns (each tree's disk cache of
its own, so later rounds reuse the first round's compiles). Each process times every
configuration (CUDA events, device time with a warmed queue, ``gpu_timing``) and checks its
output against torch's SDPA in fp32 (max abs error). The summary gives per configuration the
median over rounds of each tree and the ratio.

    python3 benchmarks/attention_trees.py --trees base14b,. --rounds 3 [--cache DIR]

Configurations (12): mma 'wgmma' (the default kernel; causal or not) and 'mma.sync' (not
causal), D = 64 and 128, at (B, H, S) = (4, 16, 4096) and (8, 16, 1024), bf16.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

CONFIGS = [(mma, d, causal, shape) for mma in ("wgmma", "mma.sync") for d in (64, 128)
           for causal in ((False, True) if mma == "wgmma" else (False,))
           for shape in ((4, 16, 4096), (8, 16, 1024))]

CHILD = r"""
import json, os, sys
sys.path.insert(0, os.getcwd())
sys.path.insert(1, BENCH)
import torch
import warpstage as ws
from gpu_timing import seconds_per_call
out = {}
for mma, d, causal, (b, h, s) in CONFIGS:
    g = torch.Generator(device="cuda").manual_seed(0)
    q, k, v = (torch.randn(b, h, s, d, device="cuda", generator=g).to(torch.bfloat16)
               for _ in range(3))
    run = lambda: ws.ops.flash_attention(q, k, v, causal=causal, mma=mma)
    ref = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(),
                                                           is_causal=causal)
    err = (run().float() - ref).abs().max().item()
    t = seconds_per_call(run, 50, 5, warm_queue=True)
    out[f"{mma} D={d} causal={int(causal)} {b}x{h}x{s}"] = (t, err)
print("RESULT " + json.dumps(out))
"""


def run_tree(tree: str, cache: str, configs=CONFIGS) -> dict:
    code = (f"BENCH = {os.path.dirname(os.path.abspath(__file__))!r}\n"
            f"CONFIGS = {configs!r}\n" + CHILD)
    env = dict(os.environ, PYTHONPATH=os.path.abspath(tree), WARPSTAGE_CACHE_DIR=cache)
    p = subprocess.run([sys.executable, "-c", code], cwd=tree, env=env, capture_output=True,
                       text=True, timeout=240)
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError(f"{tree}: {(p.stderr.strip().splitlines() or ['?'])[-1]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trees", default="base14b,.")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cache", default="/tmp", help="folder for the trees' disk caches")
    ap.add_argument("--only", default="",
                    help="comma-separated mma:D pairs to keep (e.g. wgmma:64); default all")
    ap.add_argument("--shapes", default="",
                    help="B,H,S;... in place of the default shapes")
    args = ap.parse_args()
    configs = CONFIGS
    if args.shapes:
        shapes = [tuple(int(x) for x in sh.split(",")) for sh in args.shapes.split(";")]
        configs = sorted({(m, d, c, sh) for m, d, c, _ in configs for sh in shapes})
    if args.only:
        keep = {(m, int(d)) for m, d in (pair.split(":") for pair in args.only.split(","))}
        configs = [cfg for cfg in configs if (cfg[0], cfg[1]) in keep]
    trees = args.trees.split(",")
    cache_root = args.cache
    got = {t: [] for t in trees}
    for r in range(args.rounds):
        for t in (trees if r % 2 == 0 else trees[::-1]):
            label = t.strip("./").replace("/", "_") or "here"
            cache = os.path.join(cache_root, f"ws-cache-ab-{label}")
            got[t].append(run_tree(t, cache, configs))
            print(f"round {r + 1}: {t} done", flush=True)
    print(f"{'configuration':34} " + " ".join(f"{t + ' us':>12}" for t in trees)
          + f" {'ratio':>7} " + " ".join(f"{t + ' err':>10}" for t in trees))
    for name in got[trees[0]][0]:
        med = [statistics.median(run[name][0] for run in got[t]) for t in trees]
        err = [max(run[name][1] for run in got[t]) for t in trees]
        print(f"{name:34} " + " ".join(f"{1e6 * m:12.1f}" for m in med)
              + f" {med[-1] / med[0]:7.3f} " + " ".join(f"{e:10.4f}" for e in err))


if __name__ == "__main__":
    main()
