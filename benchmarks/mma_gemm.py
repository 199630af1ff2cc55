"""TFLOP/s of the mma.sync GEMM example (examples/mma_gemm.py) against torch.matmul.

    python benchmarks/mma_gemm.py [--sizes 1024 2048 4096] [--iters 20]

For each square size M = N = K: C = A @ B with bf16 A, B and f32 C, with the example's two
tilings (``DEFAULT``: 64 x 64 x 32, 4 warps, 2 stages; ``LARGE``: 128 x 128 x 32, 8 warps, 3
stages): the maximum relative error against an f32 matmul of the same inputs, the time per call
(CUDA events, after a warm-up, ``--iters`` back-to-back launches) and 2*M*N*K / time, and the
same for ``torch.matmul`` on the bf16 inputs (cuBLAS, which uses wgmma on Hopper; bf16 output).
Without a usable GPU it prints one line and exits 0.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import sys

from gpu_timing import seconds_per_call   # benchmarks/ is on sys.path when run as a script

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
try:
    import warpstage as ws
except ImportError:   # run from a checkout: python benchmarks/mma_gemm.py
    sys.path.insert(0, ROOT)
    import warpstage as ws


def load_example():
    spec = importlib.util.spec_from_file_location("mma_gemm", os.path.join(ROOT, "examples",
                                                                           "mma_gemm.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def bench(size: int, iters: int, example) -> dict:
    import torch
    g = torch.Generator(device="cuda").manual_seed(size)
    a = torch.randn(size, size, device="cuda", generator=g).to(torch.bfloat16)
    b = torch.randn(size, size, device="cuda", generator=g).to(torch.bfloat16)
    c = torch.empty(size, size, device="cuda")
    ref = a.float() @ b.float()
    flops = 2 * size ** 3
    row = {"size": size}
    for name, cfg in (("default", example.DEFAULT), ("large", example.LARGE)):
        example.launch(a, b, c, cfg)
        row[name + "_err"] = ((c - ref).abs().max() / ref.abs().max()).item()
        row[name + "_s"] = seconds_per_call(lambda: example.launch(a, b, c, cfg), iters)
    row["torch_s"] = seconds_per_call(lambda: torch.matmul(a, b), iters)
    for key in ("default", "large", "torch"):
        row[key + "_tflops"] = flops / row[key + "_s"] / 1e12
    return row


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[1024, 2048, 4096])
    p.add_argument("--iters", type=int, default=20)
    args = p.parse_args(argv)
    try:
        import torch
        ok = torch.cuda.is_available()
    except ImportError:
        ok = False
    if not ok:
        print("mma_gemm benchmark: no usable CUDA GPU (and torch); nothing measured")
        return 0
    ws.set_target("cuda")
    example = load_example()
    print(f"mma.sync GEMM (examples/mma_gemm.py) vs torch.matmul, bf16 inputs, on "
          f"{torch.cuda.get_device_name()}")
    print("| M=N=K | max rel. error | DEFAULT 64x64x32, 4 warps | LARGE 128x128x32, 8 warps | "
          "torch.matmul |")
    print("|---|---|---|---|---|")
    for size in args.sizes:
        r = bench(size, args.iters, example)
        cells = [f"{r[k + '_tflops']:.1f} TFLOP/s ({r[k + '_s'] * 1e3:.3f} ms)"
                 for k in ("default", "large", "torch")]
        print(f"| {size} | {max(r['default_err'], r['large_err']):.1e} | " + " | ".join(cells)
              + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
