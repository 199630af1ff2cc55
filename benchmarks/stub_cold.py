"""The launch stub after a disk-cache hit, in fresh processes, on the CPU (no GPU needed).

    PYTHONPATH=. python benchmarks/stub_cold.py [--runs 7] [--before /path/to/main-checkout]
                                                [--modes kernel,attention]

Each child process is a fresh Python on the pretend GPU of ``tests/fake_gpu.py`` with the real
disk cache (as tests/jit/test_disk_hit.py's launch child) and benchmarks/launch_cpu.py's driver
entry (libc's ``labs`` through ctypes: a no-op that releases the GIL as libcuda's call does).
It imports warpstage and torch, then calls, per mode, ``four[8, 128](t0, t1, t2, t3, n)``
(benchmarks/launch_kernels.py: 4 torch tensors + 1 int) or ``ws.ops.flash_attention(q, k, v)``
(an op plan's launch from the second call on), whose kernel and launch stub an earlier process
of the same checkout put in the cache. Per child, in ms:

- ``first``: the first call (the disk hit: read, unpack, the pretend module load, the Python
  path's launch; for the op its own code, recorded as a plan);
- ``second``: the second call (a kernel's starts the stub's load in the background thread; the
  op's plan loaded it in the calling thread before this change);
- ``stall``: what the stub's load takes from the launching thread: right after the second
  call the thread runs launch-like steps (~20 µs of Python, then one ctypes call, which
  releases the GIL as a launch or a synchronize does) until the stub is loaded; the stall is
  that time less as many steps timed alone afterwards. A load that holds the GIL in Python
  (importing ``llvmlite.binding``, parsing) takes it at each release and keeps it up to the
  switch interval (5 ms); a load in LLVM's C code, called through ctypes, does not;
- ``ready``: from the second call's start until the stub was loaded (beside those steps);
- ``stub cpu``: the background load's CPU time (0 when it ran in the calling thread);
- ``third``: the first call after the stub is ready (a kernel's builds the launch
  configuration's C context and checks its entry by a dry run; a plan's makes its C stubs);
- ``launch``: the fastest of 20 later calls, in µs (the C path, driver entry the no-op);
- ``c path``: whether those launch through the stub; ``binding``: whether ``llvmlite.binding``
  was imported; ``compiled``: how often the stub's IR was compiled in the process
  (``host_stub.COUNTS``, where the checkout has it; -1 where not).

``--before``: a second checkout (``git worktree add --detach ../main-copy main``) timed in
alternating processes with this one, each with a cache of its own filled by one warm-up process.
Prints the median of ``--runs`` children per row. It uses only what both checkouts have (fake_gpu,
launch_cpu, launch_kernels, c_env's stub_ready and background thread), so it runs against the
code before this change.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

CHILD = r"""
import ctypes, json, os, sys, threading, time
P = time.perf_counter
t0 = P()
import torch
import warpstage as ws
from warpstage.jit import c_env
from warpstage.jit.cache import persist
import launch_cpu
from launch_kernels import four
t1 = P()
lookup, store = persist.lookup, persist.store
noop = launch_cpu._libc_noop()
stub_address = c_env.stub_address
c_env.stub_address = lambda: 0                 # fake_gpu.install would load the stub now
try:
    mp = launch_cpu.setup(torch, lambda *a: 0, noop)     # driver entry: a ctypes no-op
finally:
    c_env.stub_address = stub_address
mp.setattr(persist, "lookup", lookup)          # the real disk cache
mp.setattr(persist, "store", store)
done = {}
background = c_env._compile_in_background


def timed_background():
    c = time.thread_time()
    try:
        background()
    finally:
        done["cpu"], done["end"] = time.thread_time() - c, P()


c_env._compile_in_background = timed_background


def step():                     # launch-like: ~20 us of Python, then a ctypes call (GIL released)
    x = 0
    for i in range(300):
        x += i
    noop(None)


if sys.argv[1] == "kernel":
    n = 1024
    t = [torch.ones(n) for _ in range(4)]
    call = lambda: four[8, 128](t[0], t[1], t[2], t[3], n)
    kern = four
else:                                           # ws.ops: the op plan's launches
    from warpstage.ops import attention
    q, k, v = (torch.zeros(1, 2, 256, 64, dtype=torch.bfloat16) for _ in range(3))
    call = lambda: ws.ops.flash_attention(q, k, v)
    kern = attention.flash_attention_kernel
a = P(); call(); b = P(); call(); c = P()
steps = 0
while c_env.stub_ready(start=False) is not True and P() - c < 60:     # beside the stub's load
    step()
    steps += 1
beside = P() - c
s = P()
for _ in range(max(steps, 200)):
    step()
alone = (P() - s) / max(steps, 200)
d = P(); call(); e = P()
later = []
for _ in range(20):
    s = P(); call(); later.append(P() - s)
state = getattr(four[8, 128], "cstate", None) if kern is four else None
if kern is not four:                            # the plan's launches through their C stubs
    from warpstage.ops import op_plans
    state = any(stub is not None for p in op_plans._PLANS.values()
                for launches in p.bound.values() for _, stub, _ in launches) or None
from warpstage.backend import host_stub
counts = getattr(host_stub, "COUNTS", None)
print(json.dumps({
    "import": t1 - t0, "first": b - a, "second": c - b, "stall": beside - steps * alone,
    "ready": done.get("end", c) - b, "stub cpu": done.get("cpu", 0.0),
    "third": e - d, "launch": min(later), "step": alone, "c path": state is not None,
    "binding": "llvmlite.binding" in sys.modules,
    "compiled": counts["compiled"] if counts else -1,
    "traced": kern.trace_count}))
"""

ROWS = ("import", "first", "second", "stall", "ready", "stub cpu", "third")


def child(root: str, cache: str, script: str, mode: str) -> dict:
    env = dict(os.environ, WARPSTAGE_CACHE_DIR=cache, PYTHONPATH=os.pathsep.join(
        [root, os.path.join(root, "tests"), os.path.join(root, "benchmarks")]))
    env.pop("WARPSTAGE_CCALL", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)     # imports from .pyc files, as users' do
    out = subprocess.run([sys.executable, script, mode], env=env, capture_output=True,
                         text=True, timeout=600)
    if out.returncode:
        raise RuntimeError(f"{root}: the child failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--before", help="another checkout, timed in alternating processes")
    parser.add_argument("--modes", default="kernel,attention",
                        help="kernel (a kernel launch), attention (ws.ops.flash_attention)")
    args = parser.parse_args(argv)
    roots = [("this", os.path.dirname(HERE))]
    if args.before:
        roots.insert(0, ("before", os.path.abspath(args.before)))
    labels = [label for label, _ in roots]
    with tempfile.TemporaryDirectory() as folder:
        script = os.path.join(folder, "child.py")
        with open(script, "w") as f:
            f.write(CHILD)
        caches = {label: os.path.join(folder, label) for label in labels}
        results = {}
        for mode in args.modes.split(","):
            for label, root in roots:               # fills the cache: kernel and stub
                child(root, caches[label], script, mode)
            results[mode] = {label: [] for label in labels}
            for _ in range(args.runs):
                for label, root in roots:
                    results[mode][label].append(child(root, caches[label], script, mode))
    for mode, by_label in results.items():
        print(f"{MODES[mode]}: fresh processes after a disk hit, median of {args.runs} (ms; launch "
              f"in µs); one step alone {1e6 * statistics.median(r['step'] for r in by_label[labels[-1]]):.1f} µs")
        print(f"  {'':10}" + "".join(f"{label:>12}" for label in labels))
        for row in ROWS:
            cells = [1e3 * statistics.median(r[row] for r in by_label[label]) for label in labels]
            print(f"  {row:10}" + "".join(f"{c:12.1f}" for c in cells))
        cells = [1e6 * statistics.median(r["launch"] for r in by_label[label]) for label in labels]
        print(f"  {'launch µs':10}" + "".join(f"{c:12.1f}" for c in cells))
        for key in ("c path", "binding", "compiled", "traced"):
            cells = [sorted({str(r[key]) for r in by_label[label]}) for label in labels]
            print(f"  {key:10}" + "".join(f"{'/'.join(c):>12}" for c in cells))
    return 0


MODES = {"kernel": "four[8, 128](t0, t1, t2, t3, n)",
         "attention": "ws.ops.flash_attention(q, k, v), (1, 2, 256, 64) bf16 (an op plan)"}


if __name__ == "__main__":
    sys.exit(main())
