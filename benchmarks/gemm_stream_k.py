"""Stream-K against data-parallel ``ws.ops.matmul`` and cuBLAS, in device time (a warmed
queue: benchmarks/gpu_timing.py), bf16 in and out: 4096^3, 8192^3 (B N-major) and M in {128,
256, 4096} x the LLM weights (N, K) in {(4096, 4096), (11008, 4096), (4096, 11008)} (B = W.T of
an (N, K) nn.Linear weight, K-major).

    PYTHONPATH=. python benchmarks/gemm_stream_k.py [--iters 10] [--repeats 3] [--shape M,N,K ...]

Columns, TFLOP/s: ``dp`` (``stream_k=False``: the plan's data-parallel / split-K choice, in
brackets), ``sk`` (``stream_k=True``: the stream-K plan's tile, in brackets), ``sk 256`` /
``sk 192`` / ``sk 128`` (stream-K with that tile width), ``plan`` (the default call: what
``ws.ops.matmul`` picks, in brackets), cuBLAS, then best stream-K / dp and plan / cuBLAS, and
the two estimates (matmul_plan.py). Per stream-K row also a correctness check against
``torch.matmul`` (max |error| / max |ref|, bf16 rounding: < 1e-2), two calls bitwise equal and
the counters zero afterwards; a failed check prints a line starting ``CHECK FAILED``. Writes
``$OUT/gemm_stream_k.md``. A benchmark: nothing is asserted.
"""
from __future__ import annotations

import argparse
import os
import sys

from gpu_timing import seconds_per_call   # benchmarks/ is on sys.path when run as a script

SHAPES = [(4096, 4096, 4096, False), (8192, 8192, 8192, False)] + [
    (m, n, k, True) for n, k in ((4096, 4096), (11008, 4096), (4096, 11008))
    for m in (128, 256, 4096)]
"""(M, N, K, B K-major)."""
ROWS = [("dp", dict(stream_k=False)), ("sk", dict(stream_k=True)),
        ("sk 256", dict(stream_k=True, tile_n=256)), ("sk 192", dict(stream_k=True, tile_n=192)),
        ("sk 128", dict(stream_k=True, tile_n=128)), ("plan", {})]


def check(m, n, k, sets, kw, name) -> str:
    """The stream-K call's error against torch.matmul, its determinism and the counters."""
    import torch
    import warpstage as ws
    from warpstage.ops import matmul_host
    a, b, c = sets[0]
    ref = torch.matmul(a.float(), b.float())
    c.fill_(float("nan"))
    ws.ops.matmul(a, b, out=c, **kw)
    first = c.clone()
    ws.ops.matmul(a, b, out=c, **kw)
    torch.cuda.synchronize()
    err = float((first.float() - ref).abs().max()) / (float(ref.abs().max()) or 1.0)
    same = bool(torch.equal(first.view(torch.int16), c.view(torch.int16)))
    zero = all(int(cnt.abs().sum()) == 0 for _, cnt in matmul_host._FIXUP.values())
    if not (err < 1e-2 and same and zero):
        print(f"CHECK FAILED {name} at {m}x{n}x{k}: error {err:.2e}, bitwise equal {same}, "
              f"counters zero {zero}", flush=True)
    return f"{err:.1e}{'' if same else ' NONDET'}{'' if zero else ' COUNTERS'}"


def measure(m, n, k, b_kmajor, iters, repeats) -> dict:
    import torch
    import warpstage as ws
    from gemm import attempt, input_sets, rotating
    from warpstage.ops.matmul_config import choose_config, choose_stream_k
    from warpstage.ops.matmul_plan import estimate_stream_k_us, estimate_us
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    sets = input_sets(m, n, k, b_kmajor)
    flops = 2 * m * n * k
    tm, tn, _, sp = choose_config(m, n, k, 1, sms)
    row = {"shape": (m, n, k), "B": "K" if b_kmajor else "N",
           "dp_choice": f"{tm}x{tn}" + (f"/s{sp}" if sp > 1 else ""),
           "est_dp": flops / estimate_us(m, n, k, 1, sms, tm, tn, sp) / 1e6, "checks": {}}
    sk = choose_stream_k(m, n, k, 1, sms, stream_k=True)
    row["sk_choice"] = f"{sk[0]}x{sk[1]}" if sk else "none"
    row["est_sk"] = flops / estimate_stream_k_us(m, n, k, 1, sms, sk[0], sk[1]) / 1e6 \
        if sk else None
    auto = choose_stream_k(m, n, k, 1, sms)
    row["plan_choice"] = f"sk {auto[0]}x{auto[1]}" if auto else "dp " + row["dp_choice"]
    it = max(3, min(iters, int(2e13 // flops) or 3))

    def timed(make):
        return flops / seconds_per_call(rotating(make, sets), it, repeats,
                                        warm_queue=True) / 1e12
    for name, kw in ROWS:
        if name.startswith("sk") and choose_stream_k(m, n, k, 1, sms, tile_n=kw.get("tile_n"),
                                                     stream_k=True) is None:
            continue                            # no stream-K tile at this shape and width
        if name.startswith("sk"):
            attempt(row["checks"], name, lambda: check(m, n, k, sets, kw, name), f"{m}x{n}x{k}")
        attempt(row, name, lambda: timed(lambda a, b, out: (
            lambda: ws.ops.matmul(a, b, out=out, **kw))), f"{m}x{n}x{k}")
    row["cuBLAS"] = timed(lambda a, b, out: (lambda: torch.matmul(a, b, out=out)))
    del sets
    torch.cuda.empty_cache()
    return row


def table(rows) -> str:
    from tables import figure, markdown, ratio
    out = []
    for r in rows:
        sks = [r[c] for c in ("sk", "sk 256", "sk 192", "sk 128") if r.get(c)]
        out.append(["x".join(map(str, r["shape"])) + f" B{r['B']}",
                    f"{figure(r.get('dp'))} [{r['dp_choice']}]",
                    f"{figure(r.get('sk'))} [{r['sk_choice']}]",
                    figure(r.get("sk 256")), figure(r.get("sk 192")), figure(r.get("sk 128")),
                    f"{figure(r.get('plan'))} [{r['plan_choice']}]", figure(r.get("cuBLAS")),
                    ratio(max(sks, default=None), r.get("dp")),
                    ratio(r.get("plan"), r.get("cuBLAS")),
                    f"{figure(r['est_dp'])} / {figure(r.get('est_sk'))}",
                    " ".join(f"{c}: {v}" for c, v in r["checks"].items())])
    return markdown(["M x N x K", "dp [tile]", "sk [tile]", "sk 256", "sk 192", "sk 128",
                     "plan [choice]", "cuBLAS", "best sk / dp", "plan / cuBLAS",
                     "est dp / sk", "checks (err vs torch)"], out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--shape", action="append", default=[],
                    help="M,N,K[,K] (repeatable; a 4th field K: B K-major; default: the "
                    "square and LLM shapes)")
    args = ap.parse_args(argv)
    shapes = [tuple(map(int, s.split(",")[:3])) + (s.count(",") == 3,)
              for s in args.shape] or SHAPES
    rows = []
    for s in shapes:
        rows.append(measure(*s, args.iters, args.repeats))
        print(table(rows[-1:]).splitlines()[-1], flush=True)
    text = table(rows)
    print(text)
    out = os.environ.get("OUT")
    if out:
        with open(os.path.join(out, "gemm_stream_k.md"), "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    sys.exit(main())
