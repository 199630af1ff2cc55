"""The first call of ``ws.ops.flash_attention`` from the disk cache in a fresh process, on a CPU
host: the pretend GPU of ``tests/fake_gpu.py`` (CPU torch tensors posing as CUDA ones, the
driver's launch recorded, no module load) with the real disk cache, so the op's host path runs
as on the GPU up to the module load: the plan, the descriptors, the kernel's generated call
path, the disk lookup, the launch. Source trees take turns (each tree's warpstage and tests on
``PYTHONPATH``), each with its own cache filled by one cold call first.

    python3 benchmarks/hit_path.py --trees /path/to/base,. [--dims 128,64] [--rounds 7]

Printed per tree and D: the first call's wall ms and CPU ms (this process' threads), median
[min-max] over the rounds, and its disk stages. Needs torch (a CPU build will do).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

CALL = r"""
import json, os, sys, time
import pytest, torch
import warpstage as ws
from warpstage.jit.cache import persist
import fake_gpu
lookup, store = persist.lookup, persist.store
patch = pytest.MonkeyPatch()
fake_gpu.install(patch, torch)                  # the pretend GPU, with the real disk cache
patch.setattr(persist, "lookup", lookup)
patch.setattr(persist, "store", store)
from warpstage.ops import attention
d = int(sys.argv[1])
q, k, v = (torch.zeros((1, 8, 1024, d), dtype=torch.bfloat16) for _ in range(3))
t, c = time.perf_counter(), time.process_time()
attention.flash_attention(q, k, v, mma="wgmma")
first, cpu = time.perf_counter() - t, time.process_time() - c
kern = attention.flash_attention_wgmma_kernel
stages = {n: s for ck in kern._cache.values() for n, s in ck.timings.items()}
print(json.dumps({"first": first, "cpu": cpu, "traced": kern.trace_count, "stages": stages}))
"""


def _run(tree: str, cache: str, script: str, dim: int) -> dict:
    path = os.pathsep.join([os.path.abspath(tree), os.path.join(os.path.abspath(tree), "tests")])
    env = dict(os.environ, PYTHONPATH=path, WARPSTAGE_CACHE_DIR=cache)
    proc = subprocess.run([sys.executable, script, str(dim)], env=env, capture_output=True,
                          text=True)
    if proc.returncode:
        last = (proc.stderr.strip().splitlines() or ["?"])[-1]
        raise SystemExit(f"{tree} D={dim} failed: {last}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _spread(values) -> str:
    ms = [1e3 * v for v in values]
    return f"{statistics.median(ms):.1f} [{min(ms):.1f}-{max(ms):.1f}]"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trees", required=True, help="comma-separated source trees")
    ap.add_argument("--dims", default="128,64")
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    trees, dims = args.trees.split(","), [int(d) for d in args.dims.split(",")]
    results = {(t, d): [] for t in trees for d in dims}
    with tempfile.TemporaryDirectory() as folder:
        script = os.path.join(folder, "call.py")
        with open(script, "w") as f:
            f.write(CALL)
        caches = {(t, d): os.path.join(folder, f"cache{i}-{d}")
                  for i, t in enumerate(trees) for d in dims}
        for (t, d), cache in caches.items():
            _run(t, cache, script, d)                   # cold: fills the tree's cache
        for n in range(args.rounds):
            for d in dims:
                for t in trees if n % 2 == 0 else trees[::-1]:
                    r = _run(t, caches[t, d], script, d)
                    if r["traced"]:
                        raise SystemExit(f"{t} D={d}: traced on what should be a disk hit")
                    results[t, d].append(r)
        for d in dims:
            print(f"flash_attention wgmma D={d}, disk hit on the pretend GPU: first call | its "
                  f"CPU | disk stages (ms, median [min-max] of {args.rounds})")
            for t in trees:
                rs = results[t, d]
                stages = " | ".join(f"{k} " + _spread([r["stages"].get(k, 0.0) for r in rs])
                                    for k in ("disk_key", "disk_read", "disk"))
                print(f"  {t:28} {_spread([r['first'] for r in rs])} | "
                      f"{_spread([r['cpu'] for r in rs])} | {stages}", flush=True)


if __name__ == "__main__":
    main()
