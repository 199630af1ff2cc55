"""The long differential run: random programs (tests/frontend/cf_programs.py, all three modes:
int, float, arith with Int32 wraparound / negative // and % / Float32 rounding and conversions)
executed by plain Python and by warpstage's trace + the CPU simulator, compared on three inputs
each. The CI test (tests/frontend/test_control_flow_sim.py) draws a few dozen; this script runs
as many as asked, in chunks, in parallel processes, and prints the totals.

    PYTHONPATH=. python3 benchmarks/diff_programs.py --programs 100000 --jobs 2 --seed 0

Each worker's programs come from ``random.Random(seed + chunk)``, so a mismatch is reproducible
from the printed seed and index (the program text is printed too). Results: benchmarks/RESULTS.md.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import random
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, as_completed

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "frontend"), str(ROOT / "tests")]


def run_chunk(seed: int, n: int) -> dict:
    """Run ``n`` programs drawn from random.Random(seed); returns counts and mismatch texts."""
    from cf_harness import arith_inputs, python_results, run_sim, trace
    from cf_programs import random_program
    from example_loader import load_file
    from warpstage import ir
    from warpstage.errors import OperandError, UnboundVariableError
    rng = random.Random(seed)
    folder = pathlib.Path(tempfile.mkdtemp(prefix="ws-diff-"))
    out = {"programs": 0, "compared": 0, "skipped": 0, "mismatches": [], "errors": []}
    for i in range(n):
        for old in folder.glob("*.py"):             # the previous program (kept while traced)
            old.unlink()
        src = random_program(rng)
        floats = "# mode: float" in src
        path = folder / f"p{seed}_{i}.py"
        path.write_text(src)
        mod = load_file(path, path.stem)
        inputs = arith_inputs(src, [(rng.randint(-20, 20), rng.randint(-20, 20))
                                    for _ in range(3)])
        expected = python_results(mod, inputs)
        out["programs"] += 1
        if not expected:
            out["skipped"] += 1
            continue
        try:
            module, _ = trace(mod.prog, "i32", "i32", store=ir.f32 if floats else ir.i32)
        except UnboundVariableError:
            out["skipped"] += 1     # stricter than Python: a temporary unbound on some path
            continue
        except OperandError as e:
            if "static float" in str(e):       # a static NaN/inf converted to an int: an error
                out["skipped"] += 1
                continue
            out["errors"].append(f"seed {seed} #{i}: {type(e).__name__}: {e}\n{src}")
            continue
        except Exception as e:                 # noqa: BLE001 - every failure is reported
            out["errors"].append(f"seed {seed} #{i}: {type(e).__name__}: {e}\n{src}")
            continue
        for (a, b), want in expected.items():
            got = run_sim(mod.prog, (a, b), (), "f32" if floats else "i32", module=module)
            out["compared"] += 1
            if got != want and not (floats and got != got and want != want):
                out["mismatches"].append(f"seed {seed} #{i}: prog({a}, {b}) = {got}, Python "
                                         f"{want}\n{src}")
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--programs", type=int, default=2000)
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    p.add_argument("--chunk", type=int, default=500)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--seconds", type=float, default=None,
                   help="stop starting chunks after this long; totals cover the chunks done")
    args = p.parse_args(argv)
    chunks = [(args.seed + k, min(args.chunk, args.programs - k * args.chunk))
              for k in range((args.programs + args.chunk - 1) // args.chunk)]
    total = {"programs": 0, "compared": 0, "skipped": 0, "mismatches": 0, "errors": 0}
    t0 = time.perf_counter()
    with ProcessPoolExecutor(args.jobs) as pool:
        futures = [pool.submit(run_chunk, s, n) for s, n in chunks]
        for f in as_completed(futures):
            if args.seconds is not None and time.perf_counter() - t0 > args.seconds:
                for g in futures:
                    g.cancel()                  # chunks not started yet; running ones finish
            if f.cancelled():
                continue
            r = f.result()
            for k in ("programs", "compared", "skipped"):
                total[k] += r[k]
            total["mismatches"] += len(r["mismatches"])
            total["errors"] += len(r["errors"])
            for text in r["mismatches"] + r["errors"]:
                print(text, flush=True)
            print(f"progress: {total} after {time.perf_counter() - t0:.0f} s", flush=True)
    print(f"programs {total['programs']}  compared runs {total['compared']}  skipped "
          f"{total['skipped']}  mismatches {total['mismatches']}  errors {total['errors']}  "
          f"({time.perf_counter() - t0:.0f} s, {args.jobs} jobs)")
    return 1 if total["mismatches"] or total["errors"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
