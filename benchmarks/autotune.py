"""The autotuner on the H200: ``ws.ops.matmul(..., tune=True)`` at 4096^3 bf16 (26
configurations) and ``ws.ops.flash_attention(..., tune=True)`` at B4 H16 S4096 D128 bf16 (14),
from an empty disk cache, then a second, fresh process that must take both winners from disk.

    PYTHONPATH=. python3 benchmarks/autotune.py            # everything, about 1-2 minutes

Per op: the shipped default's time (compiled first, so the tuning run's compiles are the
candidates' own), the tuning run (every candidate's outcome, wall time, its compile and timing
parts), the winner's time measured again the same way as the default's (CUDA events around 50
back-to-back calls, median of 5; benchmarks/gpu_timing.py), and its error against torch. Then
the second process calls both ops with ``tune=True`` and prints the tuner's stage counters
(candidates compiled and timed: both must be 0) and the kernels it traced (0: the winners'
kernels come from the disk cache too). Logs and a block for benchmarks/RESULTS.md go to
``$OUT`` (or /tmp). A benchmark, not a test: nothing is asserted.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu_timing import seconds_per_call   # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GEMM = (4096, 4096, 4096)
ATTN = (4, 16, 4096, 128)


def inputs():
    import torch
    torch.manual_seed(0)
    m, n, k = GEMM
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
    q, kk, v = (torch.randn(*ATTN, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    return (a, b), (q, kk, v)


def ops():
    import warpstage as ws
    return {"matmul": (ws.ops.matmul, 2.0 * GEMM[0] * GEMM[1] * GEMM[2]),
            "flash_attention": (ws.ops.flash_attention,
                                4.0 * ATTN[0] * ATTN[1] * ATTN[2] ** 2 * ATTN[3])}


def reference(name, args):
    import torch
    if name == "matmul":
        return (args[0].float() @ args[1].float())
    return torch.nn.functional.scaled_dot_product_attention(*(x.float() for x in args))


def first_process(out_dir: str) -> dict:
    from warpstage.ops.tune_spaces import tuner
    results = {}
    for (name, (op, flops)), args in zip(ops().items(), inputs()):
        try:
            results[name] = one_op(name, op, flops, args)
        except Exception:  # noqa: BLE001 - a benchmark: show it and go on to the next op
            import traceback
            traceback.print_exc()
            t = tuner("attention" if name == "flash_attention" else "matmul")
            if t.report is not None:
                print(t.report.table())
    with open(os.path.join(out_dir, "autotune_first.json"), "w") as f:
        json.dump(results, f, indent=1)
    return results


def one_op(name, op, flops, args) -> dict:
    """The default's time, the tuning run, the winner's time and error for one op."""
    import torch
    from warpstage.ops.tune_spaces import tuner
    op(*args)                                   # compile the shipped default first
    torch.cuda.synchronize()
    default_s = seconds_per_call(lambda: op(*args), 50, 5)
    t0 = time.perf_counter()
    got = op(*args, tune=True)
    torch.cuda.synchronize()
    tune_wall = time.perf_counter() - t0
    report = tuner("attention" if name == "flash_attention" else "matmul").report
    tuned_s = seconds_per_call(lambda: op(*args, tune=True), 50, 5)
    ref = reference(name, args)
    err = float((got.float() - ref).abs().max() / ref.abs().max())
    print(f"\n== {name}: {len(report.candidates)} candidates ==\n{report.table()}", flush=True)
    return dict(
        candidates=len(report.candidates), timed=report.count("timed"),
        dropped=[[repr(c.config), c.status, c.reason] for c in report.dropped()],
        wall_s=tune_wall, compile_s=report.compile_s, timing_s=report.timing_s,
        best=repr(report.best.config), best_index=report.best.index,
        default_ms=default_s * 1e3, tuned_ms=tuned_s * 1e3,
        default_tflops=flops / default_s / 1e12, tuned_tflops=flops / tuned_s / 1e12,
        speedup=default_s / tuned_s, rel_err=err)


def second_process() -> None:
    """In a fresh process: both ops with tune=True; print the counters as JSON."""
    import torch
    import warpstage as ws
    from warpstage.jit.compiled import STAGE_COUNTS
    t0 = time.perf_counter()
    for (name, (op, _)), args in zip(ops().items(), inputs()):
        op(*args, tune=True)
    torch.cuda.synchronize()
    print(json.dumps(dict(seconds=time.perf_counter() - t0, **ws.tune.COUNTS,
                          traces=STAGE_COUNTS["trace"], disk_hits=STAGE_COUNTS["disk_hit"])))


def main() -> int:
    if "--second" in sys.argv:
        second_process()
        return 0
    out_dir = os.environ.get("OUT") or "/tmp"
    os.makedirs(out_dir, exist_ok=True)
    cache = tempfile.mkdtemp(prefix="ws-autotune-cache-")
    os.environ["WARPSTAGE_CACHE_DIR"] = cache          # empty: every compile is real
    os.environ.setdefault("WARPSTAGE_PROGRESS", "0")
    t0 = time.perf_counter()
    results = first_process(out_dir)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT] + sys.path))
    second = subprocess.run([sys.executable, os.path.abspath(__file__), "--second"], env=env,
                            capture_output=True, text=True, timeout=300)
    try:
        counts = json.loads(second.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        counts = {"error": second.stderr[-2000:]}
    total = time.perf_counter() - t0
    lines = ["| op | candidates | timed | dropped | tuning wall s | compile s | timing s | "
             "best | default ms (TFLOP/s) | tuned ms (TFLOP/s) | speedup | rel err |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, r in results.items():
        lines.append(f"| {name} | {r['candidates']} | {r['timed']} | {len(r['dropped'])} | "
                     f"{r['wall_s']:.1f} | {r['compile_s']:.1f} | {r['timing_s']:.1f} | "
                     f"#{r['best_index']} {r['best']} | {r['default_ms']:.3f} "
                     f"({r['default_tflops']:.0f}) | {r['tuned_ms']:.3f} "
                     f"({r['tuned_tflops']:.0f}) | {r['speedup']:.3f}x | {r['rel_err']:.1e} |")
    lines.append(f"\nsecond process (fresh, same disk cache): {json.dumps(counts)}")
    lines.append(f"(compiles and timings must be 0, record_hits 2, traces 0)\ntotal {total:.1f} s")
    text = "\n".join(lines)
    with open(os.path.join(out_dir, "autotune_results.md"), "w") as f:
        f.write(text + "\n")
    print("\n" + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
