#!/usr/bin/env bash
# One device call for ws.layout (issue 15): the layout kernels of tests/lang/test_layout_tensor.py
# on the GPU (tests/gpu/test_layout_gpu.py), against the simulator's references; logs under $OUT.
# Run from the repository root: bash scripts/gpu_layout.sh   (about 1 minute)
set -uo pipefail
export PYTHONPATH=. PYTHONUNBUFFERED=1 WARPSTAGE_CACHE_DIR=/tmp/ws-cache
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/env.txt" 2>&1
timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider -rA tests/gpu/test_layout_gpu.py \
  > "$OUT/pytest_layout_gpu.txt" 2>&1
echo "pytest rc=$?" >> "$OUT/pytest_layout_gpu.txt"
echo "test                                              result"
grep -E "^(PASSED|FAILED|ERROR|SKIPPED)" "$OUT/pytest_layout_gpu.txt" | \
  awk '{n=$2; sub(/.*::/, "", n); printf "%-50s %s\n", n, $1}'
tail -1 "$OUT/pytest_layout_gpu.txt"
