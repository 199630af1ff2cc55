#!/usr/bin/env bash
# One device call for the autotuner (issue 16): benchmarks/autotune.py (GEMM 4096^3 over 26
# configurations and attention B4 H16 S4096 D128 over 14, from an empty disk cache, then a fresh
# process that must take both winners from disk), then the GPU tests (a hanging and a
# register-starved candidate ended by the watchdog; a tuned GEMM checked against torch) -- after
# the benchmark, since they hang kernels on purpose. About 2-3 minutes. Logs under $OUT; the
# benchmark's table is printed again last.
# Run from the repo root: bash scripts/gpu_autotune.sh
set -uo pipefail
export PYTHONPATH=. PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/ws-out}; export OUT; mkdir -p "$OUT"
{
  date -u; git rev-parse --short HEAD 2>/dev/null
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
} 2>&1 | tee "$OUT/env.txt"
timeout 200 python3 benchmarks/autotune.py 2>&1 | tee "$OUT/autotune_bench.txt" | tail -70
timeout 120 python3 -m pytest -m gpu -q -p no:cacheprovider --durations=5 \
  tests/gpu/test_autotune_gpu.py 2>&1 | tee "$OUT/pytest_autotune_gpu.txt" | tail -25
cat "$OUT/autotune_results.md" 2>/dev/null
