#!/bin/bash
# Session 8, device call A (< 9.8 min; carry .whl with cu13.part1, kept in /tmp for call B):
# the whole GPU suite, gemm7's stream-K sweep, launch7's launch rows, glue and pure-C floor.
# Logs under $OUT.     bash scripts/gpu_session8_a.sh
set -u
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"; export OUT
cd "$(dirname "$0")/.."
export PYTHONPATH=. PYTHONUNBUFFERED=1
t0=$(date +%s)
bash scripts/fa4_install.sh
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
  python3 -c "import sys, torch, triton; print('python', sys.version.split()[0], 'torch', torch.__version__, 'triton', triton.__version__)"; } > "$OUT/env.txt" 2>&1
python3 -m compileall -q warpstage > /dev/null
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-s8 timeout 215 python3 -m pytest -m gpu -q -p no:cacheprovider -n 8 tests \
    > "$OUT/pytest_gpu.txt" 2>&1
echo "gpu pytest rc $? at $(( $(date +%s) - t0 )) s"
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-gemm7 timeout 235 python3 benchmarks/gemm_stream_k.py --iters 10 --repeats 3 \
    > "$OUT/gemm_stream_k.txt" 2>&1
echo "stream-K bench rc $? at $(( $(date +%s) - t0 )) s"
export WARPSTAGE_CACHE_DIR=/tmp/ws-cache-launch7
timeout 70 python3 benchmarks/launch_overhead.py --batches 7 --launches 5000 > "$OUT/launch_overhead.txt" 2>&1
timeout 20 python3 benchmarks/launch_glue.py --reps 100 > "$OUT/launch_glue.txt" 2>&1
CC=$(command -v gcc || command -v cc || true)
if [ -n "$CC" ] && "$CC" -O2 -o /tmp/launch_floor scripts/launch_floor.c -ldl 2>"$OUT/floor_cc.txt"; then
    timeout 15 /tmp/launch_floor 20000 5 > "$OUT/launch_floor.txt" 2>&1
else echo "C floor skipped (cc: ${CC:-none})" > "$OUT/launch_floor.txt"; fi
echo "launch rc at $(( $(date +%s) - t0 )) s"
echo "== gpu pytest"; grep -E "^(FAILED|ERROR)" "$OUT/pytest_gpu.txt" | head -20; tail -1 "$OUT/pytest_gpu.txt"
echo "== stream-K"; grep -E "^\| (M|[0-9])" "$OUT/gemm_stream_k.txt" | tail -14 | cut -c1-260
grep -E "CHECK FAILED|Error" "$OUT/gemm_stream_k.txt" | head -5
echo "== launch"; grep -E "^ws |^  |^raw|^torch|^Triton|^CuTe|^tvm|^C path" "$OUT/launch_overhead.txt" | cut -c1-120
grep -E "glue|stub alone" "$OUT/launch_glue.txt"; cat "$OUT/launch_floor.txt" | tail -8
