"""Where ws.ops.scaled_matmul's host time goes on a GPU (issue 13: ~0.7 ms per call at 4096^3
while the kernel runs ~0.1 ms). Prints per-call wall time of the op, of scaled_matmul_eager
(no torch custom op) and of ws.ops.matmul bf16 for contrast, then cProfile's top entries and
torch.profiler's list of CUDA kernels/copies per call.

    PYTHONPATH=. python3 scripts/profile_scaled_matmul.py
"""
import cProfile
import pstats
import time

import torch

import warpstage as ws
from warpstage.ops.scaled_matmul import scaled_matmul_eager

M = N = K = 4096
a = torch.randn(M, K, device="cuda").to(torch.float8_e4m3fn)
b = torch.randn(N, K, device="cuda").to(torch.float8_e4m3fn).T
sa = torch.tensor(0.5, device="cuda")
sb = torch.tensor(0.25, device="cuda")
a16 = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
b16 = torch.randn(K, N, device="cuda", dtype=torch.bfloat16)


def per_call(fn, n=50):
    fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / n * 1e3


def host_only(fn, n=50):
    """Host time per call with no sync in the loop (the queue absorbs the kernels)."""
    fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    return (t1 - t0) / n * 1e3


cases = {
    "ws.ops.scaled_matmul": lambda: ws.ops.scaled_matmul(a, b, sa, sb),
    "scaled_matmul_eager": lambda: scaled_matmul_eager(a, b, sa, sb),
    "torch._scaled_mm": lambda: torch._scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16),
    "ws.ops.matmul bf16": lambda: ws.ops.matmul(a16, b16),
}
for name, fn in cases.items():
    print(f"{name:24s} per call {per_call(fn):7.3f} ms   host only {host_only(fn, 20):7.3f} ms")

for name in ("ws.ops.scaled_matmul", "scaled_matmul_eager"):
    fn = cases[name]
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(20):
        fn()
    pr.disable()
    torch.cuda.synchronize()
    print(f"== cProfile {name} (20 calls)")
    pstats.Stats(pr).sort_stats("cumulative").print_stats(18)

from torch.profiler import ProfilerActivity, profile
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
    for _ in range(5):
        cases["ws.ops.scaled_matmul"]()
    torch.cuda.synchronize()
print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=15))
