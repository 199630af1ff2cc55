#!/bin/bash
# Session 8, issue 12 (attn8) device call (< 5 min): the GPU tests of the conditional rescale
# (rescale_threshold: CASES of the wgmma kernel against torch SDPA), then sweep "attn8" (D=128,
# causal and not) at (B, H, S) = (4, 16, 4096), (8, 16, 1024), (16, 16, 1024) and sweep
# "attn8_64" (D=64, causal and not) at (4, 16, 4096), (16, 16, 1024), (8, 16, 2048): each
# candidate's max |error| against SDPA in float32 and its TFLOP/s beside cuDNN (and FA4 where
# /tmp/site holds it from an earlier call), the shipped default first per (D, causal, shape).
# Logs under $OUT; the table last.
#   PYTHONPATH=. bash scripts/gpu_attn8.sh
set -u
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"
cd "$(dirname "$0")/.."
export PYTHONPATH=. PYTHONUNBUFFERED=1
[ -d /tmp/site ] && export PYTHONPATH=.:/tmp/site:/tmp/site/nvidia_cutlass_dsl/dsl_packages
t0=$(date +%s)
python3 -m compileall -q warpstage > /dev/null
XDIST=""; python3 -c "import xdist" 2>/dev/null && XDIST="-n 8"
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-attn8 timeout 60 python3 -m pytest -m gpu -q \
    -p no:cacheprovider $XDIST tests/examples/test_flash_attention_wgmma_gpu.py \
    -k "rescale_threshold or packed_p" > "$OUT/pytest_gpu.txt" 2>&1
echo "pytest rc $? at $(( $(date +%s) - t0 )) s" >> "$OUT/rc.txt"
mkdir -p "$OUT/attn8" "$OUT/attn8_64"
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-attn8 timeout 140 python3 benchmarks/attention.py \
    --sweep attn8 --sweep-shapes "4,16,4096;8,16,1024;16,16,1024" --out "$OUT/attn8" \
    > "$OUT/sweep_attn8.log" 2>&1
echo "sweep attn8 rc $? at $(( $(date +%s) - t0 )) s" >> "$OUT/rc.txt"
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-attn8 timeout 95 python3 benchmarks/attention.py \
    --sweep attn8_64 --sweep-shapes "4,16,4096;16,16,1024;8,16,2048" --out "$OUT/attn8_64" \
    > "$OUT/sweep_attn8_64.log" 2>&1
echo "sweep attn8_64 rc $? at $(( $(date +%s) - t0 )) s" >> "$OUT/rc.txt"
cat "$OUT/rc.txt"
echo "== pytest (failures, then the summary)"
grep -hE "^(FAILED|ERROR)|[0-9]+ (passed|failed)" "$OUT/pytest_gpu.txt" | tail -21
for s in attn8 attn8_64; do
    echo "== sweep $s: TFLOP/s, max |error| against SDPA and x cuDNN per variant, default first"
    grep -E "cuDNN|TFLOP|FAILED|compiled" "$OUT/sweep_$s.log" | cut -c1-200
done
