"""Compile-time figures: `import warpstage`, per-stage cold compile of each example kernel, and
the cost of a cache-hit call.

    PYTHONPATH=. python benchmarks/compile_time.py

Stages: trace (Python -> IR, passes included), lower (IR -> LLVM IR), ptx (LLVM O3 + NVPTX),
ptxas (PTX -> cubin), load (cuModuleLoadData, GPU only). "cold" is the first compile of the
kernel in a fresh process (LLVM's one-time initialisation lands in the first kernel's ptx stage).
The cache-hit figure is the median per call over many calls with unchanged argument types: on a
GPU a full launch (classify + lookup + pack + cuLaunchKernel), without one the lookup alone.
"""
from __future__ import annotations

import importlib.util
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def import_time(runs: int = 5) -> float:
    code = "import time; t=time.perf_counter(); import warpstage; print(time.perf_counter()-t)"
    env = dict(os.environ, PYTHONPATH=ROOT)
    times = [float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                  env=env, check=True).stdout) for _ in range(runs)]
    return statistics.median(times)


def load(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "examples", f"{name}.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main():
    sys.path.insert(0, ROOT)
    print(f"import warpstage: {1e3 * import_time():.0f} ms (median of 5 fresh processes)")
    import numpy as np
    import warpstage as ws
    target = ws.get_target()
    gpu = target == "cuda"
    if gpu:
        import torch
    vadd, softmax = load("vector_add"), load("softmax")
    cases = [
        ("vector_add", vadd.vector_add, 1000,
         lambda: (np.ones(1000, np.float32),) * 3 + (1000,)),
        ("softmax", softmax.softmax, 64,
         lambda: (np.ones((64, 32), np.float32), np.ones((64, 32), np.float32), 64, 32)),
    ]
    print(f"target: {target}")
    print(f"{'kernel':12} {'trace':>8} {'lower':>8} {'ptx':>8} {'ptxas':>8} {'load':>8} {'total':>8}  cache-hit call")
    for name, kern, n, make in cases:
        args = make()
        if gpu:
            args = tuple(torch.from_numpy(a).cuda() if isinstance(a, np.ndarray) else a for a in args)
        t0 = time.perf_counter()
        ck, _ = kern.specialize(kern._bind(args, {}), (128, 1, 1), target)
        ck.cubin
        if gpu:
            ck.cuda_launcher()
        total = time.perf_counter() - t0
        tm = ck.timings
        cols = [tm.get(s) for s in ("trace", "lower", "ptx", "ptxas", "load")]
        if gpu:
            launch = kern[(n + 127) // 128, 128]
            for _ in range(100):
                launch(*args)
            torch.cuda.synchronize()
            reps = 2000
            samples = []
            for _ in range(5):
                t = time.perf_counter()
                for _ in range(reps):
                    launch(*args)
                samples.append((time.perf_counter() - t) / reps)
            torch.cuda.synchronize()
            hit = statistics.median(samples)
            hit_text = f"{1e6 * hit:.1f} us (full launch)"
        else:
            values = kern._bind(args, {})
            reps = 2000
            t = time.perf_counter()
            for _ in range(reps):
                kern.specialize(values, (128, 1, 1), target)
            hit = (time.perf_counter() - t) / reps
            hit_text = f"{1e6 * hit:.1f} us (lookup only; no GPU)"
        fmt = lambda v: f"{1e3 * v:7.1f}ms" if v is not None else "     n/a"
        print(f"{name:12} " + " ".join(fmt(c) for c in cols) + f" {fmt(total)}  {hit_text}")


def attention_compile_time():
    """Cold compile of the FlashAttention kernel (D=64, bf16) from types, stage by stage."""
    import warpstage as ws
    from warpstage.ops.attention import policy_for
    from warpstage.ops.attention_kernel import flash_attention_kernel
    fa = policy_for(64, "BFloat16", False, 0.125, "cp.async")
    T = ws.Tensor[ws.BFloat16, 4]
    t0 = time.perf_counter()
    ck = ws.compile(flash_attention_kernel, fa, T, T, T, T, block=fa.threads)
    total = time.perf_counter() - t0
    tm = ck.timings
    print("flash_attention (D=64, bf16) cold compile: " + ", ".join(
        f"{s} {1e3 * tm[s]:.0f} ms" for s in ("trace", "lower", "ptx", "ptxas") if s in tm)
        + f"; total {1e3 * total:.0f} ms; {ck.registers} registers")


if __name__ == "__main__":
    main()
    attention_compile_time()
