#!/usr/bin/env bash
# The session's closing device call, within a few minutes: every GPU test, the demo, the launch
# benchmark and a short FlashAttention benchmark; logs under $OUT (see benchmarks/RESULTS.md).
set -uo pipefail
export PYTHONPATH=. PYTHONUNBUFFERED=1 WARPSTAGE_CACHE_DIR=/tmp/ws-cache
OUT=${OUT:-/tmp/ws-out}; mkdir -p "$OUT"
{
  date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import sys, torch, llvmlite, numpy; from cuda import bindings; print(sys.version.split()[0], 'torch', torch.__version__, 'llvmlite', llvmlite.__version__, 'numpy', numpy.__version__, 'cuda-bindings', bindings.__version__)"
  ptxas --version | tail -1
} > "$OUT/env.txt" 2>&1
timeout "${TEST_S:-200}" python3 -m pytest -m gpu -q -p no:cacheprovider -rf tests > "$OUT/pytest_gpu.txt" 2>&1
echo "pytest rc=$?" >> "$OUT/pytest_gpu.txt"; tail -15 "$OUT/pytest_gpu.txt"
timeout 40 python3 -m warpstage demo > "$OUT/demo.txt" 2>&1; tail -6 "$OUT/demo.txt"
timeout 45 python3 benchmarks/launch_overhead.py --batches 5 --launches 3000 > "$OUT/launch_overhead.txt" 2>&1; cat "$OUT/launch_overhead.txt" | tail -15
timeout 40 python3 benchmarks/flash_attention.py --shape 2,16,1024 --shape 2,8,8192 --causal no --iters 10 --repeats 3 > "$OUT/flash_attention.txt" 2>&1; tail -12 "$OUT/flash_attention.txt"
date -u >> "$OUT/env.txt"
