#!/bin/bash
# Session 9, device call A (< 10 min): attn9's sweep (dynamic_tiles, narrow_last at the D=128
# S=1024 points, controls and the flagship) and gemm9's end-to-end GEMM rows (rotating
# addresses at M=128, 4096^3 / 8192^3), each script's own GPU tests first. Logs under $OUT.
set -u
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"
cd "$(dirname "$0")/.."
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
  python3 -c "import sys, torch, triton; print('python', sys.version.split()[0], 'torch', torch.__version__, 'triton', triton.__version__)"; } > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
t0=$(date +%s)
OUT="$OUT/attn9" bash scripts/gpu_attn9.sh
echo "attn9 done at $(( $(date +%s) - t0 )) s"
OUT="$OUT/gemm9" bash scripts/gpu_gemm9.sh
echo "gemm9 done at $(( $(date +%s) - t0 )) s"
