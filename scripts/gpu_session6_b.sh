#!/bin/bash
# Session 6, second device call (< 6.5 min): attn6's GPU tests and sweep (scripts/gpu_attn6.sh:
# skip_idle, partial_last, head_group, lead_waits against the default at S = 1024 / 2048 /
# 4096), then benchmarks/gemm_plan.py with the refitted plan and the 192-wide columns.
set -u
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"; export OUT
export PYTHONPATH=${PYTHONPATH:-.} PYTHONUNBUFFERED=1
cd "$(dirname "$0")/.."
t0=$(date +%s)
bash scripts/gpu_attn6.sh > "$OUT/attn6.txt" 2>&1
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-gemm6 timeout 130 python3 benchmarks/gemm_plan.py --iters 10 \
    --repeats 3 > "$OUT/gemm_plan.txt" 2>&1; echo "gemm_plan rc $?"
cat "$OUT/attn6.txt" | cut -c1-220
grep -E "^\| (M x N|[0-9])" "$OUT/gemm_plan.txt" | tail -13
echo "total $(( $(date +%s) - t0 )) s"
