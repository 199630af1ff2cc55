"""Small ``ws.ops`` calls on the GPU, end to end against device time, with and without the op
plans (warpstage/ops/op_plans.py): where a call's host work decides its speed.

    PYTHONPATH=. python3 benchmarks/ops_small.py [--iters 200] [--repeats 5]

Rows: ``ws.ops.matmul(a, w.T, out=c)`` bf16 at M = 128 and 16, N = K = 4096 (an nn.Linear
weight; M = 16 splits K: two launches); ``ws.ops.scaled_matmul`` FP8 at M = 128;
``ws.ops.flash_attention`` B=8 H=16 S=1024 D=128 causal and not; each with cuBLAS
(``torch.matmul`` / ``torch._scaled_mm``) or SDPA (cuDNN where torch picks it) beside it.
Columns: TFLOP/s from device time (``gpu_timing.seconds_per_call(warm_queue=True)``: the calls
queued behind a spin kernel) and end to end (from an idle GPU: the host's issue time counts
when it outlasts the kernel), with plans (default) and without (``op_plans.ENABLED = False``:
every call runs the op's code, as before); and the host's µs per call (perf_counter over the
timed loop of the end-to-end run with plans, GPU waits included where the queue fills).
Writes the table to ``$OUT/ops_small.md`` (or /tmp) and prints it last. A benchmark: nothing
is asserted; errors against torch are printed per row.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from gpu_timing import seconds_per_call  # noqa: E402


def _rows(torch, ws, dev: str = "cuda"):
    """(name, flops, warpstage call, reference call, error of the warpstage result), the
    tensors on ``dev``."""
    rows = []
    for m in (128, 16):
        a = torch.randn(m, 4096, device=dev, dtype=torch.bfloat16)
        w = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
        c = torch.empty(m, 4096, device=dev, dtype=torch.bfloat16)
        ref = (a.float() @ w.float().T)
        rows.append((f"matmul M={m} N=K=4096 bf16", 2 * m * 4096 * 4096,
                     lambda a=a, w=w, c=c: ws.ops.matmul(a, w.T, out=c),
                     lambda a=a, w=w: torch.matmul(a, w.T),
                     lambda c=c, ref=ref: float((c.float() - ref).abs().max() /
                                                ref.abs().max())))
    a8 = torch.randn(128, 4096, device=dev).to(torch.float8_e4m3fn)
    w8 = torch.randn(4096, 4096, device=dev).to(torch.float8_e4m3fn)
    one = torch.tensor(1.0, device=dev)
    c8 = torch.empty(128, 4096, device=dev, dtype=torch.bfloat16)
    ref8 = a8.float() @ w8.float().T
    rows.append(("scaled_matmul M=128 N=K=4096 fp8", 2 * 128 * 4096 * 4096,
                 lambda: ws.ops.scaled_matmul(a8, w8.T, one, one, out=c8),
                 lambda: torch._scaled_mm(a8, w8.T, one, one, out_dtype=torch.bfloat16),
                 lambda: float((c8.float() - ref8).abs().max() / ref8.abs().max())))
    q, k, v = (torch.randn(8, 16, 1024, 128, device=dev, dtype=torch.bfloat16)
               for _ in range(3))
    sdpa = torch.nn.functional.scaled_dot_product_attention
    for causal in (True, False):
        flops = 4 * 8 * 16 * 1024 * 1024 * 128 // (2 if causal else 1)
        ref = sdpa(q, k, v, is_causal=causal).float()
        rows.append((f"flash_attention B=8 H=16 S=1024 D=128{' causal' if causal else ''}",
                     flops, lambda causal=causal: ws.ops.flash_attention(q, k, v, causal=causal),
                     lambda causal=causal: sdpa(q, k, v, is_causal=causal),
                     lambda causal=causal, ref=ref: float(
                         (ws.ops.flash_attention(q, k, v, causal=causal).float() - ref)
                         .abs().max())))
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)
    import torch
    if not torch.cuda.is_available():
        print("benchmarks/ops_small.py needs a CUDA GPU; nothing measured")
        return 0
    import warpstage as ws
    from warpstage.ops import op_plans
    lines = [f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
             f"{torch.cuda.get_device_name()}, torch {torch.__version__}; TFLOP/s "
             f"(dev: device time, e2e: end to end), host µs per call",
             "", "| call | ws dev | ws e2e | ws e2e, no plans | reference dev | reference e2e "
             "| host µs (plans) | host µs (no plans) | error |", "|---" * 9 + "|"]
    for name, flops, run, ref, err in _rows(torch, ws):
        got = {}
        try:
            for on in (True, False):
                op_plans.ENABLED = on
                run()
                torch.cuda.synchronize()
                got["e2e", on] = seconds_per_call(run, args.iters, args.repeats)
                t = time.perf_counter()
                for _ in range(args.iters):
                    run()
                got["host", on] = (time.perf_counter() - t) / args.iters
                torch.cuda.synchronize()
            op_plans.ENABLED = True
            got["dev"] = seconds_per_call(run, args.iters, args.repeats, warm_queue=True)
            got["ref dev"] = seconds_per_call(ref, args.iters, args.repeats, warm_queue=True)
            got["ref e2e"] = seconds_per_call(ref, args.iters, args.repeats)
            e = err()
            lines.append(f"| {name} | {flops / got['dev'] / 1e12:.0f} | "
                         f"{flops / got['e2e', True] / 1e12:.0f} | "
                         f"{flops / got['e2e', False] / 1e12:.0f} | "
                         f"{flops / got['ref dev'] / 1e12:.0f} | "
                         f"{flops / got['ref e2e'] / 1e12:.0f} | {got['host', True] * 1e6:.1f} | "
                         f"{got['host', False] * 1e6:.1f} | {e:.1e} |")
        except Exception as exc:                        # noqa: BLE001 - the row says why
            op_plans.ENABLED = True
            lines.append(f"| {name} | failed: {type(exc).__name__}: {str(exc)[:200]} |")
        print(lines[-1], flush=True)
    block = "\n".join(lines)
    with open(os.path.join(os.environ.get("OUT") or "/tmp", "ops_small.md"), "w") as f:
        f.write(block + "\n")
    print("\n" + block)
    return 0


if __name__ == "__main__":
    sys.exit(main())
