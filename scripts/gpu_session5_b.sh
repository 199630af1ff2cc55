#!/bin/bash
# Session 5's second device call: the attn5 branch's tests and sweep (scripts/gpu_attn5.sh),
# then benchmarks/launch_overhead.py under faulthandler (it crashed in the first call).
#   PYTHONPATH=. bash scripts/gpu_session5_b.sh
set -u
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"
export PYTHONPATH=${PYTHONPATH:-.} PYTHONUNBUFFERED=1
cd "$(dirname "$0")/.."
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-launch timeout 45 python3 -X faulthandler \
    benchmarks/launch_overhead.py --batches 3 --launches 3000 > "$OUT/launch_overhead.txt" 2>&1
echo "launch rc $?"
OUT=$OUT/attn5 bash scripts/gpu_attn5.sh
echo "== launch"; tail -40 "$OUT/launch_overhead.txt"
