"""The autotuner on one GPU and on all visible GPUs (issue 17; docs/autotune.md, "Several GPUs"):
``ws.ops.matmul``'s space at 4096^3 bf16 (26 configurations) and ``ws.ops.flash_attention``'s
at B4 H16 S4096 D128 bf16 (14), benchmarks/autotune.py's shapes, each tuned three times in this
process:

1. ``cold, 1 GPU``: an empty disk cache, ``devices=None`` (the arguments' GPU): the compile step
   compiles every candidate, one timing worker times them all;
2. ``warm, all GPUs``: the tuning records removed, the kernels left in the disk cache (the
   compile step reads them: no trace, no ptxas), ``devices='all'``: one timing worker per GPU;
3. ``warm, 1 GPU``: the same as 2 on one GPU, the fair comparison for 2's timing step.

Per run: wall time of the tuning call, its compile and timing parts (TuneReport), the GPUs the
timing ran on, the winner and its time as the tuner measured it. Winners may differ between
runs where candidates are within noise; the rule is the same. Logs and a markdown table for
benchmarks/RESULTS.md go to ``$OUT`` (or /tmp). A benchmark, not a test: nothing is asserted.

    PYTHONPATH=. python3 benchmarks/autotune_devices.py        # about 1.5 minutes on 2 H200s
"""
from __future__ import annotations

import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from autotune import inputs   # noqa: E402  (benchmarks/autotune.py: the same shapes)


def _cases():
    from warpstage.ops import tune_spaces as ts
    (a, b), (q, k, v) = inputs()
    return [("matmul", ts.matmul_space, ts.matmul_shape_class, ts.tuned_matmul, (a, b)),
            ("flash_attention", ts.attention_space, ts.attention_shape_class,
             ts.tuned_attention, (q, k, v))]


def _tune(name, space, key, fn, args, devices) -> dict:
    import torch
    import warpstage as ws
    tuned = ws.autotune(space, key=key, name=f"ws.ops.{name}", devices=devices,
                        progress=False)(fn)
    t0 = time.perf_counter()
    tuned(*args)
    torch.cuda.synchronize()
    wall = time.perf_counter() - t0
    r = tuned.report
    return dict(wall_s=wall, compile_s=r.compile_s, timing_s=r.timing_s, gpus=len(r.devices),
                timed=r.count("timed"), n=len(r.candidates), best=f"#{r.best.index}",
                best_ms=r.best.ms, table=r.table())


def main() -> int:
    out_dir = os.environ.get("OUT") or tempfile.gettempdir()
    os.makedirs(out_dir, exist_ok=True)
    os.environ["WARPSTAGE_CACHE_DIR"] = tempfile.mkdtemp(prefix="ws-tune-devices-")   # empty
    os.environ.pop("WARPSTAGE_TUNE_DEVICES", None)
    import torch
    import warpstage as ws
    print(f"{torch.cuda.device_count()} GPUs: "
          f"{', '.join(torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count()))}")
    rows = []
    with open(os.path.join(out_dir, "autotune_devices.log"), "w") as log:
        for name, space, key, fn, args in _cases():
            for label, devices in (("cold, 1 GPU", None), ("warm, all GPUs", "all"),
                                   ("warm, 1 GPU", None)):
                ws.tune.clear()                     # the records; the kernels stay on disk
                try:
                    r = _tune(name, space, key, fn, args, devices)
                except Exception as e:  # noqa: BLE001 - a benchmark: report and go on
                    print(f"{name} {label}: {type(e).__name__}: {e}", flush=True)
                    continue
                log.write(f"== {name}, {label}\n{r['table']}\n\n")
                log.flush()
                rows.append((name, label, r))
                print(f"{name:<16} {label:<15} wall {r['wall_s']:6.1f} s  compile "
                      f"{r['compile_s']:5.1f} s  timing {r['timing_s']:5.1f} s on {r['gpus']} "
                      f"GPU(s)  {r['timed']}/{r['n']} timed, best {r['best']} "
                      f"{r['best_ms']:.4f} ms", flush=True)
    lines = ["| op | run | candidates timed | GPUs timing | tuning wall s | compile s | "
             "timing s | best | best ms |", "|---|---|---|---|---|---|---|---|---|"]
    for name, label, r in rows:
        lines.append(f"| {name} | {label} | {r['timed']}/{r['n']} | {r['gpus']} | "
                     f"{r['wall_s']:.1f} | {r['compile_s']:.1f} | {r['timing_s']:.1f} | "
                     f"{r['best']} | {r['best_ms']:.4f} |")
    table = "\n".join(lines)
    with open(os.path.join(out_dir, "autotune_devices.md"), "w") as f:
        f.write(table + "\n")
    print("\n" + table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
