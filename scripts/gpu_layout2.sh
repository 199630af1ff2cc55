#!/usr/bin/env bash
# One device call for issue 15's port of the library's kernels to ws.layout: the GEMM and the
# wgmma FlashAttention timed from the old tree (bench_old/, made on the host beforehand:
#   rm -rf bench_old && mkdir bench_old && git archive <old commit> | tar -x -C bench_old)
# and from this one in one run (benchmarks/layout_port.py), then the layout GPU tests.
# Run from the repository root: bash scripts/gpu_layout2.sh   (about 2-3 minutes); logs under $OUT.
set -uo pipefail
export PYTHONPATH=. PYTHONUNBUFFERED=1
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader > "$OUT/env.txt" 2>&1
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-tests timeout 80 python3 -m pytest -m gpu -q \
  -p no:cacheprovider -rA tests/gpu/test_layout_gpu.py > "$OUT/pytest_layout_gpu.txt" 2>&1
echo "pytest rc=$?" >> "$OUT/pytest_layout_gpu.txt"
timeout 300 python3 benchmarks/layout_port.py --old-tree bench_old/ --out "$OUT" \
  > "$OUT/layout_port.txt" 2>&1
echo "layout_port rc=$?" >> "$OUT/layout_port.txt"
tail -1 "$OUT/pytest_layout_gpu.txt"
tail -9 "$OUT/layout_port.txt"
