"""Thread-block clusters with TMA multicast in warpstage's GEMM: device-time TFLOP/s of the
kernel launched directly with ``cluster=(1, 1)``, ``(2, 1)`` (M-adjacent tiles share B) and
``(1, 2)`` (N-adjacent tiles share A), beside cuBLAS (``torch.matmul``), bf16 at 4096^3 and
8192^3 (B N-major and K-major), the policy otherwise the one ``ws.ops.matmul`` picks
(``gemm.kernel_runner``).

Timing as benchmarks/gemm.py: CUDA events around back-to-back calls with the queue kept full
(``gpu_timing.seconds_per_call(warm_queue=True)``: device time), inputs rotated over copies
that exceed L2. Run from the repo root: ``PYTHONPATH=. python3 benchmarks/gemm_cluster.py``;
prints a markdown table last and writes it to ``$OUT/gemm_cluster.md``.
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gemm import input_sets, kernel_runner, rotating   # noqa: E402
from gpu_timing import seconds_per_call  # noqa: E402

CLUSTERS = ((1, 1), (2, 1), (1, 2))
SHAPES = ((4096, 4096, 4096), (8192, 8192, 8192))


def measure(m, n, k, b_kmajor, iters, repeats):
    import torch
    sets = input_sets(m, n, k, b_kmajor)
    a, b, c = sets[0]
    ref = torch.matmul(a.float(), b.float())
    scale = float(ref.abs().max()) or 1.0
    flops = 2 * m * n * k
    row = {"shape": (m, n, k), "B": "K-major" if b_kmajor else "N-major"}
    makes = {str(cl): (lambda cl: lambda a, b, c: kernel_runner(a, b, c, {"cluster": cl})[0])(cl)
             for cl in CLUSTERS}
    makes["cuBLAS"] = lambda a, b, c: (lambda: torch.matmul(a, b, out=c))
    for name, make in makes.items():
        try:
            c.fill_(float("nan"))
            make(a, b, c)()
            err = float((c.float() - ref).abs().max()) / scale
            t = seconds_per_call(rotating(make, sets), iters, repeats, warm_queue=True)
            row[name] = (flops / t / 1e12, err)
        except Exception as e:                # a benchmark reports, it does not stop
            print(f"  {name} at {m}x{n}x{k}: {type(e).__name__}: {str(e)[:300]}", flush=True)
            row[name] = None
    del sets
    torch.cuda.empty_cache()
    return row


def table(rows) -> str:
    names = [str(c) for c in CLUSTERS] + ["cuBLAS"]
    lines = ["| M x N x K | B | " + " | ".join(f"cluster {n}" if n != "cuBLAS" else n
                                               for n in names)
             + " | best cluster / (1, 1) | (1, 1) / cuBLAS | max err |",
             "|---|---|" + "---|" * (len(names) + 3)]
    for r in rows:
        vals = [r.get(n) for n in names]
        cells = [f"{v[0]:.0f}" if v else "-" for v in vals]
        base = r.get("(1, 1)")
        best = max((r[n][0] for n in names[1:3] if r.get(n)), default=None)
        gain = f"{best / base[0]:.3f}" if best and base else "-"
        vs = f"{base[0] / r['cuBLAS'][0]:.2f}" if base and r.get("cuBLAS") else "-"
        err = max((v[1] for v in vals if v), default=float("nan"))
        lines.append(f"| {'x'.join(map(str, r['shape']))} | {r['B']} | " + " | ".join(cells)
                     + f" | {gain} | {vs} | {err:.1g} |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--shape", action="append", default=[],
                    help="M,N,K (repeatable; default 4096^3 and 8192^3, B N- and K-major); "
                         "given shapes run with B K-major only (a weight)")
    args = ap.parse_args(argv)
    import torch
    if not torch.cuda.is_available():
        print("benchmarks/gemm_cluster.py needs a CUDA GPU")
        return 0
    rows = []
    shapes = [tuple(int(x) for x in sh.split(",")) for sh in args.shape] or SHAPES
    for m, n, k in shapes:
        for b_kmajor in ((True,) if args.shape else (False, True)):
            rows.append(measure(m, n, k, b_kmajor, args.iters, args.repeats))
            print(table(rows[-1:]).splitlines()[-1], flush=True)
    text = ("TFLOP/s, bf16, device time (queue kept full), kernel launched directly; "
            "policy = ws.ops.matmul's for the shape with the cluster replaced.\n\n"
            + table(rows))
    print("\n" + text)
    with open(os.path.join(os.environ.get("OUT") or "/tmp", "gemm_cluster.md"), "w") as f:
        f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
