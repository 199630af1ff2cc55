#!/bin/bash
# Session 13, the closing device call (~4 min, 326 s of device time left): (1) `warpstage demo`
# (call G's failed: the tile counters); (2) the compile rows in fresh processes (compile13's
# cuts merged); (3) the whole GPU suite on the final tree, as far as the time allows. Logs
# under $OUT.
set -u
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"; export OUT
cd "$(dirname "$0")/.."
export PYTHONPATH=. PYTHONUNBUFFERED=1
t0=$(date +%s)
python3 -m compileall -q warpstage benchmarks examples > /dev/null
timeout 50 python3 -m warpstage demo > "$OUT/demo.txt" 2>&1
echo "demo rc $? at $(( $(date +%s) - t0 )) s"
unset PYTHONDONTWRITEBYTECODE
timeout 45 python3 benchmarks/compile_time.py fresh > "$OUT/compile_time.txt" 2>&1
echo "compile rc $? at $(( $(date +%s) - t0 )) s"
export PYTHONDONTWRITEBYTECODE=1
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-s13h timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider \
    -n 8 tests > "$OUT/pytest_gpu.txt" 2>&1
echo "gpu pytest rc $? at $(( $(date +%s) - t0 )) s"
echo "== demo"; tail -6 "$OUT/demo.txt" | cut -c1-220
echo "== compile"; grep -E "kernel|cold|disk hit" "$OUT/compile_time.txt" | cut -c1-220 | head -14
echo "== gpu pytest"; grep -E "^(FAILED|ERROR)" "$OUT/pytest_gpu.txt" | head -20; tail -1 "$OUT/pytest_gpu.txt"
