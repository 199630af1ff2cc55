"""Small-M bf16 GEMM (M = 64-256 rows against a large weight: LLM decode and prefill shapes):
``ws.ops.matmul`` against cuBLAS (``torch.matmul``), each timed two ways, then warpstage's
kernel under tile rows x tile width x K splits. Run as ``benchmarks/gemm.py --small-m``
(``--quick``: N = K = 4096 and 8192 only, no sweep; ``--shape M,N,K`` repeatable).

Why two timings: at these sizes a call's device time (10-60 us) is about the host's time to
issue it (``ws.ops.matmul`` ~85-110 us of Python on the H200's host, a launch ~13-19 us; cuBLAS
a few us), so back-to-back calls timed from an idle GPU measure the host. ``dev`` columns time
with a warmed queue (benchmarks/gpu_timing.py: the host enqueues all calls behind a spin
kernel, so the events see device time only, as under a CUDA graph or a host that runs ahead);
``e2e`` columns from an idle GPU. The sweep is device time (the earlier sweep in RESULTS.md,
end to end, was host-bound for the split-K rows: two launches per call). B = W.T of an (N, K)
weight (K-major), as nn.Linear. Columns: TFLOP/s; the floor is max(2MNK / 989 TFLOP/s,
bytes / 4.8 TB/s). A benchmark: nothing is asserted; max errors against an f32 torch.matmul,
relative to max |A @ B|.
"""
from __future__ import annotations

from gpu_timing import seconds_per_call   # benchmarks/ is on sys.path when run as a script

SHAPES = ([(m, s, s) for s in (4096, 8192) for m in (64, 128, 256)]
          + [(m, n, k) for n, k in ((11008, 4096), (4096, 11008), (128256, 4096))
             for m in (64, 128)])
QUICK = [(m, s, s) for s in (4096, 8192) for m in (64, 128, 256)]
SWEEP_SHAPES = [(64, 4096, 4096), (128, 4096, 4096), (256, 4096, 4096), (128, 8192, 8192),
                (128, 11008, 4096)]
SWEEP = [dict(tile_m=tm, tile_n=tn, splits=s) for tm in (128, 64) for tn in (256, 128)
         for s in (1, 2, 4, 8)]
PEAK, HBM = 989.4e12, 4.8e12
COLUMNS = ("ws.ops dev", "ws.ops e2e", "ws kernel dev", "cuBLAS dev", "cuBLAS e2e", "floor")


def measure(m, n, k, iters, repeats):
    import torch
    import warpstage as ws
    from gemm import input_sets, kernel_runner, rotating
    sets = input_sets(m, n, k, True)
    a, b, c = sets[0]
    ref = torch.matmul(a.float(), b.float())
    scale = float(ref.abs().max()) or 1.0
    flops = 2 * m * n * k
    calls = {"ws.ops": lambda a, b, c: (lambda: ws.ops.matmul(a, b, out=c)),
             "ws kernel": lambda a, b, c: kernel_runner(a, b, c)[0],
             "cuBLAS": lambda a, b, c: (lambda: torch.matmul(a, b, out=c))}
    p = kernel_runner(a, b, c)[1]
    row = {"shape": (m, n, k), "errors": {},
           "policy": repr(p) + (f", {p.splits} K splits" if p.splits > 1 else "")}
    for name, make in calls.items():
        try:
            c.fill_(float("nan"))
            make(a, b, c)()
            row["errors"][name] = float((c.float() - ref).abs().max()) / scale
            for mode, warm in (("dev", True), ("e2e", False)):
                if name == "ws kernel" and not warm:
                    continue
                t = seconds_per_call(rotating(make, sets), iters, repeats, warm_queue=warm)
                row[f"{name} {mode}"] = flops / t / 1e12
        except Exception as e:                # a benchmark reports, it does not stop
            print(f"  {name} at {m}x{n}x{k}: {type(e).__name__}: {str(e)[:300]}", flush=True)
    nbytes = 2 * (m * k + k * n + m * n)
    row["floor"] = flops / max(flops / PEAK, nbytes / HBM) / 1e12
    del sets
    torch.cuda.empty_cache()
    return row


def sweep(m, n, k, iters, repeats):
    """[(policy fields, device TFLOP/s)] of the kernel launched directly (split-K: the GEMM
    and the reduction)."""
    from gemm import input_sets, kernel_runner, rotating
    sets = input_sets(m, n, k, True)
    out = []
    for fields in SWEEP:
        try:
            t = seconds_per_call(rotating(lambda a, b, c: kernel_runner(a, b, c, fields)[0],
                                          sets), iters, repeats, warm_queue=True)
            out.append((fields, 2 * m * n * k / t / 1e12))
        except Exception as e:
            print(f"  sweep {fields}: {type(e).__name__}: {str(e)[:200]}", flush=True)
    return out


def table(rows) -> str:
    from tables import figure, markdown, ratio

    def cells(r):
        e = r["errors"]
        errs = ", ".join(f"{e[c]:.1g}" if c in e else "-" for c in ("ws.ops", "cuBLAS"))
        return (["x".join(map(str, r["shape"]))] + [figure(r.get(c)) for c in COLUMNS]
                + [ratio(r.get("ws.ops dev"), r.get("cuBLAS dev")), errs, r["policy"]])
    return markdown(("M x N x K",) + COLUMNS + ("dev / cuBLAS dev", "max err (ws, cuBLAS)",
                                                "policy"), [cells(r) for r in rows])


def run(shapes, iters, repeats, environment, quick=False) -> str:
    """Measure ``shapes`` (None: ``SHAPES``, or ``QUICK``) and, unless ``quick`` or shapes were
    given, the sweep; return the RESULTS.md block (rows are also printed as they come)."""
    rows = []
    for s in shapes or (QUICK if quick else SHAPES):
        rows.append(measure(*s, iters, repeats))
        print(table(rows[-1:]).splitlines()[-1], flush=True)
    text = ""
    for s in [] if quick or shapes else SWEEP_SHAPES:
        line = (f"Policies at {'x'.join(map(str, s))} (device time, kernel launched directly, "
                "B K-major): " + "; ".join(f"{', '.join(f'{k}={v}' for k, v in f.items())}: "
                                          f"{t:.0f}" for f, t in sweep(*s, iters, repeats)))
        print(line, flush=True)                  # as it comes: a timeout keeps what ran
        text += "\n" + line + "\n"
    return (f"## GEMM at small M, bf16 (`benchmarks/gemm.py --small-m`)\n\n{environment}. "
            f"TFLOP/s, medians of {repeats} runs of {iters} back-to-back calls, inputs rotated; "
            "dev: warmed queue (device time), e2e: from an idle GPU.\n\n" + table(rows) + "\n"
            + text)
