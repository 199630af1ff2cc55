#!/bin/bash
# Session 4, device call C (< ~3 min): the attention sweep "poly" (part of P's exponentials on
# the FMA pipe, ws.math.exp2_poly) at S = 4096 and 1024, with a slice of the differential run
# on 12 CPU cores once the sweep's compiles are done (the sweep times device time).
#   PYTHONPATH=. bash scripts/gpu_session4_c.sh
set -u
OUT=${OUT:-$(mktemp -d)}
export PYTHONPATH=${PYTHONPATH:-.}
cd "$(dirname "$0")/.."
(sleep 25; timeout -k 10 110 python3 benchmarks/diff_programs.py --programs 100000 --jobs 12 \
    --chunk 200 --seed 700000 --seconds 90 > "$OUT/diff_programs.log" 2>&1) &
timeout 280 python3 benchmarks/attention.py --sweep poly --sweep-shapes "4,16,4096;16,16,1024" \
    --out "$OUT" > "$OUT/sweep_poly.log" 2>&1; echo "sweep poly rc $?"
grep -E "cuDNN|TFLOP|FAILED|compiled" "$OUT/sweep_poly.log"
wait
echo "== diff"; grep -E "^programs|mismatch" "$OUT/diff_programs.log" | tail -2
