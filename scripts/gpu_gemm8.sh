#!/bin/bash
# gemm8 (issue 13's must-shows on the H200, < 5 min): the GEMM GPU tests (bf16 squares 64 to
# 16384, tails M = 1/17/1000 and K = 8/24, the 20 LLM shapes, all transposes, batched, fp16 and
# the out dtypes, split-K, stream-K, clusters; FP8 against torch._scaled_mm incl. 16384^3 and
# N = 128256), then benchmarks/gemm.py in one run: squares 1024^3-16384^3 and the 20 LLM shapes
# (ws.ops, ws kernel, cuBLAS, our persistent TMA Triton matmul), FP8 e4m3 4096^3 / 8192^3
# against torch._scaled_mm, the tables, $OUT/gemm.png and $OUT/gemm_results.md (the
# RESULTS.md block). Logs under $OUT.      PYTHONPATH=. bash scripts/gpu_gemm8.sh
set -u
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"; export OUT
export PYTHONPATH=${PYTHONPATH:-.} PYTHONUNBUFFERED=1 WARPSTAGE_CACHE_DIR=/tmp/ws-cache-gemm8
export WARPSTAGE_COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
cd "$(dirname "$0")/.."
t0=$(date +%s)
python3 -m compileall -q warpstage > /dev/null
timeout 140 python3 -m pytest -m gpu -q -p no:cacheprovider -n 8 tests/ops/test_matmul_gpu.py \
    tests/gpu/test_scaled_matmul_gpu.py tests/lang/test_wgmma_fp8.py \
    > "$OUT/pytest_gemm.txt" 2>&1
echo "GEMM GPU tests rc $? at $(( $(date +%s) - t0 )) s" >> "$OUT/rc.txt"
timeout 145 python3 benchmarks/gemm.py --no-sweep --iters 10 --repeats 3 > "$OUT/gemm.txt" 2>&1
echo "gemm.py rc $? at $(( $(date +%s) - t0 )) s" >> "$OUT/rc.txt"
cat "$OUT/rc.txt"
echo "== GEMM GPU tests"; grep -E "^(FAILED|ERROR)" "$OUT/pytest_gemm.txt" | head -12
tail -1 "$OUT/pytest_gemm.txt"
echo "== bf16 (TFLOP/s: ws.ops | ws kernel | cuBLAS | Triton | floor | kernel dev | cuBLAS dev | kernel / cuBLAS | dev ratio)"
grep -E "^\| [0-9]" "$OUT/gemm.txt" | head -25 | cut -d'|' -f2-12
echo "== FP8 (ws.ops | ws.ops dev | ws kernel | cuBLAS | cuBLAS dev | fast | bf16 dev | floor | ws/cuBLAS | ws/fast)"
grep -E "^FP8 \|" "$OUT/gemm.txt" | cut -d'|' -f2-12
grep -E "Error|Traceback" "$OUT/gemm.txt" | head -5
ls "$OUT"/gemm.png 2>/dev/null || echo "no chart"
echo "total $(( $(date +%s) - t0 )) s"
