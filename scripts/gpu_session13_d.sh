#!/bin/bash
# Session 13, device call D (~2.5 min): `attention_ab.py --set d128m13` (D=128 non-causal at
# S = 1536 / 2048: the short 2-warpgroup kernel against 3 warpgroups of 80 keys) and `--set
# d128c13` (D=128 causal at S = 4096 / 8192 / 16384). Logs under $OUT.
set -u
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"; export OUT
cd "$(dirname "$0")/.."
export PYTHONPATH=. PYTHONUNBUFFERED=1 WARPSTAGE_CACHE_DIR=/tmp/ws-cache-s13d
python3 -m compileall -q warpstage benchmarks > /dev/null
mkdir -p "$OUT/m" "$OUT/c"
timeout 200 python3 benchmarks/attention_ab.py --set d128m13 --rounds 15 --iters 20 --sustain 2 \
    --shapes "8,16,2048;11,16,1536" --out "$OUT/m" > "$OUT/ab_m.txt" 2>&1
echo "m rc $?"
timeout 250 python3 benchmarks/attention_ab.py --set d128c13 --rounds 15 --iters 20 --sustain 2 \
    --shapes "4,16,4096;2,16,8192;1,16,16384" --out "$OUT/c" > "$OUT/ab_c.txt" 2>&1
echo "c rc $?"
cut -c1-230 "$OUT/ab_m.txt" "$OUT/ab_c.txt" | grep -v "^$"
