"""Cost of a cache hit's specialization lookup with guards, in microseconds per call.

    PYTHONPATH=. python3 benchmarks/guard_overhead.py [--calls 20000]

Measures ``Kernel.specialize`` on a cache hit (binders, key lookup, guard check; no launch) for
kernels that read: only their arguments and one global; a static config object's class
attribute and ``@ws.jit`` method plus a module attribute and a ``@ws.jit`` helper with a default
(the facts recorded by frontend/facts.py); a module-level numpy table (keyed by content). Runs
on the CPU (target 'sim'; no GPU needed), so it isolates the per-call cost of the guards from
the driver's launch.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import types

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import warpstage as ws  # noqa: E402

SCALE = 2.0
TABLE = np.arange(64, dtype=np.float32)
helpers = types.ModuleType("guard_overhead_helpers")
helpers.N = 3
sys.modules[helpers.__name__] = helpers


@ws.jit
def _store(o, v, k=1.0):
    o[0] = v * k


class Cfg:
    TILE = 4

    @ws.jit
    def value(self):
        return ws.Float32(self.TILE)


@ws.kernel
def plain(x: ws.Tensor, n: ws.Int32):
    if ws.arch.thread_idx()[0] < n:
        x[0] = x[1] * SCALE


@ws.kernel
def facts(cfg, x: ws.Tensor, n: ws.Int32):
    if ws.arch.thread_idx()[0] < n:
        _store(x, cfg.value() + ws.Float32(helpers.N) + ws.Float32(Cfg.TILE))


@ws.kernel
def table(x: ws.Tensor):
    x[0] = ws.Float32(TABLE[3])


def per_call(fn, calls: int) -> float:
    fn()
    best = float("inf")
    for _ in range(5):
        t0 = time.process_time()        # CPU time: the machine may be shared
        for _ in range(calls):
            fn()
        best = min(best, (time.process_time() - t0) / calls)
    return best * 1e6


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=20000)
    args = p.parse_args(argv)
    x = np.zeros(8, np.float32)
    cfg = Cfg()
    rows = [
        ("arguments + 1 global", plain, [x, 8]),
        ("+ class attr, jit method, module attr, jit default", facts, [cfg, x, 8]),
        ("numpy table (256 B) by content", table, [x]),
    ]
    block = (32, 1, 1)
    print(f"{'kernel reads':54s} {'guards':>6s} {'us/call':>8s}")
    for name, k, values in rows:
        ck, _ = k.specialize(values, block, "sim")
        us = per_call(lambda: k.specialize(values, block, "sim"), args.calls)
        print(f"{name:54s} {len(ck.guards):6d} {us:8.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
