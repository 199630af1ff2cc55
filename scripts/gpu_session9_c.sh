#!/bin/bash
# Session 9, device call C (< 10 min): the whole GPU suite (attn9 merged, dynamic_tiles the
# D=128 causal / short non-causal default, a counter pair per call), the attention table and
# chart through the public op, `warpstage demo`, and the launch rows. Logs under $OUT.
set -u
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"; export OUT
cd "$(dirname "$0")/.."
export PYTHONPATH=. PYTHONUNBUFFERED=1
t0=$(date +%s)
python3 -m compileall -q warpstage benchmarks > /dev/null
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-c9 timeout 240 python3 -m pytest -m gpu -q -p no:cacheprovider -n 8 tests \
    > "$OUT/pytest_gpu.txt" 2>&1
echo "gpu pytest rc $? at $(( $(date +%s) - t0 )) s"
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-attn-c9 timeout 100 python3 benchmarks/attention.py --chart \
    --head-dims 64,128 --out "$OUT" > "$OUT/attention.txt" 2>&1
echo "attention rc $? at $(( $(date +%s) - t0 )) s"
timeout 60 python3 -m warpstage demo > "$OUT/demo.txt" 2>&1
echo "demo rc $? at $(( $(date +%s) - t0 )) s"
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-launch-c9 timeout 70 python3 benchmarks/launch_overhead.py --batches 7 --launches 5000 > "$OUT/launch_overhead.txt" 2>&1
echo "launch rc $? at $(( $(date +%s) - t0 )) s"
echo "== gpu pytest"; grep -E "^(FAILED|ERROR)" "$OUT/pytest_gpu.txt" | head -20; tail -1 "$OUT/pytest_gpu.txt"
echo "== attention"; grep -E "x cuDNN|Error" "$OUT/attention.txt" | cut -c1-200
echo "== demo"; tail -6 "$OUT/demo.txt" | cut -c1-200
echo "== launch"; grep -E "^ws |^  |^raw|^torch|^Triton|^CuTe|^tvm|^C path" "$OUT/launch_overhead.txt" | cut -c1-120
