#!/bin/bash
# Session 13, device call B (~5 min): `attention_ab.py --set d128s13` at D=128 non-causal
# (B=8 S=1024 is the table's one point under cuDNN), interleaved with cuDNN. Logs under $OUT.
set -u
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"; export OUT
cd "$(dirname "$0")/.."
export PYTHONPATH=. PYTHONUNBUFFERED=1 WARPSTAGE_CACHE_DIR=/tmp/ws-cache-s13b
t0=$(date +%s)
python3 -m compileall -q warpstage benchmarks > /dev/null
timeout 420 python3 benchmarks/attention_ab.py --set d128s13 --rounds 11 --iters 20 \
    --shapes "8,16,1024;16,16,1024;4,16,4096" > "$OUT/ab.txt" 2>&1
echo "ab rc $? at $(( $(date +%s) - t0 )) s"
cut -c1-230 "$OUT/ab.txt" | tail -30
