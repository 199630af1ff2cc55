#!/bin/bash
# Session 4's closing device call (< 10 min): every GPU test (8 xdist workers), the autotuner's
# benchmark (issue 16), the launch overhead rows (14/17), the compile-time rows (14), the FP8
# GEMM against torch._scaled_mm (13) and the demo. Logs under $OUT; a summary last.
#   PYTHONPATH=. bash scripts/gpu_session4_final.sh
set -u
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"
export PYTHONPATH=${PYTHONPATH:-.} PYTHONUNBUFFERED=1
cd "$(dirname "$0")/.."
python3 -m compileall -q warpstage > /dev/null
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-tests timeout 230 python3 -m pytest -m gpu -q -p no:cacheprovider \
    -n 8 tests > "$OUT/pytest_gpu.txt" 2>&1; echo "pytest rc $?" >> "$OUT/rc.txt"
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-demo timeout 30 python3 -m warpstage demo > "$OUT/demo.txt" 2>&1
echo "demo rc $?" >> "$OUT/rc.txt"
OUT=$OUT timeout 170 python3 benchmarks/autotune.py > "$OUT/autotune_bench.txt" 2>&1
echo "autotune rc $?" >> "$OUT/rc.txt"
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-launch timeout 35 python3 benchmarks/launch_overhead.py \
    --batches 3 --launches 3000 > "$OUT/launch_overhead.txt" 2>&1; echo "launch rc $?" >> "$OUT/rc.txt"
timeout 70 python3 benchmarks/compile_time.py main attention fresh shared > "$OUT/compile_time.txt" 2>&1
echo "compile rc $?" >> "$OUT/rc.txt"
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-fp8 timeout 40 python3 benchmarks/gemm.py --fp8 --iters 10 \
    --repeats 3 --shape 4096,4096,4096 --shape 8192,8192,8192 > "$OUT/bench_fp8.txt" 2>&1
echo "fp8 rc $?" >> "$OUT/rc.txt"
cat "$OUT/rc.txt"
echo "== pytest"; grep -E "^(FAILED|ERROR)" "$OUT/pytest_gpu.txt" | head -20; tail -1 "$OUT/pytest_gpu.txt"
echo "== demo"; tail -4 "$OUT/demo.txt"
echo "== autotune"; tail -30 "$OUT/autotune_bench.txt"
echo "== launch"; tail -16 "$OUT/launch_overhead.txt"
echo "== compile"; grep -E "cold|disk hit|compiles across|^import|beyond" "$OUT/compile_time.txt" | head -24
echo "== fp8"; grep -E "^\| |Error" "$OUT/bench_fp8.txt" | tail -8
