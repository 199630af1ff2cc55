#!/bin/bash
# Session 10, device call A (< 4 min): does the part-filled last wave cost the D=128
# non-causal points their last ~3%? Sweep "waves10" at tile counts of 15.52 / 7.76 waves
# (H = 16) against whole waves (H = 33, 32, 8.25 ...). Logs under $OUT.
set -u
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"; export OUT
cd "$(dirname "$0")/.."
export PYTHONPATH=. PYTHONUNBUFFERED=1
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,power.limit --format=csv > "$OUT/smi.txt" 2>&1
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-a10 timeout 200 python3 benchmarks/attention.py --sweep waves10 \
    --sweep-shapes "4,16,4096;4,33,4096;4,17,4096;2,33,4096;8,16,1024;8,33,1024;8,32,1024;16,16,1024;8,8,1024" \
    --iters 30 --repeats 7 --workers 2 --out "$OUT" > "$OUT/waves.txt" 2>&1
echo "waves rc $? at $(( $(date +%s) - t0 )) s"
cat "$OUT/smi.txt"
grep -E "cuDNN|TFLOP" "$OUT/waves.txt" | cut -c1-200
