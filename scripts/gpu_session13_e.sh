#!/bin/bash
# Session 13, device call E (~1.5 min): `attention_ab.py --set d128f13` at D=128 non-causal
# S=1024 over B = 1, 2, 4, 8, 16, 32 (H=16): the time against the tile count splits into a
# per-tile cost and a per-launch one, for warpstage's short default, the one-CTA-per-tile grid
# and cuDNN. Logs under $OUT.
set -u
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"; export OUT
cd "$(dirname "$0")/.."
export PYTHONPATH=. PYTHONUNBUFFERED=1 WARPSTAGE_CACHE_DIR=/tmp/ws-cache-s13e
python3 -m compileall -q warpstage benchmarks > /dev/null
timeout 250 python3 benchmarks/attention_ab.py --set d128f13 --rounds 15 --iters 20 \
    --shapes "1,16,1024;2,16,1024;4,16,1024;8,16,1024;16,16,1024;32,16,1024" --out "$OUT" \
    > "$OUT/ab.txt" 2>&1
echo "rc $?"
cut -c1-200 "$OUT/ab.txt"
