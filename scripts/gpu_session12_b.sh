#!/bin/bash
# Session 12, device call B (~4 min): D=96 with three consumer warpgroups
# (benchmarks/attention_ab.py --set d96, interleaved with cuDNN), compiled first in 12
# processes into one disk cache. Logs under $OUT.
set -u
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"; export OUT
cd "$(dirname "$0")/.."
export PYTHONPATH=.:benchmarks PYTHONUNBUFFERED=1 WARPSTAGE_CACHE_DIR=/tmp/ws-cache-s12b
SET=${SET:-d96}
t0=$(date +%s)
timeout 150 python3 benchmarks/precompile_set.py "$SET" > "$OUT/precompile.txt" 2>&1
echo "precompile rc $? at $(( $(date +%s) - t0 )) s"
timeout 330 python3 -W ignore benchmarks/attention_ab.py --set "$SET" --shapes "4,16,4096;16,16,1024" \
    --rounds 7 --iters 10 --out "$OUT" > "$OUT/$SET.txt" 2>&1
echo "$SET rc $? at $(( $(date +%s) - t0 )) s"
echo "== precompile"; grep -v " ok$" "$OUT/precompile.txt" | cut -c1-220 | tail -12
echo "== $SET"; cut -c1-200 "$OUT/$SET.txt" | tail -60
