#!/usr/bin/env bash
# One device call for branch review13b (issue 13's fresh-user review): the GPU tests of
# ws.ops.matmul / ws.ops.scaled_matmul / the gemm examples, after the changes to the plan path
# (op_plans.py: a plan keeps the recorded layout of out= against its inputs), the host checks
# (out over an input, requires_grad of bias / out / epilogue tensors, numpy scalars), the
# epilogue key (fields through static_key) and the traced epilogue (apply's result checked,
# tensor fields as stand-ins). Expected: about 2-4 minutes on the H200 (compiles included; the
# matmul GPU tests took 23 s warm in session 9, the whole GPU suite 164 s at -n 8).
# Logs under $OUT. Run from the repo root:  bash scripts/gpu_review13b.sh
set -uo pipefail
export PYTHONPATH=. PYTHONUNBUFFERED=1 WARPSTAGE_CACHE_DIR=/tmp/ws-cache-review13b
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/env.txt" 2>&1
start=$(date +%s)
timeout 540 python3 -m pytest -m gpu -q -p no:cacheprovider -n 4 tests -k "matmul or gemm" \
    > "$OUT/pytest_gpu_matmul.txt" 2>&1
rc=$?
echo "== review13b on $(cat "$OUT/env.txt"), $(( $(date +%s) - start )) s"
printf '%-28s %-6s %s\n' "pytest -m gpu (matmul|gemm)" "$rc" "$(tail -1 "$OUT/pytest_gpu_matmul.txt")"
grep -E "^(FAILED|ERROR)" "$OUT/pytest_gpu_matmul.txt" | head -20
exit $rc
