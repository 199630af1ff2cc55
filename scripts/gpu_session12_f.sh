#!/bin/bash
# Session 12, the closing device call (< 9.5 min): (1) D=64/128 wgmma device-time A/B of
# base12/ (8a6157b, main before the compile14b merge; extracted untracked:
#   mkdir base12 && git archive 8a6157b | tar -x -C base12) against this tree, rounds in turn;
# (2) the whole GPU suite on the merged tree; (3) `warpstage demo`; (4) the compile rows in fresh
# processes. Logs under $OUT.
set -u
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"; export OUT
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
t0=$(date +%s)
for t in base12 .; do [ -d "$t/warpstage" ] && python3 -m compileall -q "$t/warpstage" > /dev/null; done
python3 -m compileall -q benchmarks > /dev/null
if [ -d base12/warpstage ]; then
    timeout 180 python3 benchmarks/attention_trees.py --trees base12,. --rounds 4 \
        --only wgmma:64,wgmma:128 --shapes "4,16,4096;16,16,1024;8,16,1024" --cache /tmp \
        > "$OUT/trees.txt" 2>&1
    echo "trees rc $? at $(( $(date +%s) - t0 )) s"
fi
export PYTHONPATH=.
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-s12f timeout 250 python3 -m pytest -m gpu -q -p no:cacheprovider \
    -n 8 tests > "$OUT/pytest_gpu.txt" 2>&1
echo "gpu pytest rc $? at $(( $(date +%s) - t0 )) s"
timeout 55 python3 -m warpstage demo > "$OUT/demo.txt" 2>&1
echo "demo rc $? at $(( $(date +%s) - t0 )) s"
unset PYTHONDONTWRITEBYTECODE
timeout 75 python3 benchmarks/compile_time.py fresh > "$OUT/compile_time.txt" 2>&1
echo "compile rc $? at $(( $(date +%s) - t0 )) s"
echo "== trees"; grep -v "^round" "$OUT/trees.txt" | cut -c1-160
echo "== gpu pytest"; grep -E "^(FAILED|ERROR)" "$OUT/pytest_gpu.txt" | head -20; tail -1 "$OUT/pytest_gpu.txt"
echo "== demo"; tail -6 "$OUT/demo.txt" | cut -c1-200
echo "== compile"; grep -E "kernel|cold|disk hit" "$OUT/compile_time.txt" | cut -c1-150
