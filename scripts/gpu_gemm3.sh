#!/usr/bin/env bash
# One device call for the gemm3 branch (issue 13: FP8 host path, batched FP8, tune= for
# scaled_matmul, 64-row tiles), under 4 minutes: the GPU tests of all four (FP8 file in full;
# matmul's 64-row, split-K and batched cases), the host-cost benchmark (pretend GPU, CPU), then
# benchmarks/gemm.py --small-m (bf16 M in {64, 128, 256}, device time and end to end, the
# tile-rows x width x splits sweep) and --fp8 at 4096^3 / 8192^3 (end to end and device time,
# beside torch._scaled_mm and cuBLAS bf16). Logs under $OUT; a short table last.
# From the repo root:  bash scripts/gpu_gemm3.sh
set -uo pipefail
export PYTHONPATH=. PYTHONUNBUFFERED=1 WARPSTAGE_CACHE_DIR=/tmp/ws-cache-gemm3
OUT=${OUT:-$(mktemp -d)}; export OUT; mkdir -p "$OUT"
export WARPSTAGE_COMMIT=${WARPSTAGE_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/env.txt" 2>&1
# tests/lang/test_wgmma_fp8.py first: test_scaled_matmul_gpu imports its kernel (pytest puts a
# collected file's folder on sys.path); its own tests are not gpu-marked, so deselected
timeout 100 python3 -m pytest -m gpu -q -p no:cacheprovider -n 4 tests/lang/test_wgmma_fp8.py \
    tests/gpu/test_scaled_matmul_gpu.py \
    tests/ops/test_matmul_gpu.py::test_64_row_tiles tests/ops/test_matmul_gpu.py::test_split_k \
    tests/ops/test_matmul_gpu.py::test_batched tests/ops/test_matmul_gpu.py::test_epilogues \
    > "$OUT/pytest_gpu.txt" 2>&1
gpu_rc=$?
timeout 20 python3 benchmarks/gemm_host.py --calls 500 > "$OUT/gemm_host.txt" 2>&1
host_rc=$?
timeout 75 python3 benchmarks/gemm.py --small-m --iters 20 --repeats 5 > "$OUT/bench_small_m.txt" 2>&1
small_rc=$?
timeout 40 python3 benchmarks/gemm.py --fp8 --iters 10 --repeats 3 --shape 4096,4096,4096 \
    --shape 8192,8192,8192 > "$OUT/bench_fp8.txt" 2>&1
fp8_rc=$?
echo "== gemm3 at $WARPSTAGE_COMMIT on $(head -1 "$OUT/env.txt")"
printf '%-24s %-4s %s\n' "step" "rc" "summary"
printf '%-24s %-4s %s\n' "GPU tests" "$gpu_rc" "$(tail -1 "$OUT/pytest_gpu.txt")"
printf '%-24s %-4s %s\n' "gemm_host (pretend GPU)" "$host_rc" "$(grep -E 'fp8|a, w.T, out' "$OUT/gemm_host.txt" | tr -s ' ' | tr '\n' ';')"
printf '%-24s %-4s\n' "bench --small-m" "$small_rc"
printf '%-24s %-4s\n' "bench --fp8" "$fp8_rc"
grep -hE "^(FAILED|ERROR)" "$OUT/pytest_gpu.txt" | head -10
grep -E "^\| [0-9]" "$OUT/bench_small_m.txt" | tail -12 | cut -c1-200
grep -E "^Policies" "$OUT/bench_small_m.txt" | sort -u | cut -c1-700
grep -E "^\| [0-9]" "$OUT/bench_fp8.txt" | tail -2
