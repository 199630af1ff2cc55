#!/bin/bash
# Session 12, device call D (~7 min): on the merged tree (review13b, launch14b, compile14b and
# the wide-head-dim defaults): the attention table through the public op at every head dim
# (64, 96, 128, 192, 256; interleaved with cuDNN and SDPA-flash, chart), the compile rows in
# fresh processes (now with the default wgmma FlashAttention) and the launch rows.
set -u
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"; export OUT
cd "$(dirname "$0")/.."
export PYTHONPATH=. PYTHONUNBUFFERED=1
t0=$(date +%s)
python3 -m compileall -q warpstage benchmarks > /dev/null
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-attn-s12 timeout 330 python3 benchmarks/attention.py --chart \
    --head-dims 64,96,128,192,256 --out "$OUT" > "$OUT/attention.txt" 2>&1
echo "attention rc $? at $(( $(date +%s) - t0 )) s"
unset PYTHONDONTWRITEBYTECODE
timeout 130 python3 benchmarks/compile_time.py fresh > "$OUT/compile_time.txt" 2>&1
echo "compile rc $? at $(( $(date +%s) - t0 )) s"
timeout 50 python3 benchmarks/launch_overhead.py > "$OUT/launch.txt" 2>&1
echo "launch rc $? at $(( $(date +%s) - t0 )) s"
echo "== attention"; grep -E "x cuDNN|Error|rror" "$OUT/attention.txt" | cut -c1-200
echo "== compile"; grep -E "kernel|cold|disk hit|second" "$OUT/compile_time.txt" | cut -c1-200 | head -30
echo "== launch"; tail -25 "$OUT/launch.txt" | cut -c1-160
