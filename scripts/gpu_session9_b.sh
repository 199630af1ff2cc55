#!/bin/bash
# Session 9, device call B (< 10 min): sweeps "attn9_64" (dynamic_tiles at D=64, long and
# short-S defaults without and with it) and "attn9_long" (the D=128 defaults before and after
# dynamic_tiles at S = 8192 / 16384), then compile9's compile-time script (base9/ = main at
# 6d9bbf5, made on the CPU host with git archive: the device's git is stale). Logs under $OUT.
set -u
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"
cd "$(dirname "$0")/.."
export PYTHONPATH=. PYTHONUNBUFFERED=1
t0=$(date +%s)
python3 -m compileall -q warpstage > /dev/null
mkdir -p "$OUT/sweeps"
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-b9 timeout 110 python3 benchmarks/attention.py --sweep attn9_64 \
    --sweep-shapes "16,16,1024;8,16,2048;4,16,4096" --out "$OUT/sweeps" > "$OUT/sweep_attn9_64.log" 2>&1
echo "attn9_64 rc $? at $(( $(date +%s) - t0 )) s"
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-b9 timeout 90 python3 benchmarks/attention.py --sweep attn9_long \
    --sweep-shapes "2,16,8192;1,16,16384" --out "$OUT/sweeps" > "$OUT/sweep_attn9_long.log" 2>&1
echo "attn9_long rc $? at $(( $(date +%s) - t0 )) s"
grep -hE "cuDNN|TFLOP|FAILED|compiled|rror" "$OUT/sweep_attn9_64.log" "$OUT/sweep_attn9_long.log" | cut -c1-220
OUT="$OUT/compile9" timeout 330 bash scripts/gpu_compile9.sh > "$OUT/compile9.log" 2>&1
echo "compile9 rc $? at $(( $(date +%s) - t0 )) s"
sed -n '/== summary ==/,$p' "$OUT/compile9.log" | cut -c1-200
