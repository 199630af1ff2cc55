#!/usr/bin/env bash
# One device call for branch licm15 (~2-3 min): the light LLVM pipeline now with warpstage's own
# loop-invariant code motion (passes/licm.py, run only when llvm_pipeline == 'light') against
# the default (O3) pipeline, on the default wgmma FlashAttention kernels.
#  1. benchmarks/llvm_pipeline_ab.py: device time (TFLOP/s) of the default wgmma kernels built
#     both ways, 7 rounds taking turns, at D=128 B=8 S=1024, D=64 B=8 S=1024 (the row that lost
#     3.5% in session 15's call D), D=128 B=4 S=4096, D=64 B=4 S=4096; max error vs SDPA (~1.5 min);
#  2. the GPU tests of tests/examples and tests/ops/test_attention* with every kernel built light
#     (numerics of the mma.sync FlashAttention, whose loops LICM changes most, and of the wgmma ones).
# Predictions (CPU-side facts: RESULTS.md "Session 15, licm15"): LICM moves only 25-27 ops out of
# the wgmma kernels' loops (constants and the tile count's arithmetic) and leaves their K/V step's
# SASS opcode mix exactly as the light pipeline's without it (D=64 short: 552 instructions vs
# O3's 548), so (1) the same ratios as call D: D=128 S=1024 0.98-1.00x, D=128 S=4096 0.99-1.01x,
# D=64 S=1024 still ~0.965x (0.95-0.98); D=64 S=4096 0.98-1.01x; errors equal to the default's.
# If D=64 S=1024 comes out >= 0.99x, the loss was not in the SASS we count (scheduling, or noise
# in call D). (2) all pass.
# Logs under $OUT, the summary last. Run from the repository root: bash scripts/gpu_licm15.sh
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"
t0=$(date +%s)
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
  git log -1 --oneline 2>/dev/null
  python3 -c "import llvmlite, sys, torch; print(sys.version.split()[0], 'llvmlite', llvmlite.__version__, 'torch', torch.__version__)"; } 2>&1 | tee "$OUT/env.txt"
python3 -m compileall -q warpstage benchmarks > /dev/null
PYTHONPATH=. timeout 150 python3 benchmarks/llvm_pipeline_ab.py --rounds 7 \
  --rows "128,0,8,16,1024;64,0,8,16,1024;128,0,4,16,4096;64,0,4,16,4096" 2>&1 | tee "$OUT/pipeline_ab.txt"
echo "A/B done at $(( $(date +%s) - t0 )) s"
WARPSTAGE_LLVM_PIPELINE=light PYTHONPATH=. timeout 100 python3 -m pytest -q -p no:cacheprovider -m gpu \
  -n 8 tests/examples tests/ops/test_attention*.py 2>&1 | tee "$OUT/pytest_gpu_light.txt" | tail -3
echo "== summary ($(( $(date +%s) - t0 )) s) =="
tail -1 "$OUT/pytest_gpu_light.txt"
grep -E "^D=|light / default|^  (default|light) " "$OUT/pipeline_ab.txt" | cut -c1-150
