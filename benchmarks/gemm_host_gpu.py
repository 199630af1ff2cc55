"""Host time of one ``ws.ops.matmul`` / ``ws.ops.scaled_matmul`` call on the GPU, with the
inputs and outputs changing address between calls (as a model's activations do), against
``torch.matmul`` / ``torch._scaled_mm``, in microseconds.

    PYTHONPATH=. python benchmarks/gemm_host_gpu.py [--calls 200] [--rounds 7]

How: the GPU is kept busy by a spin kernel (``torch.cuda._sleep``) long enough that every timed
call only enqueues (the queue does not fill at 200 calls), so the wall time of the loop over
the calls (``time.perf_counter``), divided by their count, is the host's time per call: what
bounds a small GEMM end to end when it exceeds the kernel's time (benchmarks/gemm.py's
``ws.ops`` against ``ws.ops dev``). Median over ``--rounds``. Rows at 128 x 4096 x 4096 bf16
(B = W.T of an nn.Linear weight): one (x, w, out) set; 3 sets in turn (benchmarks/gemm.py's
rotation); 80 outputs in turn (more address sets than a plan keeps and than the kept
descriptors: a map replaced per call, ``cuTensorMapReplaceAddress``); a new output per call
(no ``out=``); FP8 ``scaled_matmul`` with 3 outputs in turn. ``benchmarks/gemm_host.py`` is the
same question on the CPU (pretend GPU). A benchmark: nothing is asserted.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time


def host_us(fn, calls: int, rounds: int) -> float:
    import torch
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(rounds):
        torch.cuda._sleep(int(2e9 * (calls * 60e-6 + 1e-3)))     # ~60 us per call of cover
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - t) / calls * 1e6)
        torch.cuda.synchronize()
    return statistics.median(times)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args(argv)
    import torch
    if not torch.cuda.is_available():
        print("benchmarks/gemm_host_gpu.py needs a CUDA GPU")
        return 0
    import warpstage as ws
    m, n, k = 128, 4096, 4096
    bf = torch.bfloat16
    dev = "cuda"
    xs = [torch.randn(m, k, device=dev).to(bf) for _ in range(3)]
    wts = [torch.randn(n, k, device=dev).to(bf) for _ in range(3)]
    cs = [torch.empty(m, n, device=dev, dtype=bf) for _ in range(3)]
    big = torch.empty(80 * m * n, device=dev, dtype=bf)
    outs = [big[i * m * n:(i + 1) * m * n].view(m, n) for i in range(80)]
    x8, w8 = xs[0].to(torch.float8_e4m3fn), wts[0].to(torch.float8_e4m3fn)
    one = torch.tensor(1.0, device=dev)
    turn = iter(range(1 << 62))
    rows = [
        ("one set: matmul(x, w.T, out=c)",
         lambda: ws.ops.matmul(xs[0], wts[0].T, out=cs[0]),
         lambda: torch.matmul(xs[0], wts[0].T, out=cs[0])),
        ("3 sets in turn (gemm.py's rotation)",
         lambda: (lambda i: ws.ops.matmul(xs[i], wts[i].T, out=cs[i]))(next(turn) % 3),
         lambda: (lambda i: torch.matmul(xs[i], wts[i].T, out=cs[i]))(next(turn) % 3)),
        ("80 outputs in turn (a map replaced per call)",
         lambda: ws.ops.matmul(xs[0], wts[0].T, out=outs[next(turn) % 80]),
         lambda: torch.matmul(xs[0], wts[0].T, out=outs[next(turn) % 80])),
        ("new output per call: matmul(x, w.T)",
         lambda: ws.ops.matmul(xs[0], wts[0].T),
         lambda: torch.matmul(xs[0], wts[0].T)),
        ("fp8 scaled_matmul, 3 outputs in turn",
         lambda: ws.ops.scaled_matmul(x8, w8.T, one, one, out=cs[next(turn) % 3]),
         lambda: torch._scaled_mm(x8, w8.T, one, one, out_dtype=bf, out=cs[next(turn) % 3])),
    ]
    print(f"host us per call, {m}x{n}x{k}, GPU queue kept busy, median of {args.rounds} x "
          f"{args.calls} calls ({torch.cuda.get_device_name()}, torch {torch.__version__})")
    print(f"  {'call':46s} {'ws.ops':>8s} {'torch':>8s}")
    for name, ours, theirs in rows:
        got = []
        for fn in (ours, theirs):
            try:
                got.append(f"{host_us(fn, args.calls, args.rounds):8.1f}")
            except Exception as e:                  # a benchmark reports, it does not stop
                got.append(f"{type(e).__name__}: {str(e)[:80]}")
        print(f"  {name:46s} {got[0]} {got[1]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
