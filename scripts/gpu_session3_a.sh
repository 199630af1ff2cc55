#!/usr/bin/env bash
# Session 3's final device run, part A: every GPU test, the demo, the attention table and chart.
# Part B (scripts/gpu_session3_b.sh): the GEMM, launch and compile benchmarks.
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH=. PYTHONUNBUFFERED=1 WARPSTAGE_CACHE_DIR=/tmp/ws-cache-final
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader; } \
  > "$OUT/env.txt" 2>&1
t0=$(date +%s)
timeout 300 python3 -m pytest -m gpu -q -p no:cacheprovider tests > "$OUT/pytest_gpu.txt" 2>&1
echo "rc=$?" >> "$OUT/pytest_gpu.txt"
timeout 60 python3 -m warpstage demo > "$OUT/demo.txt" 2>&1; echo "rc=$?" >> "$OUT/demo.txt"
timeout 170 python3 benchmarks/attention.py --chart --iters 8 --repeats 5 --out "$OUT" \
  > "$OUT/attention.txt" 2>&1
echo "== env"; cat "$OUT/env.txt"
echo "== pytest -m gpu"; grep -E "^(FAILED|ERROR)" "$OUT/pytest_gpu.txt" | head -20; tail -2 "$OUT/pytest_gpu.txt"
echo "== demo"; tail -6 "$OUT/demo.txt"
echo "== attention"; grep -E "^B=|not importable|chart" "$OUT/attention.txt"
echo "total $(( $(date +%s) - t0 )) s"
