#!/usr/bin/env bash
# One device call for the GEMM (issue 13): the host-cost benchmark (CPU only, pretend GPU), the
# matmul GPU tests, then benchmarks/gemm.py (about 4 minutes at most). Logs under $OUT; the benchmark's table is printed last. The SASS checks
# (tests/ops/test_matmul_ptx.py) run on the CPU with nvdisasm and need no device time.
# Run from the repo root: bash scripts/gpu_gemm.sh
set -uo pipefail
export PYTHONPATH=. PYTHONUNBUFFERED=1 WARPSTAGE_CACHE_DIR=/tmp/ws-cache
OUT=${OUT:-/tmp/ws-out}; export OUT; mkdir -p "$OUT"
export WARPSTAGE_COMMIT=${WARPSTAGE_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
{
  date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
  python3 -c "import sys, torch, triton, llvmlite; print(sys.version.split()[0], 'torch', torch.__version__, 'triton', triton.__version__, 'llvmlite', llvmlite.__version__)"
} 2>&1 | tee "$OUT/env.txt"
timeout 30 python3 benchmarks/gemm_host.py --calls 1000 2>&1 | tee "$OUT/gemm_host.txt"
timeout 100 python3 -m pytest -m gpu -q -p no:cacheprovider --durations=10 tests/gpu/test_matmul_gpu.py 2>&1 \
  | tee "$OUT/pytest_matmul_gpu.txt" | tail -25
timeout 170 python3 benchmarks/gemm.py 2>&1 | tee "$OUT/gemm_bench.txt" | tail -40
