#!/bin/bash
# Session 10, the closing device call (< 9 min): the whole GPU suite on the merged tree, the
# attention table through the public op (now interleaved), `warpstage demo`, the launch rows
# and the compile rows (fresh processes). Logs under $OUT.
set -u
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"; export OUT
cd "$(dirname "$0")/.."
export PYTHONPATH=. PYTHONUNBUFFERED=1
t0=$(date +%s)
python3 -m compileall -q warpstage benchmarks > /dev/null
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-d10 timeout 240 python3 -m pytest -m gpu -q -p no:cacheprovider -n 8 tests \
    > "$OUT/pytest_gpu.txt" 2>&1
echo "gpu pytest rc $? at $(( $(date +%s) - t0 )) s"
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-attn-d10 timeout 110 python3 benchmarks/attention.py --chart \
    --head-dims 64,128 --out "$OUT" > "$OUT/attention.txt" 2>&1
echo "attention rc $? at $(( $(date +%s) - t0 )) s"
timeout 60 python3 -m warpstage demo > "$OUT/demo.txt" 2>&1
echo "demo rc $? at $(( $(date +%s) - t0 )) s"
timeout 40 python3 benchmarks/launch_overhead.py > "$OUT/launch.txt" 2>&1
echo "launch rc $? at $(( $(date +%s) - t0 )) s"
unset PYTHONDONTWRITEBYTECODE
timeout 60 python3 benchmarks/compile_time.py fresh > "$OUT/compile_time.txt" 2>&1
echo "compile rc $? at $(( $(date +%s) - t0 )) s"
echo "== gpu pytest"; grep -E "^(FAILED|ERROR)" "$OUT/pytest_gpu.txt" | head -20; tail -1 "$OUT/pytest_gpu.txt"
echo "== attention"; grep -E "x cuDNN|Error" "$OUT/attention.txt" | cut -c1-200
echo "== demo"; tail -5 "$OUT/demo.txt" | cut -c1-200
echo "== launch"; tail -25 "$OUT/launch.txt" | cut -c1-160
echo "== compile"; grep -E "trivial kernel|cold|disk hit" "$OUT/compile_time.txt" | cut -c1-160
