#!/bin/bash
# Session 14, the closing device call F (~6 min): (1) the compile rows (`compile_time.py fresh`)
# on the final tree; (2) cold compiles, three trees taking turns (`compile_trees.py`, printed
# after every round): _trees/s14 = b223f7c (the session's start), _trees/k14 = 6b08422 (the
# new short defaults and the review's fixes, before the compile helpers' merges), . (final);
# (3) the whole GPU suite. Logs under $OUT.
set -u
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"; export OUT
cd "$(dirname "$0")/.."
export PYTHONPATH=. PYTHONUNBUFFERED=1
t0=$(date +%s)
for t in . _trees/s14 _trees/k14; do python3 -m compileall -q $t/warpstage > /dev/null; done
python3 -m compileall -q benchmarks examples > /dev/null
timeout 70 python3 benchmarks/compile_time.py fresh > "$OUT/compile_time.txt" 2>&1
echo "compile rc $? at $(( $(date +%s) - t0 )) s"
timeout 110 python3 benchmarks/compile_trees.py --trees _trees/s14,_trees/k14,. \
    --rows wgmma:128,wgmma:64 --rounds 2 > "$OUT/trees.txt" 2>&1
echo "trees rc $? at $(( $(date +%s) - t0 )) s"
export PYTHONDONTWRITEBYTECODE=1
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-s14f timeout 240 python3 -m pytest -m gpu -q -p no:cacheprovider \
    -n 8 tests > "$OUT/pytest_gpu.txt" 2>&1
echo "gpu pytest rc $? at $(( $(date +%s) - t0 )) s"
echo "== compile"; grep -vE "^\s*$" "$OUT/compile_time.txt" | cut -c1-230 | tail -13
echo "== trees"; cut -c1-230 "$OUT/trees.txt" | tail -9
echo "== gpu pytest"; grep -E "^(FAILED|ERROR)" "$OUT/pytest_gpu.txt" | head -20; tail -1 "$OUT/pytest_gpu.txt"
