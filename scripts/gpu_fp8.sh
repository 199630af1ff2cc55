#!/usr/bin/env bash
# One device call for the fp8 branch (issue 13's FP8 GEMM), under 3 minutes: the FP8 GPU tests
# (conversions bit-exact against the simulator's ir/fp8.py, the fp8 wgmma tile, scaled_matmul
# against the decoded f32 product and torch._scaled_mm), one bf16 matmul GPU test (its PTX is
# byte-identical to main's, checked on the CPU), the CPU SASS checks of the fp8 kernel, then the
# FP8 benchmark. Logs under $OUT. From the repo root:
#   bash scripts/gpu_fp8.sh
set -uo pipefail
export PYTHONPATH=. PYTHONUNBUFFERED=1 WARPSTAGE_CACHE_DIR=/tmp/ws-cache-fp8
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/env.txt" 2>&1
ptxas --version | tail -1 >> "$OUT/env.txt" 2>&1
timeout 90 python3 -m pytest -m gpu -q -p no:cacheprovider tests/gpu/test_scaled_matmul_gpu.py \
    > "$OUT/pytest_fp8_gpu.txt" 2>&1
fp8_rc=$?
timeout 25 python3 -m pytest -m gpu -q -p no:cacheprovider tests/gpu/test_matmul_gpu.py \
    -k "square_and_tails and 4096" > "$OUT/pytest_matmul_gpu.txt" 2>&1
mm_rc=$?
timeout 30 python3 -m pytest -q -p no:cacheprovider -rs tests/ops/test_scaled_matmul_ptx.py \
    > "$OUT/pytest_sass.txt" 2>&1
sass_rc=$?
timeout 55 python3 benchmarks/gemm.py --fp8 --iters 10 --repeats 3 --shape 4096,4096,4096 \
    --shape 8192,8192,8192 --shape 128,4096,4096 --shape 4096,11008,4096 \
    --shape 16384,4096,4096 --shape 4096,128256,4096 > "$OUT/bench_fp8.txt" 2>&1
bench_rc=$?
echo "== fp8 branch on $(head -1 "$OUT/env.txt"), $(tail -1 "$OUT/env.txt")"
printf '%-26s %-5s %s\n' "step" "rc" "summary"
printf '%-26s %-5s %s\n' "fp8 GPU tests" "$fp8_rc" "$(tail -1 "$OUT/pytest_fp8_gpu.txt")"
printf '%-26s %-5s %s\n' "bf16 matmul GPU tests" "$mm_rc" "$(tail -1 "$OUT/pytest_matmul_gpu.txt")"
printf '%-26s %-5s %s\n' "SASS checks (CPU)" "$sass_rc" "$(tail -1 "$OUT/pytest_sass.txt")"
printf '%-26s %-5s\n' "benchmark --fp8" "$bench_rc"
grep -hE "^(FAILED|ERROR)" "$OUT/pytest_fp8_gpu.txt" "$OUT/pytest_matmul_gpu.txt" \
    "$OUT/pytest_sass.txt" | head -12
grep -E "^\| " "$OUT/bench_fp8.txt" | tail -8
