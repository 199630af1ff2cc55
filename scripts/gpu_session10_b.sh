#!/bin/bash
# Session 10, device call B (< 4 min): interleaved A/B of the D=128 defaults' candidate fields
# with the SM clock and power sampled under load (benchmarks/attention_ab.py). Logs under $OUT.
set -u
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"; export OUT
cd "$(dirname "$0")/.."
export PYTHONPATH=. PYTHONUNBUFFERED=1
t0=$(date +%s)
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-b10 timeout 150 python3 benchmarks/attention_ab.py --set d128 \
    --shapes "4,16,4096;8,16,1024" --out "$OUT" > "$OUT/ab128.txt" 2>&1
echo "ab128 rc $? at $(( $(date +%s) - t0 )) s"
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-b10 timeout 80 python3 benchmarks/attention_ab.py --set d128c \
    --shapes "4,16,4096;8,16,1024" --rounds 9 --out "$OUT" > "$OUT/ab128c.txt" 2>&1
echo "ab128c rc $? at $(( $(date +%s) - t0 )) s"
cat "$OUT/ab128.txt" "$OUT/ab128c.txt" | cut -c1-250 | tail -40
