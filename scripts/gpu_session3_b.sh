#!/usr/bin/env bash
# Session 3's final device run, part B: GEMM (scripts/gpu_gemm.sh's benchmark), launch overhead,
# compile time and the disk-cache hit, each time-limited.
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH=. PYTHONUNBUFFERED=1
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"
t0=$(date +%s)
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-gemm timeout 200 python3 benchmarks/gemm.py > "$OUT/gemm.txt" 2>&1
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-launch timeout 70 python3 benchmarks/launch_overhead.py \
  --batches 7 --launches 5000 > "$OUT/launch_overhead.txt" 2>&1
rm -rf /tmp/ws-cache-compile
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-compile timeout 110 python3 benchmarks/compile_time.py \
  > "$OUT/compile_time.txt" 2>&1
echo "== gemm"; grep -E "^\|" "$OUT/gemm.txt" | head -30
echo "== launch"; tail -16 "$OUT/launch_overhead.txt"
echo "== compile"; tail -16 "$OUT/compile_time.txt"
echo "total $(( $(date +%s) - t0 )) s"
