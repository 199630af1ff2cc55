#!/bin/bash
# Session 14, device call D (~3 min): (1) cold compiles, three trees taking turns in one window
# (`compile_trees.py`: _trees/s13a = 47b86a8, session 13 call A's tree, before compile13;
# _trees/s14 = b223f7c, this session's start; . = this tree, the new short defaults), rows
# wgmma:64 and wgmma:128 (the op's policies for S = 1024); (2) sweep d128f14 at the flagship's
# shapes. Logs under $OUT.
set -u
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"; export OUT
cd "$(dirname "$0")/.."
export PYTHONPATH=. PYTHONUNBUFFERED=1
t0=$(date +%s)
for t in . _trees/s13a _trees/s14; do python3 -m compileall -q $t/warpstage > /dev/null; done
python3 -m compileall -q benchmarks > /dev/null
timeout 150 python3 benchmarks/compile_trees.py --trees _trees/s13a,_trees/s14,. \
    --rows wgmma:64,wgmma:128 --rounds 3 > "$OUT/trees.txt" 2>&1
echo "trees rc $? at $(( $(date +%s) - t0 )) s"
mkdir -p "$OUT/f"
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-s14d timeout 150 python3 benchmarks/attention_ab.py \
    --set d128f14 --rounds 15 --iters 20 --shapes "4,16,4096;2,16,8192" --out "$OUT/f" \
    > "$OUT/f.txt" 2>&1
echo "ab rc $? at $(( $(date +%s) - t0 )) s"
echo "== trees"; cut -c1-200 "$OUT/trees.txt" | tail -30
echo "== ab"; cut -c1-200 "$OUT/f.txt" | grep -v "^$"
