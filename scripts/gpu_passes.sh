#!/usr/bin/env bash
# One device call for the pass-stage branch (legalization, smem total, split options): the GPU
# tests the legalized ops reach (// and % on floats and ints, wgmma descriptors, smem totals),
# logs under $OUT, a short table last (rc 124: that group ran past its limit). At most 4 min.
set -uo pipefail
export PYTHONPATH=. PYTHONUNBUFFERED=1 WARPSTAGE_CACHE_DIR=/tmp/ws-cache-passes
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"
run() {  # name, seconds, pytest args...
  local name=$1 limit=$2; shift 2
  timeout "$limit" python3 -m pytest -m gpu -q -p no:cacheprovider "$@" > "$OUT/$name.txt" 2>&1
  echo "$name rc=$? $(tail -1 "$OUT/$name.txt")" >> "$OUT/summary.txt"
}
: > "$OUT/summary.txt"
run legalize 40 tests/gpu/test_legalize_gpu.py
run control_flow 80 tests/gpu/test_control_flow_gpu.py
run wgmma 60 tests/gpu/test_wgmma_gpu.py tests/gpu/test_hopper_gpu.py
run matmul 60 -x tests/gpu/test_matmul_gpu.py
cat "$OUT/summary.txt"
