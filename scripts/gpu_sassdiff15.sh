#!/usr/bin/env bash
# One device call for branch sassdiff15 (~2-3 min): is the light LLVM pipeline's 3.5% loss at
# D=64 S=1024 (session 15 call D) noise, or the three consumer warpgroups' dynamic behaviour?
# The SASS on the CPU shows no D=64-specific cause (RESULTS.md "Session 15, sassdiff15";
# docs/compile-time.md 18., "Why D=64 lost, from the SASS").
#  benchmarks/llvm_pipeline_ab.py, 15 rounds taking turns, B=8 H=16 S=1024 non-causal:
#   D=64 default policy (3 consumer warpgroups), D=64 with consumer_wgs=2 (the D=128 short
#   policy's count), D=128 default policy (2 consumer warpgroups).
# Predictions: if the loss is dynamic contention of three consumer warpgroups (the static SASS
# and a one-warp issue model predict <= +1.3% at D=64), D=64 stays at 0.95-0.98x while D=64
# consumer_wgs=2 and D=128 come out 0.98-1.01x. If D=64 comes out >= 0.985x, call D's 0.965x
# was noise. Errors equal between the pipelines in every row.
# Logs under $OUT, the summary last. Run from the repository root: bash scripts/gpu_sassdiff15.sh
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"
t0=$(date +%s)
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
  git log -1 --oneline 2>/dev/null; } 2>&1 | tee "$OUT/env.txt"
python3 -m compileall -q warpstage benchmarks > /dev/null
PYTHONPATH=. timeout 240 python3 benchmarks/llvm_pipeline_ab.py --rounds 15 \
  --rows "64,0,8,16,1024;64,0,8,16,1024,consumer_wgs=2;128,0,8,16,1024" 2>&1 | tee "$OUT/pipeline_ab.txt"
echo "== summary ($(( $(date +%s) - t0 )) s) =="
grep -E "^D=|light / default|^  (default|light) " "$OUT/pipeline_ab.txt" | cut -c1-150
