#!/bin/bash
# Session 5's first device call (< 8 min): every GPU test on the restructured tree (jit/, core/),
# the demo, the launch-overhead and compile-time baselines, and a host-side profile of
# ws.ops.scaled_matmul (issue 13's 0.7 ms per call). Logs under $OUT; a summary last.
#   PYTHONPATH=. bash scripts/gpu_session5_a.sh
set -u
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"
export PYTHONPATH=${PYTHONPATH:-.} PYTHONUNBUFFERED=1
cd "$(dirname "$0")/.."
python3 -m compileall -q warpstage > /dev/null
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-tests timeout 230 python3 -m pytest -m gpu -q -p no:cacheprovider \
    -n 8 tests > "$OUT/pytest_gpu.txt" 2>&1; echo "pytest rc $?" >> "$OUT/rc.txt"
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-demo timeout 40 python3 -m warpstage demo > "$OUT/demo.txt" 2>&1
echo "demo rc $?" >> "$OUT/rc.txt"
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-launch timeout 35 python3 benchmarks/launch_overhead.py \
    --batches 3 --launches 3000 > "$OUT/launch_overhead.txt" 2>&1; echo "launch rc $?" >> "$OUT/rc.txt"
timeout 70 python3 benchmarks/compile_time.py main attention fresh shared > "$OUT/compile_time.txt" 2>&1
echo "compile rc $?" >> "$OUT/rc.txt"
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-fp8 timeout 60 python3 scripts/profile_scaled_matmul.py \
    > "$OUT/profile_fp8.txt" 2>&1; echo "fp8 profile rc $?" >> "$OUT/rc.txt"
cat "$OUT/rc.txt"
echo "== pytest"; grep -E "^(FAILED|ERROR)" "$OUT/pytest_gpu.txt" | head -20; tail -1 "$OUT/pytest_gpu.txt"
echo "== demo"; tail -4 "$OUT/demo.txt"
echo "== launch"; tail -16 "$OUT/launch_overhead.txt"
echo "== compile"; grep -E "cold|disk hit|compiles across|^import|beyond" "$OUT/compile_time.txt" | head -24
echo "== fp8 profile"; tail -45 "$OUT/profile_fp8.txt"
