#!/bin/bash
# Session 14, device call A (~6 min): (1) `warpstage demo` (session 13's fix of the tile
# counters, unverified on a GPU); (2) the compile rows in fresh processes (compile13's cuts,
# unmeasured on the H200); (3) `attention_ab.py --set d128b14` at D=128 non-causal S=1024
# (B = 4, 8, 16); (4) the whole GPU suite. Logs under $OUT.
set -u
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"; export OUT
cd "$(dirname "$0")/.."
export PYTHONPATH=. PYTHONUNBUFFERED=1
t0=$(date +%s)
python3 -m compileall -q warpstage benchmarks examples > /dev/null
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$OUT/smi.txt" 2>&1
timeout 60 python3 -m warpstage demo > "$OUT/demo.txt" 2>&1
echo "demo rc $? at $(( $(date +%s) - t0 )) s"
timeout 60 python3 benchmarks/compile_time.py fresh > "$OUT/compile_time.txt" 2>&1
echo "compile rc $? at $(( $(date +%s) - t0 )) s"
mkdir -p "$OUT/ab"
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-s14a-ab timeout 150 python3 benchmarks/attention_ab.py \
    --set d128b14 --rounds 15 --iters 20 --shapes "8,16,1024;4,16,1024;16,16,1024" \
    --out "$OUT/ab" > "$OUT/ab.txt" 2>&1
echo "ab rc $? at $(( $(date +%s) - t0 )) s"
export PYTHONDONTWRITEBYTECODE=1
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-s14a timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider \
    -n 8 tests > "$OUT/pytest_gpu.txt" 2>&1
echo "gpu pytest rc $? at $(( $(date +%s) - t0 )) s"
cat "$OUT/smi.txt"
echo "== demo"; tail -8 "$OUT/demo.txt" | cut -c1-220
echo "== compile"; grep -vE "^\s*$" "$OUT/compile_time.txt" | cut -c1-220 | tail -30
echo "== ab"; cut -c1-220 "$OUT/ab.txt" | grep -v "^$"
echo "== gpu pytest"; grep -E "^(FAILED|ERROR)" "$OUT/pytest_gpu.txt" | head -20; tail -1 "$OUT/pytest_gpu.txt"
