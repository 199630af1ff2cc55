#!/bin/bash
# Session 14 review (review14) device call, < 1 min: scripts/gpu_review14.py on the H200 (K/V
# broadcast over heads through TMA, scale=1e38, launch_wgmma with a wrong-shaped lse). Logs under
# $OUT; the three result lines last.
#   PYTHONPATH=. bash scripts/gpu_review14.sh
set -u
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"
cd "$(dirname "$0")/.."
export PYTHONPATH=. PYTHONUNBUFFERED=1 WARPSTAGE_CACHE_DIR=/tmp/ws-cache-review14
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/env.txt" 2>&1
timeout 200 python3 scripts/gpu_review14.py > "$OUT/review14.txt" 2>&1
echo "gpu_review14.py rc $? on $(cat "$OUT/env.txt")"
grep -vE "Warning|^ " "$OUT/review14.txt" | tail -6
