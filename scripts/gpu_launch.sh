#!/usr/bin/env bash
# One device call for issue 14 (launch path, prepared launches, CUDA graphs, custom ops, disk-cache
# hits): the new GPU tests, the launch and compile benchmarks, then the whole GPU suite; logs under
# $OUT, a short table last. Run from the repository root: bash scripts/gpu_launch.sh
set -uo pipefail
export PYTHONPATH=. PYTHONUNBUFFERED=1 WARPSTAGE_CACHE_DIR=/tmp/ws-cache-launch
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"
rm -rf "$WARPSTAGE_CACHE_DIR"
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } 2>&1 | tee "$OUT/env.txt"
timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider tests/gpu/test_graphs_gpu.py \
  tests/gpu/test_torch_compile_gpu.py tests/gpu/test_fast_call_gpu.py tests/gpu/test_tma_launch_gpu.py \
  2>&1 | tee "$OUT/pytest_new_gpu.txt" | tail -15
timeout 90 python3 benchmarks/launch_overhead.py --batches 7 --launches 5000 2>&1 | tee "$OUT/launch_overhead.txt"
timeout 90 python3 benchmarks/compile_time.py 2>&1 | tee "$OUT/compile_time.txt"
timeout 45 python3 benchmarks/profile_launch.py --calls 3000 2>&1 | tee "$OUT/profile_launch.txt" | head -16
timeout 200 python3 -m pytest -m gpu -q -x -p no:cacheprovider tests 2>&1 | tee "$OUT/pytest_gpu.txt" | tail -5
echo "== summary =="
tail -1 "$OUT/pytest_new_gpu.txt"; tail -1 "$OUT/pytest_gpu.txt"
grep -E "^ws |^  the same|^raw|^torch|^Triton|^CuTe" "$OUT/launch_overhead.txt"
grep -E "disk hit|cold" "$OUT/compile_time.txt"
