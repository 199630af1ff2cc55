#!/usr/bin/env bash
# gemm9's device call (issue 13, end-to-end time at small M): the GEMM GPU tests (the rotation
# past the kept plan sets / descriptors, maps replaced by cuTensorMapReplaceAddress), the host
# time per call on the GPU (benchmarks/gemm_host_gpu.py), then benchmarks/gemm.py at the M=128
# LLM rows (B = W.T) and at 4096^3 / 8192^3: ws.ops end to end and in device time beside
# cuBLAS. Under 5 minutes wall; logs under $OUT. Run from the repo root:
#   bash scripts/gpu_gemm9.sh
set -uo pipefail
export PYTHONPATH=. PYTHONUNBUFFERED=1
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/env.txt" 2>&1
timeout 120 python3 -m pytest -q -m gpu -n 8 -p no:cacheprovider tests/ops/test_matmul*.py \
    > "$OUT/pytest_gpu.txt" 2>&1
gpu_rc=$?
timeout 40 python3 benchmarks/gemm_host_gpu.py > "$OUT/host_gpu.txt" 2>&1
host_rc=$?
timeout 80 python3 benchmarks/gemm.py --no-sweep --no-fp8 --kmajor --iters 20 --repeats 5 \
    --shape 128,4096,4096 --shape 128,11008,4096 --shape 128,4096,11008 \
    --shape 128,128256,4096 > "$OUT/gemm_llm.txt" 2>&1
llm_rc=$?
timeout 50 python3 benchmarks/gemm.py --no-sweep --no-fp8 --iters 20 --repeats 5 \
    --shape 4096,4096,4096 --shape 8192,8192,8192 > "$OUT/gemm_squares.txt" 2>&1
sq_rc=$?
echo "== gemm9 on $(cat "$OUT/env.txt")"
printf '%-34s %-4s %s\n' "step" "rc" "summary"
printf '%-34s %-4s %s\n' "pytest -m gpu tests/ops/test_matmul*" "$gpu_rc" "$(tail -1 "$OUT/pytest_gpu.txt")"
grep -E "^(FAILED|ERROR)" "$OUT/pytest_gpu.txt" | head -10
printf '%-34s %-4s\n' "gemm_host_gpu.py" "$host_rc"
cat "$OUT/host_gpu.txt"
printf '%-34s %-4s / %s\n' "gemm.py (M=128 rows / squares)" "$llm_rc" "$sq_rc"
grep -hE "^\| M x N" "$OUT/gemm_llm.txt" "$OUT/gemm_squares.txt" | head -1
grep -hE "^\| [0-9]" "$OUT/gemm_llm.txt" "$OUT/gemm_squares.txt" | grep -v "\]$"
grep -hE "Error|error:" "$OUT/gemm_llm.txt" "$OUT/gemm_squares.txt" | head -5
