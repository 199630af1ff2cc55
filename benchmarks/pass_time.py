"""Time of the pass stage (verifier, DCE, the whole ``run_passes``) on the FlashAttention
kernels of ``ws.ops`` (D=128; mma.sync and wgmma), traced for the simulator target (no GPU).

    PYTHONPATH=. python3 benchmarks/pass_time.py

The trace is stopped after the passes (nothing is simulated). Each figure is the best of 5
runs on a fresh copy of the traced module, in CPU time of this process (``time.process_time``:
other load on the machine inflates wall time, not this). Works on older commits too (it only
wraps ``warpstage.passes.pipeline.run_passes``), so a before/after comparison runs the same
script with ``PYTHONPATH`` pointing at each checkout.
"""
from __future__ import annotations

import copy
import time


class _Stop(Exception):
    pass


def _best(fn, module, runs=5):
    best = float("inf")
    for _ in range(runs):
        m = copy.deepcopy(module)
        t0 = time.process_time()
        fn(m)
        best = min(best, time.process_time() - t0)
    return best


def measure(mma: str) -> dict:
    import numpy as np
    import warpstage as ws
    import warpstage.passes.pipeline as pipeline
    from warpstage.ir import verify
    from warpstage.passes.dce import dead_code_elimination
    original, out = pipeline.run_passes, {}

    def run_passes(module, *args, **kwargs):
        out["ops"] = sum(1 for fn in module.functions for _ in fn.walk())
        out["verify"] = _best(verify, module)
        out["dce"] = _best(dead_code_elimination, module)
        out["run_passes"] = _best(original, module)
        raise _Stop

    ws.set_target("sim")
    pipeline.run_passes = run_passes
    q = np.zeros((1, 1, 128, 128), np.float16)
    try:
        ws.ops.flash_attention(q, q, q, mma=mma)
    except _Stop:
        pass
    finally:
        pipeline.run_passes = original
    return out


def main():
    print(f"{'kernel (D=128)':18} {'ops':>6} {'verify':>9} {'dce':>9} {'run_passes':>11}")
    for mma in ("mma.sync", "wgmma"):
        r = measure(mma)
        print(f"{mma:18} {r['ops']:6d} {1e3 * r['verify']:7.1f}ms {1e3 * r['dce']:7.1f}ms "
              f"{1e3 * r['run_passes']:9.1f}ms")


if __name__ == "__main__":
    main()
