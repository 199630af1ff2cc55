#!/bin/bash
# Session 12, device call C (~5 min): D=96 with the TMA-store epilogue (set d96s), then the
# whole GPU suite (the epilogue's swizzle is new: attention D=96 and the GEMM's epilogue).
set -u
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"; export OUT
cd "$(dirname "$0")/.."
t0=$(date +%s)
SET=d96s bash scripts/gpu_session12_b.sh
PYTHONPATH=. WARPSTAGE_CACHE_DIR=/tmp/ws-cache-s12c timeout 260 python3 -m pytest -m gpu -q \
    -p no:cacheprovider -n 8 tests > "$OUT/pytest_gpu.txt" 2>&1
echo "gpu pytest rc $? at $(( $(date +%s) - t0 )) s"
echo "== gpu pytest"; grep -E "^(FAILED|ERROR)" "$OUT/pytest_gpu.txt" | head -20; tail -1 "$OUT/pytest_gpu.txt"
