#!/usr/bin/env bash
# One device call for the gemm6 branch (issue 13: small-M bf16 GEMM, the per-shape plan of
# warpstage/ops/matmul_plan.py), under 4 minutes: the GEMM GPU tests the plan touches (LLM
# shapes, the new small-M plan rows, split-K, 64-row tiles), then benchmarks/gemm_plan.py:
# M in {64, 128, 256} x (N, K) in {(4096, 4096), (11008, 4096), (4096, 11008), (128256, 4096)},
# each candidate tile rows x width x K splits, the plan's choice and cuBLAS, device time.
# Logs under $OUT; the table last.   From the repo root:  bash scripts/gpu_gemm6.sh
set -uo pipefail
export PYTHONPATH=. PYTHONUNBUFFERED=1 WARPSTAGE_CACHE_DIR=/tmp/ws-cache-gemm6
OUT=${OUT:-$(mktemp -d)}; export OUT; mkdir -p "$OUT"
export WARPSTAGE_COMMIT=${WARPSTAGE_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/env.txt" 2>&1
T=tests/ops/test_matmul_gpu.py
timeout 120 python3 -m pytest -m gpu -q -p no:cacheprovider -n 4 "$T::test_llm_shapes" \
    "$T::test_small_m_plans" "$T::test_split_k" "$T::test_64_row_tiles" \
    "$T::test_split_k_dtypes_epilogue_batched_transposed" > "$OUT/pytest_gpu.txt" 2>&1
gpu_rc=$?
timeout 110 python3 benchmarks/gemm_plan.py --iters 10 --repeats 3 > "$OUT/gemm_plan.txt" 2>&1
plan_rc=$?
echo "== gemm6 at $WARPSTAGE_COMMIT on $(head -1 "$OUT/env.txt")"
printf '%-12s %-4s %s\n' "GPU tests" "$gpu_rc" "$(tail -1 "$OUT/pytest_gpu.txt")"
printf '%-12s %-4s\n' "gemm_plan" "$plan_rc"
grep -hE "^(FAILED|ERROR)" "$OUT/pytest_gpu.txt" | head -10
grep -E "^  .* at [0-9]+x" "$OUT/gemm_plan.txt" | head -5
grep -E "^\| (M x N|---|[0-9])" "$OUT/gemm_plan.txt" | tail -14
