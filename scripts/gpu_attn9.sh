#!/bin/bash
# Session 9, issue 12 (attn9) device call (< 5 min): the GPU tests of dynamic_tiles and
# narrow_last (the simulator CASES against torch SDPA; three dynamic_tiles launches in a row
# with the counters checked; both fields at B=2 H=16 S=1024 D=128 causal), then sweep "attn9" (D=128, causal and not) at (B, H, S) = (8, 16, 1024),
# (16, 16, 1024), (8, 16, 2048) and (4, 16, 4096) (the flagship): each variant's max |error|
# against SDPA and its TFLOP/s beside cuDNN (and FA4 where /tmp/site holds it), the shipped
# default first per (D, causal, shape). Logs under $OUT; the table last.
#   PYTHONPATH=. bash scripts/gpu_attn9.sh
set -u
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"
cd "$(dirname "$0")/.."
export PYTHONPATH=. PYTHONUNBUFFERED=1
[ -d /tmp/site ] && export PYTHONPATH=.:/tmp/site:/tmp/site/nvidia_cutlass_dsl/dsl_packages
t0=$(date +%s)
python3 -m compileall -q warpstage > /dev/null
XDIST=""; python3 -c "import xdist" 2>/dev/null && XDIST="-n 8"
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-attn9 timeout 110 python3 -m pytest -m gpu -q \
    -p no:cacheprovider $XDIST tests/examples/test_flash_attention_wgmma_gpu.py \
    tests/ops/test_attention_dynamic_tiles.py tests/ops/test_attention_features_gpu.py \
    tests/ops/test_attention_narrow_last.py \
    > "$OUT/pytest_gpu.txt" 2>&1
echo "pytest rc $? at $(( $(date +%s) - t0 )) s" >> "$OUT/rc.txt"
mkdir -p "$OUT/attn9"
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-attn9 timeout 150 python3 benchmarks/attention.py \
    --sweep attn9 --sweep-shapes "8,16,1024;16,16,1024;8,16,2048;4,16,4096" \
    --out "$OUT/attn9" > "$OUT/sweep_attn9.log" 2>&1
echo "sweep attn9 rc $? at $(( $(date +%s) - t0 )) s" >> "$OUT/rc.txt"
cat "$OUT/rc.txt"
echo "== pytest (failures, then the summary)"
grep -hE "^(FAILED|ERROR)|[0-9]+ (passed|failed)" "$OUT/pytest_gpu.txt" | tail -21
echo "== sweep attn9: TFLOP/s, max |error| against SDPA and x cuDNN per variant, default first"
grep -E "cuDNN|TFLOP|FAILED|compiled" "$OUT/sweep_attn9.log" | cut -c1-200
