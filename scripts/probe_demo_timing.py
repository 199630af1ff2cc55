"""The demo's attention benchmark (examples/flash_attention.benchmark, causal, B=4 H=16
S=4096 D=128, 20 timed calls after one warm-up) three times in one process, on a GPU: shows
whether the first round is slower than the later ones (it was, while the C call path's stub
compiled beside it; RESULTS.md, "Session 5 closing device runs").

    PYTHONPATH=. python3 scripts/probe_demo_timing.py       (WARPSTAGE_CCALL=0: without it)
"""
import sys, time
sys.path.insert(0, "examples")
import flash_attention as fa
for i in range(3):
    t0 = time.perf_counter()
    fa.benchmark(causal=True)
    print(f"  round {i}: {time.perf_counter()-t0:.2f} s", flush=True)
