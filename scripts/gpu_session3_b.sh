#!/usr/bin/env bash
# Session 3's final device run, part B (after the gemm2 merge): the GEMM's host cost, GPU tests
# and benchmark (scripts/gpu_gemm.sh's steps), the attention GPU tests again (the descriptor
# cache moved to ops/descriptors.py), launch overhead and compile time, each time-limited.
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH=. PYTHONUNBUFFERED=1
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"
t0=$(date +%s)
export WARPSTAGE_CACHE_DIR=/tmp/ws-cache-b
timeout 30 python3 benchmarks/gemm_host.py > "$OUT/gemm_host.txt" 2>&1
timeout 100 python3 -m pytest -m gpu -q -p no:cacheprovider tests/gpu/test_matmul_gpu.py \
  tests/gpu/test_flash_attention_wgmma_gpu.py > "$OUT/pytest_b.txt" 2>&1
timeout 170 python3 benchmarks/gemm.py > "$OUT/gemm.txt" 2>&1
timeout 60 python3 benchmarks/launch_overhead.py --batches 7 --launches 5000 \
  > "$OUT/launch_overhead.txt" 2>&1
rm -rf /tmp/ws-cache-compile
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-compile timeout 100 python3 benchmarks/compile_time.py \
  > "$OUT/compile_time.txt" 2>&1
echo "== gemm host"; tail -8 "$OUT/gemm_host.txt"
echo "== pytest"; grep -E "^(FAILED|ERROR)" "$OUT/pytest_b.txt" | head; tail -1 "$OUT/pytest_b.txt"
echo "== gemm"; grep -E "^\|" "$OUT/gemm.txt" | head -32
echo "== launch"; tail -16 "$OUT/launch_overhead.txt"
echo "== compile"; tail -16 "$OUT/compile_time.txt"
echo "total $(( $(date +%s) - t0 )) s"
