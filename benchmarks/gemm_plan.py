"""The small-M GEMM plan against what it chooses from: at M in {64, 128, 256} x the LLM weights
(N, K) in {(4096, 4096), (11008, 4096), (4096, 11008), (128256, 4096)} (B = W.T of an (N, K)
nn.Linear weight), warpstage's kernel under each candidate tile rows x width x K splits, the
policy ``ws.ops.matmul`` plans (``warpstage/ops/matmul_plan.py``) and cuBLAS
(``torch.matmul``), all in device time (a warmed queue: benchmarks/gpu_timing.py), bf16 in and
out. Per row also the plan's own estimate, to check the model it was fitted with.

    PYTHONPATH=. python benchmarks/gemm_plan.py [--iters 10] [--repeats 3] [--shape M,N,K ...]

Columns: TFLOP/s per candidate ``{rows}x{cols}/s{splits}``, ``plan`` (its choice in brackets),
``est`` (the plan's estimate for its choice), cuBLAS, then best / cuBLAS and plan / cuBLAS.
Writes ``$OUT/gemm_plan.md``. A benchmark: nothing is asserted.
"""
from __future__ import annotations

import argparse
import os
import sys

from gpu_timing import seconds_per_call   # benchmarks/ is on sys.path when run as a script

SHAPES = [(m, n, k) for n, k in ((4096, 4096), (11008, 4096), (4096, 11008), (128256, 4096))
          for m in (64, 128, 256)]
CANDIDATES = [(64, 128, 1), (64, 128, 2), (64, 128, 4), (128, 128, 1), (128, 128, 2),
              (64, 256, 1), (128, 256, 1), (128, 256, 4), (64, 64, 1), (128, 64, 1),
              (128, 192, 1), (64, 192, 1)]
"""(tile_m, tile_n, splits): the plan's default widths (256, 128) with and without splits, and
64 wide (not in the plan until measured)."""


def name(c) -> str:
    return f"{c[0]}x{c[1]}/s{c[2]}"


def measure(m, n, k, iters, repeats) -> dict:
    import torch
    from gemm import attempt, input_sets, kernel_runner, rotating
    from warpstage.ops import matmul_host
    from warpstage.ops.matmul_plan import estimate_us
    sets = input_sets(m, n, k, True)
    flops = 2 * m * n * k
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    tm, tn, _, sp = matmul_host.choose_config(m, n, k, 1, sms)
    row = {"shape": (m, n, k), "choice": (tm, tn, sp),
           "est": flops / estimate_us(m, n, k, 1, sms, tm, tn, sp) / 1e6}

    def timed(make):
        return flops / seconds_per_call(rotating(make, sets), iters, repeats,
                                        warm_queue=True) / 1e12
    for c in CANDIDATES + ["plan"]:
        fields = None if c == "plan" else dict(tile_m=c[0], tile_n=c[1], splits=c[2])
        attempt(row, c if c == "plan" else name(c), lambda: timed(
            lambda a, b, out: kernel_runner(a, b, out, fields)[0]), f"{m}x{n}x{k}", 200)
    row["cuBLAS"] = timed(lambda a, b, out: (lambda: torch.matmul(a, b, out=out)))
    del sets
    torch.cuda.empty_cache()
    return row


def table(rows) -> str:
    from tables import figure, markdown, ratio
    cols = [name(c) for c in CANDIDATES]
    out = []
    for r in rows:
        best = max((r[c] for c in cols + ["plan"] if r.get(c)), default=None)
        out.append(["x".join(map(str, r["shape"]))] + [figure(r.get(c)) for c in cols]
                   + [f"{figure(r.get('plan'))} [{name(r['choice'])}]", figure(r["est"]),
                      figure(r.get("cuBLAS")), ratio(best, r.get("cuBLAS")),
                      ratio(r.get("plan"), r.get("cuBLAS"))])
    return markdown(["M x N x K"] + cols + ["plan [choice]", "est", "cuBLAS", "best / cuBLAS",
                                            "plan / cuBLAS"], out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--shape", action="append", default=[], help="M,N,K (repeatable)")
    args = ap.parse_args(argv)
    shapes = [tuple(int(v) for v in s.split(",")) for s in args.shape] or SHAPES
    rows = []
    for s in shapes:
        rows.append(measure(*s, args.iters, args.repeats))
        print(table(rows[-1:]).splitlines()[-1], flush=True)     # as it comes
    text = table(rows)
    with open(os.path.join(os.environ.get("OUT") or "/tmp", "gemm_plan.md"), "w") as f:
        f.write(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.exit(main())
