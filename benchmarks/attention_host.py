"""Host cost of one ``ws.ops.flash_attention`` call, in microseconds, measured on the CPU without
a GPU: the attention twin of benchmarks/gemm_host.py (same pretend GPU, same measurement: the
calling thread's CPU time, minimum over batches, rows with and without the op plans interleaved).

    PYTHONPATH=. python benchmarks/attention_host.py [--calls 500]

Rows, bf16 (B, H, S, D) = (8, 16, 1024, 128) unless named: causal and not (the wgmma + TMA
kernel: three descriptors in, a TMA-store descriptor of the new output), D = 64, and
``return_lse=True`` (two new tensors); and the allocation of the output alone. Each call
allocates its output, as the op does: on the pretend GPU a 32 MiB CPU allocation (an mmap),
which a GPU's caching allocator makes a few microseconds. A
benchmark: nothing is asserted.
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from gemm_host import compare, pretend_gpu, print_table  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=500)
    args = ap.parse_args(argv)
    import torch
    import warpstage as ws
    mp = pretend_gpu()

    def qkv(d):
        return [torch.empty(8, 16, 1024, d, dtype=torch.bfloat16) for _ in range(3)]
    q, k, v = qkv(128)
    q64, k64, v64 = qkv(64)
    fa = ws.ops.flash_attention
    rows = [("flash_attention(q, k, v, causal=True)", lambda: fa(q, k, v, causal=True), True),
            ("flash_attention(q, k, v)", lambda: fa(q, k, v), True),
            ("D=64: flash_attention(q, k, v, causal=True)",
             lambda: fa(q64, k64, v64, causal=True), True),
            ("flash_attention(q, k, v, return_lse=True)",
             lambda: fa(q, k, v, return_lse=True), True),
            ("torch.empty of the output alone (CPU memory)",
             lambda: torch.empty(8, 16, 1024, 128, dtype=torch.bfloat16), False)]
    print_table(f"host cost per call, B=8 H=16 S=1024 bf16, pretend GPU (tests/fake_gpu.py), "
                f"thread CPU time, min of 7 batches of {args.calls}:", compare(rows, args.calls))
    mp.undo()
    return 0


if __name__ == "__main__":
    sys.exit(main())
