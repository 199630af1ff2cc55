#!/bin/bash
# Session 7, device call A (< 9.5 min; carry .whl holding FlashAttention-4's wheels and
# cu13.part1, which scripts/fa4_install.sh keeps in /tmp for call B): gemm7's stream-K sweep and
# GPU tests (scripts/gpu_gemm7.sh), then launch7's launch rows, glue and pure-C floor
# (scripts/gpu_launch7.sh). Logs under $OUT.     bash scripts/gpu_session7_a.sh
set -u
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"; export OUT
cd "$(dirname "$0")/.."
t0=$(date +%s)
bash scripts/fa4_install.sh
mkdir -p "$OUT/gemm7" "$OUT/launch7"
OUT="$OUT/gemm7" timeout 340 bash scripts/gpu_gemm7.sh > "$OUT/gemm7.txt" 2>&1
echo "gemm7 rc $? at $(( $(date +%s) - t0 )) s"
OUT="$OUT/launch7" timeout 200 bash scripts/gpu_launch7.sh > "$OUT/launch7.txt" 2>&1
echo "launch7 rc $? at $(( $(date +%s) - t0 )) s"
echo "== gemm7"; tail -30 "$OUT/gemm7.txt" | cut -c1-250
echo "== launch7"; sed -n '/== summary ==/,$p' "$OUT/launch7.txt" | cut -c1-200
