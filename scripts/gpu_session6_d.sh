#!/bin/bash
# Session 6's closing device call, part 2 (< 9.5 min): the attention table and chart with the
# session-6 defaults, GEMM bf16 4096^3 / 8192^3 and FP8 beside cuBLAS, the GEMM GPU tests
# (after mcast6 moved the producer role), then mcast6's cluster/multicast script if
# present. Logs under $OUT.     PYTHONPATH=. bash scripts/gpu_session6_d.sh
set -u
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"; export OUT
export PYTHONPATH=${PYTHONPATH:-.} PYTHONUNBUFFERED=1
cd "$(dirname "$0")/.."
t0=$(date +%s)
python3 -m compileall -q warpstage > /dev/null
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-attn timeout 220 python3 benchmarks/attention.py --chart \
    --head-dims 64,128 --out "$OUT" > "$OUT/attention.txt" 2>&1; echo "attention rc $?" >> "$OUT/rc.txt"
export WARPSTAGE_CACHE_DIR=/tmp/ws-cache-gemm
timeout 60 python3 benchmarks/gemm.py --no-sweep --shape 4096,4096,4096 --shape 8192,8192,8192 \
    > "$OUT/gemm.txt" 2>&1; echo "gemm rc $?" >> "$OUT/rc.txt"
timeout 40 python3 benchmarks/gemm.py --fp8 --iters 10 --repeats 3 --shape 4096,4096,4096 \
    --shape 8192,8192,8192 > "$OUT/gemm_fp8.txt" 2>&1; echo "fp8 rc $?" >> "$OUT/rc.txt"
timeout 100 python3 -m pytest -m gpu -q -p no:cacheprovider -n 8 tests/ops/test_matmul_gpu.py \
    tests/gpu/test_scaled_matmul_gpu.py tests/lang/test_wgmma_fp8.py > "$OUT/pytest_matmul.txt" 2>&1
echo "matmul GPU tests rc $?" >> "$OUT/rc.txt"
if [ -f scripts/gpu_mcast6.sh ]; then
  timeout 150 bash scripts/gpu_mcast6.sh > "$OUT/mcast6.txt" 2>&1; echo "mcast6 rc $?" >> "$OUT/rc.txt"
fi
cat "$OUT/rc.txt"
echo "== attention"; grep -E "x cuDNN|FA4|flash-attn" "$OUT/attention.txt" | cut -c1-230 | tail -26
echo "== gemm"; grep -E "^\| [0-9]" "$OUT/gemm.txt" | cut -c1-160
echo "== fp8"; grep -E "^\| [0-9]" "$OUT/gemm_fp8.txt" | tail -2 | cut -c1-160
echo "== matmul GPU tests (after mcast6's producer split)"; grep -E "^(FAILED|ERROR)" "$OUT/pytest_matmul.txt" | head; tail -1 "$OUT/pytest_matmul.txt"
echo "== mcast6"; tail -16 "$OUT/mcast6.txt" 2>/dev/null | cut -c1-200
echo "total $(( $(date +%s) - t0 )) s"
