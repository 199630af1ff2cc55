#!/bin/bash
# gemm7 (issue 13): stream-K against data-parallel ws.ops.matmul and cuBLAS in one process
# (benchmarks/gemm_stream_k.py: 4096^3, 8192^3, M in {128, 256, 4096} x (N, K) in {(4096, 4096),
# (11008, 4096), (4096, 11008)}, device time, with correctness / determinism / counter checks
# per stream-K row), then the stream-K GPU tests. < 6 min. Logs under $OUT.
#     PYTHONPATH=. bash scripts/gpu_gemm7.sh
set -u
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"; export OUT
export PYTHONPATH=${PYTHONPATH:-.} PYTHONUNBUFFERED=1 WARPSTAGE_CACHE_DIR=/tmp/ws-cache-gemm7
cd "$(dirname "$0")/.."
t0=$(date +%s)
python3 -m compileall -q warpstage > /dev/null
timeout 270 python3 benchmarks/gemm_stream_k.py --iters 10 --repeats 3 > "$OUT/gemm_stream_k.txt" 2>&1
echo "bench rc $?" >> "$OUT/rc.txt"
timeout 60 python3 -m pytest -q -p no:cacheprovider -n 4 tests/ops/test_matmul_gpu.py \
    tests/ops/test_op_plans.py -k "stream_k" > "$OUT/pytest_stream_k.txt" 2>&1
echo "stream-K GPU tests rc $?" >> "$OUT/rc.txt"
cat "$OUT/rc.txt"
echo "== stream-K vs data-parallel vs cuBLAS (TFLOP/s, device time)"
grep -E "^\| (M|[0-9])" "$OUT/gemm_stream_k.txt" | tail -12 | cut -c1-260
grep -E "CHECK FAILED|Error" "$OUT/gemm_stream_k.txt" | head -8
echo "== stream-K GPU tests"; grep -E "^(FAILED|ERROR)" "$OUT/pytest_stream_k.txt" | head; tail -1 "$OUT/pytest_stream_k.txt"
echo "total $(( $(date +%s) - t0 )) s"
