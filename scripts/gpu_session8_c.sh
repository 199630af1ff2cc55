#!/bin/bash
# Session 8, device call C: confirm attn7's gains across S before flipping defaults
# (benchmarks/attention.py sweeps confirm8_64 / confirm8_128). Logs under $OUT.
set -u
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"; cd "$(dirname "$0")/.."
export PYTHONPATH=. PYTHONUNBUFFERED=1 WARPSTAGE_CACHE_DIR=/tmp/ws-cache-c8
t0=$(date +%s)
python3 -m compileall -q warpstage > /dev/null
mkdir -p "$OUT/c64" "$OUT/c128"
timeout 260 python3 benchmarks/attention.py --sweep confirm8_64 --repeats 7 \
    --sweep-shapes "16,16,1024;8,16,2048;4,16,4096;2,16,8192;1,16,16384" --out "$OUT/c64" > "$OUT/c64.log" 2>&1
echo "c64 rc $? at $(( $(date +%s) - t0 )) s"
timeout 150 python3 benchmarks/attention.py --sweep confirm8_128 --repeats 7 \
    --sweep-shapes "8,16,1024;16,16,1024;8,16,2048" --out "$OUT/c128" > "$OUT/c128.log" 2>&1
echo "c128 rc $? at $(( $(date +%s) - t0 )) s"
for s in c64 c128; do echo "== $s"; grep -E "cuDNN|TFLOP|FAILED|compiled|Error" "$OUT/$s.log" | cut -c1-200; done
