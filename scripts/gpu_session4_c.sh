#!/bin/bash
# Session 4, device call C (< ~3 min): the attention sweep "poly" (part of P's exponentials on
# the FMA pipe, ws.math.exp2_poly) at S = 4096 and 1024.
#   PYTHONPATH=. bash scripts/gpu_session4_c.sh
set -u
OUT=${OUT:-$(mktemp -d)}
export PYTHONPATH=${PYTHONPATH:-.}
cd "$(dirname "$0")/.."
timeout 280 python3 benchmarks/attention.py --sweep poly --sweep-shapes "4,16,4096;16,16,1024" \
    --out "$OUT" > "$OUT/sweep_poly.log" 2>&1; echo "sweep poly rc $?"
grep -E "cuDNN|TFLOP|FAILED|compiled" "$OUT/sweep_poly.log"
