"""Host cost per call of ``ws.ops.matmul`` / ``scaled_matmul`` on the pretend GPU for one tree,
to compare two trees (a commit exported with ``git archive``, and the checkout) run after run,
interleaved, on the same machine:

    python benchmarks/gemm_host_ab.py ROOT [BATCHES]

Rows at M = 128 x 4096 x 4096 bf16 (B = W.T): one (x, w, c) set; 3 sets in turn
(benchmarks/gemm.py's rotation); 80 outputs in turn (new maps each call); no ``out=``; FP8 with
3 outputs in turn. Thread CPU time, minimum of BATCHES (default 7) batches of 300 calls, in
microseconds; the pretend driver's decoding (tests/fake_gpu.py) is in every row. Only rows
both trees can run (no plan internals). A benchmark: nothing is asserted.
"""
from __future__ import annotations

import sys
import time


def rows(ws, torch):
    """(name, zero-argument call) per row."""
    bf = torch.bfloat16
    m, n, k = 128, 4096, 4096
    xs = [torch.empty(m, k, dtype=bf) for _ in range(3)]
    wts = [torch.empty(n, k, dtype=bf) for _ in range(3)]
    cs = [torch.empty(m, n, dtype=bf) for _ in range(3)]
    big = torch.empty(80 * m * n, dtype=bf)                 # 80 outputs at new addresses
    outs = [big[i * m * n:(i + 1) * m * n].view(m, n) for i in range(80)]
    a8, w8 = xs[0].to(torch.float8_e4m3fn), wts[0].to(torch.float8_e4m3fn)
    one = torch.tensor(1.0)
    turn = iter(range(1 << 62))
    return [
        ("one set: matmul(x, w.T, out=c)", lambda: ws.ops.matmul(xs[0], wts[0].T, out=cs[0])),
        ("3 sets in turn (gemm.py)",
         lambda: (lambda i: ws.ops.matmul(xs[i], wts[i].T, out=cs[i]))(next(turn) % 3)),
        ("80 outputs in turn (new maps)",
         lambda: ws.ops.matmul(xs[0], wts[0].T, out=outs[next(turn) % 80])),
        ("new output: matmul(x, w.T)", lambda: ws.ops.matmul(xs[0], wts[0].T)),
        ("fp8 scaled_matmul 3 outs in turn",
         lambda: ws.ops.scaled_matmul(a8, w8.T, one, one, out=cs[next(turn) % 3])),
    ]


def main(argv) -> int:
    root = argv[0]
    batches = int(argv[1]) if len(argv) > 1 else 7
    sys.path[:0] = [root, root + "/tests", root + "/benchmarks"]
    import gemm_host
    import torch
    import warpstage as ws
    assert ws.__file__.startswith(root), ws.__file__
    gemm_host.pretend_gpu()
    table = rows(ws, torch)
    for _, f in table:
        for _ in range(200):
            f()
    best = {}
    for _ in range(batches):
        for name, f in table:
            t = time.thread_time()
            for _ in range(300):
                f()
            us = (time.thread_time() - t) / 300 * 1e6
            best[name] = min(best.get(name, 1e9), us)
    for name, _ in table:
        print(f"{name:36s} {best[name]:6.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
