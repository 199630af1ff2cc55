"""Where a cache-hit launch spends its time (GPU only): cProfile over many vector_add launches,
and the per-call time of each step measured on its own.

    PYTHONPATH=. python benchmarks/profile_launch.py
"""
import cProfile
import importlib.util
import os
import pstats
import time

import torch

import warpstage as ws

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
spec = importlib.util.spec_from_file_location("va", os.path.join(ROOT, "examples", "vector_add.py"))
va = importlib.util.module_from_spec(spec)
spec.loader.exec_module(va)
k = va.vector_add
a = torch.ones(1000, device="cuda")
launch = k[8, 128]
for _ in range(200):
    launch(a, a, a, 1000)
torch.cuda.synchronize()


def per_call(fn, n=5000):
    t = time.perf_counter()
    for _ in range(n):
        fn()
    torch.cuda.synchronize()
    return 1e6 * (time.perf_counter() - t) / n


vals = [a, a, a, 1000]
print(f"full launch            {per_call(lambda: launch(a, a, a, 1000)):6.2f} us")
print(f"specialize (hit)       {per_call(lambda: k.specialize(vals, (128, 1, 1), 'cuda')):6.2f} us")
print(f"get_target             {per_call(ws.get_target):6.2f} us")
from warpstage.runtime.launcher import current_stream  # noqa: E402
from warpstage.runtime.tensors import as_tensor_arg  # noqa: E402
ta = as_tensor_arg(a)
print(f"as_tensor_arg          {per_call(lambda: as_tensor_arg(a)):6.2f} us")
print(f"current_stream         {per_call(lambda: current_stream([ta])):6.2f} us")
ck, leaves = k.specialize(vals, (128, 1, 1), "cuda")
_, launcher = ck.cuda_launcher()
raw = [a.data_ptr(), 1000, a.data_ptr(), 1000, a.data_ptr(), 1000, 1000]
print(f"Launcher.launch        {per_call(lambda: launcher.launch((8, 1, 1), (128, 1, 1), 0, 0, raw)):6.2f} us")
pr = cProfile.Profile()
pr.enable()
for _ in range(3000):
    launch(a, a, a, 1000)
pr.disable()
torch.cuda.synchronize()
pstats.Stats(pr).sort_stats("tottime").print_stats(15)
