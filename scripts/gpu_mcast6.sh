#!/usr/bin/env bash
# One device call for the mcast6 branch (issue 13, build item 4: 2-CTA clusters with TMA
# multicast), under 3 minutes: the GPU tests of the cluster pieces (special registers, cluster
# barrier, remote mbarrier arrival, multicast TMA, the PipelineTmaMulticast ring) and of the
# GEMM with cluster=(2, 1) / (1, 2) against torch.matmul (4096^3, 8192^3, tails, transposes,
# split-K, ping-pong, 64-row tiles, batched), then benchmarks/gemm_cluster.py: device-time
# TFLOP/s at 4096^3 / 8192^3 bf16 for cluster (1, 1) / (2, 1) / (1, 2) beside cuBLAS.
# Logs under $OUT; the table last.   From the repo root:  bash scripts/gpu_mcast6.sh
set -uo pipefail
export PYTHONPATH=. PYTHONUNBUFFERED=1 WARPSTAGE_CACHE_DIR=/tmp/ws-cache-mcast6
OUT=${OUT:-$(mktemp -d)}; export OUT; mkdir -p "$OUT"
export WARPSTAGE_COMMIT=${WARPSTAGE_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/env.txt" 2>&1
timeout 100 python3 -m pytest -m gpu -q -p no:cacheprovider -n 4 tests/lang/test_cluster_gpu.py \
    tests/ops/test_matmul_gpu.py::test_clusters > "$OUT/pytest_gpu.txt" 2>&1
gpu_rc=$?
timeout 70 python3 benchmarks/gemm_cluster.py --iters 10 --repeats 3 > "$OUT/gemm_cluster.txt" 2>&1
bench_rc=$?
echo "== mcast6 at $WARPSTAGE_COMMIT on $(head -1 "$OUT/env.txt")"
printf '%-12s %-4s %s\n' "GPU tests" "$gpu_rc" "$(tail -1 "$OUT/pytest_gpu.txt")"
printf '%-12s %-4s\n' "gemm_cluster" "$bench_rc"
grep -hE "^(FAILED|ERROR)" "$OUT/pytest_gpu.txt" | head -12
grep -E "^  .* at [0-9]+x" "$OUT/gemm_cluster.txt" | head -5
grep -E "^\| (M x N|---|[0-9])" "$OUT/gemm_cluster.txt" | tail -6
