"""Where a cache-hit launch spends its host time, on the CPU (no GPU needed).

    PYTHONPATH=. python benchmarks/launch_cpu.py [--calls 100] [--reps 1000] [--profile]

The pretend GPU of ``tests/fake_gpu.py`` (CPU torch tensors posing as cuda:0, kernels traced but
not assembled) with the driver's ``cuLaunchKernel`` replaced by a no-op: a Python function
returning 0 ("py no-op"), or libc's ``labs`` called through ctypes exactly as
``runtime/raw_launch.py`` calls libcuda (11 converted arguments, the GIL released and taken back;
the function handle is NULL, so it returns 0): the "ctypes no-op" rows cost what a real launch
costs in Python, less the driver's own work. Everything above the driver call is the real code.

Rows: whole calls (4 tensors + int through ``kern[8, 128](...)``, hoisted, 3 tensors + int,
8 tensors + 2 ints, ``prepare()``'d ``p()`` and ``p(*args)``, 4 torch-free
``__cuda_array_interface__`` arrays through the tensor adapter), then the steps of the 4-tensor
call measured alone (the reads of one torch tensor, each on its own; the call signature and memo
lookup; the guards; torch's stream; ``Launcher.launch``; the driver entry). On the pretend GPU,
``is_cuda`` and ``get_device`` are Python properties (patched on torch.Tensor), so the tensor
reads here cost more than on a real GPU; the "C getter" rows give the real attributes' cost.

Timing: the minimum (and the median) over ``--reps`` batches of ``--calls`` calls of the thread's
CPU time, in µs per call: a shared machine's other processes drop out (but not their effect on
the caches).
"""
from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))

import warpstage as ws  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from launch_kernels import eight, four, tensor_read_rows  # noqa: E402  (not a package)


@ws.kernel
def three(a: ws.Tensor, b: ws.Tensor, out: ws.Tensor, n: ws.Int32):
    i = ws.arch.block_idx()[0] * ws.arch.block_dim()[0] + ws.arch.thread_idx()[0]
    if i < n:
        out[i] = a[i] + b[i]


def timed(fn, calls: int, reps: int):
    """(min, median) µs per call of ``fn()`` over ``reps`` batches of ``calls`` calls, in this
    thread's CPU time (``time.thread_time_ns``: the time the shared machine ran other processes
    is left out)."""
    per = []
    clock = time.thread_time_ns
    for _ in range(reps):
        start = clock()
        for _ in range(calls):
            fn()
        per.append((clock() - start) / calls / 1000)
    return min(per), statistics.median(per)


def _libc_noop():
    """libc's ``labs`` as a ctypes function returning a C int (0 for a NULL first argument)."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    fn = libc.labs
    fn.restype = ctypes.c_int
    return fn


class _Patcher:
    """The part of pytest's monkeypatch that tests/fake_gpu.install uses."""

    def __init__(self):
        from _pytest.monkeypatch import MonkeyPatch
        self.mp = MonkeyPatch()

    def __getattr__(self, name):
        return getattr(self.mp, name)


def setup(torch, entry, c_entry=None):
    """Install the pretend GPU with ``entry`` as the driver call; undo the recorder of launches
    (it is test scaffolding, not launch cost). ``c_entry`` (a ctypes no-op): the C-level call
    path on, with torch's real C DLPack reader and ``c_entry`` as the driver entry of every
    launch (function handles NULL, torch's stream 0), no test callbacks; else the path is off."""
    import fake_gpu
    from warpstage.jit import c_env
    from warpstage.runtime import launcher as launcher_module, raw_launch
    real_launch = launcher_module.Launcher.launch
    mp = _Patcher()
    fake_gpu.install(mp, torch)
    mp.setattr(launcher_module.Launcher, "launch", real_launch)
    mp.setattr(raw_launch, "_fn", entry if c_entry is None else c_entry)
    if c_entry is None:
        mp.setenv("WARPSTAGE_CCALL", "0")
        return mp
    mp.setattr(launcher_module, "_handle_address", lambda handle: 0)    # labs(NULL) == 0
    mp.setattr(torch._C, "_cuda_getCurrentRawStream", lambda index: 0)  # as torch's C API says

    def environment(torch):
        c_env._override = None
        try:
            env = c_env.environment(torch)
        finally:
            c_env._override = environment
        env.device_type = c_env.KDL_CPU             # CPU tensors stand for the GPU's
        return env
    mp.setattr(c_env, "_override", environment)
    return mp


def rows_for(torch, calls: int, reps: int, ctypes_entry):
    import numpy as np
    from fake_gpu import FakeCudaArray
    from warpstage.frontend.guards import guards_hold
    n = 1024
    ts = [torch.ones(n) for _ in range(8)]
    t0, t1, t2, t3 = ts[:4]
    four[8, 128](t0, t1, t2, t3, n)
    three[8, 128](t0, t1, t2, n)
    eight[8, 128](*ts, n, 1)
    arrays = [FakeCudaArray(np.ones(n, np.float32)) for _ in range(4)]
    a0, a1, a2, a3 = arrays
    four[8, 128](a0, a1, a2, a3, n)
    launch = four[8, 128]
    p = launch.prepare(t0, t1, t2, t3, n)
    hit = next(v for k, v in four._fast.memo.items() if v[3])
    launcher, guards = hit[0], hit[1]
    if ctypes_entry is not None and getattr(launch, "cstate", None) is None:   # labs(NULL) == 0
        for k in (four, three, eight):
            for e in k._fast.memo.values():
                e[0]._raw, e[0]._raw_function = ctypes_entry, None
    state = getattr(launch, "cstate", None)
    stub = state.stub if state is not None else (lambda *a: None)
    raw_stream = four._fast.namespace["_raw_stream"]
    memo = four._fast.memo
    sig = next(k for k, v in memo.items() if v is hit)
    values = (t0.data_ptr(), n, t1.data_ptr(), n, t2.data_ptr(), n, t3.data_ptr(), n, n)
    grid, block = launch.grid, launch.block
    entry, fn, slot = launcher._raw, launcher._raw_function, launcher._tls.slot
    dims = launcher._dims
    real = torch.ones(4)
    table = [
        ("kern[8, 128](t0, t1, t2, t3, n)", lambda: four[8, 128](t0, t1, t2, t3, n)),
        ("  the same, kern[8, 128] hoisted", lambda: launch(t0, t1, t2, t3, n)),
        ("kern[8, 128](a, b, out, n): 3 tensors + int", lambda: three[8, 128](t0, t1, t2, n)),
        ("kern[8, 128](8 tensors, n, m)", lambda: eight[8, 128](*ts, n, 1)),
        ("p(): p = kern[8, 128].prepare(t0, t1, t2, t3, n)", p),
        ("p(t0, t1, t2, t3, n): rebinding", lambda: p(t0, t1, t2, t3, n)),
        ("4 __cuda_array_interface__ arrays + int (adapter)",
         lambda: launch(a0, a1, a2, a3, n)),
        ("step: read 1 torch tensor (7 reads, fake is_cuda/get_device)",
         lambda: (type(t0), t0.is_cuda, t0.get_device(), t0.stride(), t0.data_ptr(), t0.shape,
                  t0.dtype)),
        *[(name + " (a real tensor: C getters)" if i == 0 else name, fn)
          for i, (name, fn) in enumerate(tensor_read_rows(real))],
        ("step: call signature + memo lookup",
         lambda: memo.get((block, *sig[1:]))),
        ("step: guards_hold (this kernel's guards)", lambda: guards_hold(guards)),
        ("step: torch stream (fake _cuda_getCurrentRawStream)", lambda: raw_stream(0)),
        ("step: Launcher.launch (pack + driver call)",
         lambda: launcher.launch(grid, block, 0, 0, values)),
        ("step: driver entry alone", lambda: entry(fn, *dims, 0, None, slot[2], None)),
        ("step: the C stub alone (reads, match, pack, driver entry)",
         lambda: stub(t0, t1, t2, t3, n)),
        ("empty Python call (loop floor)", lambda: None),
    ]
    return [(name, timed(f, calls, reps)) for name, f in table]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--profile", action="store_true", help="cProfile 20,000 4-tensor calls")
    args = parser.parse_args(argv)
    import torch
    results = {}
    noop = _libc_noop()
    columns = (("C path", noop, noop), ("ctypes no-op", noop, None), ("py no-op", None, None))
    for label, entry, c_entry in columns:
        mp = setup(torch, lambda *a: 0, c_entry)
        try:
            results[label] = rows_for(torch, args.calls, args.reps, entry)
            if args.profile and entry is not None:
                profile(torch)
        finally:
            mp.undo()
            for k in (four, three, eight):
                k._fast = k._launch_type = k._last_launch = None
                k._launches = {}
                k._cache.clear()
    names = [name for name, _ in results["ctypes no-op"]]
    width = max(map(len, names))
    labels = [label for label, *_ in columns]
    print(f"Python {sys.version.split()[0]}, torch {torch.__version__}; µs per call, min / median "
          f"of {args.reps} batches of {args.calls}; driver entry: a no-op")
    print(f"{'what':<{width}}  " + "  ".join(f"{label:>14}" for label in labels))
    for i, name in enumerate(names):
        cells = ["{:6.2f} /{:6.2f}".format(*results[k][i][1]) for k in labels]
        print(f"{name:<{width}}  " + "  ".join(f"{c:>14}" for c in cells))
    return 0


def profile(torch):
    import cProfile
    import pstats
    ts = [torch.ones(1024) for _ in range(4)]
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(20000):
        four[8, 128](ts[0], ts[1], ts[2], ts[3], 1024)
    pr.disable()
    pstats.Stats(pr).sort_stats("tottime").print_stats(12)


if __name__ == "__main__":
    sys.exit(main())
