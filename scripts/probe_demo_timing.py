import sys, time
sys.path.insert(0, "examples")
import flash_attention as fa
for i in range(3):
    t0 = time.perf_counter()
    fa.benchmark(causal=True)
    print(f"  round {i}: {time.perf_counter()-t0:.2f} s", flush=True)
