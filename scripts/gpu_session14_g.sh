#!/bin/bash
# Session 14, device call G (~1.5 min): sweep d64c14 (D=64 causal, the short and long defaults
# with and without claimed tiles) at S = 1024, 2048, 4096. Logs under $OUT.
set -u
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"; export OUT
cd "$(dirname "$0")/.."
export PYTHONPATH=. PYTHONUNBUFFERED=1
python3 -m compileall -q warpstage benchmarks > /dev/null
mkdir -p "$OUT/c"
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-s14g timeout 120 python3 benchmarks/attention_ab.py \
    --set d64c14 --rounds 15 --iters 20 --shapes "16,16,1024;8,16,2048;4,16,4096" \
    --out "$OUT/c" > "$OUT/c.txt" 2>&1
echo "ab rc $?"
cut -c1-190 "$OUT/c.txt" | grep -v "^$"
