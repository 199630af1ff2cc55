#!/usr/bin/env bash
# One device call for issue 14's launch cost and issue 17's device placement: the launch, device,
# graph and torch GPU tests, benchmarks/launch_overhead.py (all rows) and the GPU-host breakdown
# of a hit (benchmarks/profile_launch.py); logs under $OUT, a short table last. Under 3 minutes.
# Run from the repository root: bash scripts/gpu_launch2.sh (on nvidia-h200 or nvidia-h200-x2:
# the 2-GPU tests and the cuda:1 row run when 2 GPUs are visible).
set -uo pipefail
export PYTHONPATH=. PYTHONUNBUFFERED=1 WARPSTAGE_CACHE_DIR=/tmp/ws-cache-launch2
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"
rm -rf "$WARPSTAGE_CACHE_DIR"
{ date -u; nvidia-smi --query-gpu=index,name,driver_version,clocks.sm --format=csv,noheader; } 2>&1 | tee "$OUT/env.txt"
timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider tests/gpu/test_devices_gpu.py \
  tests/gpu/test_fast_call_gpu.py tests/gpu/test_graphs_gpu.py tests/gpu/test_tma_launch_gpu.py \
  tests/gpu/test_torch_compile_gpu.py 2>&1 | tee "$OUT/pytest_launch_gpu.txt" | tail -15
timeout 100 python3 benchmarks/launch_overhead.py --batches 7 --launches 5000 2>&1 | tee "$OUT/launch_overhead.txt"
timeout 60 python3 benchmarks/profile_launch.py --long 5000 --short 200 2>&1 | tee "$OUT/profile_launch.txt" | head -28
echo "== summary =="
tail -1 "$OUT/pytest_launch_gpu.txt"
grep -E "^ws |^  the same|^  BoundLaunch|^raw|^torch|^Triton|^CuTe" "$OUT/launch_overhead.txt"
grep -E "^four|^  |^vector|^step" "$OUT/profile_launch.txt" | head -24
