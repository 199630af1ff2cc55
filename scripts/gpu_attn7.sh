#!/bin/bash
# Session 7, issue 12 (attn7) device call (< 6 min): the GPU tests of packed A fragments and of
# the attention kernel (its long-sequence policies include packed_p + rescale_at_wait, with and
# without overlap_tiles), then sweep "attn7" at (B, H, S) = (4, 16, 4096), (8, 16, 1024),
# (16, 16, 1024), D = 128, causal and not, and sweep "attn7_64" at (4, 16, 4096), D = 64: the
# packed P (packed_p) and the rescale after the P V wait (rescale_at_wait), with and without
# overlap_tiles, each against today's default fields (first per (D, causal, shape)) and cuDNN.
# Logs under $OUT; a table last.
#   PYTHONPATH=. bash scripts/gpu_attn7.sh
set -u
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"
export PYTHONPATH=${PYTHONPATH:-.} PYTHONUNBUFFERED=1
cd "$(dirname "$0")/.."
XDIST=""; python3 -c "import xdist" 2>/dev/null && XDIST="-n 8"
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-attn7 timeout 100 python3 -m pytest -m gpu -q \
    -p no:cacheprovider $XDIST tests/lang/test_wgmma_packed_gpu.py \
    tests/examples/test_flash_attention_wgmma_gpu.py \
    > "$OUT/pytest_gpu.txt" 2>&1; echo "pytest rc $?" >> "$OUT/rc.txt"
mkdir -p "$OUT/attn7" "$OUT/attn7_64"
timeout 170 python3 benchmarks/attention.py --sweep attn7 \
    --sweep-shapes "4,16,4096;8,16,1024;16,16,1024" --out "$OUT/attn7" \
    > "$OUT/sweep_attn7.log" 2>&1
echo "sweep attn7 rc $?" >> "$OUT/rc.txt"
timeout 70 python3 benchmarks/attention.py --sweep attn7_64 --sweep-shapes "4,16,4096" \
    --out "$OUT/attn7_64" > "$OUT/sweep_attn7_64.log" 2>&1
echo "sweep attn7_64 rc $?" >> "$OUT/rc.txt"
cat "$OUT/rc.txt"
echo "== pytest"; grep -E "^(FAILED|ERROR)" "$OUT/pytest_gpu.txt" | head -20
tail -1 "$OUT/pytest_gpu.txt"
for s in attn7 attn7_64; do
    echo "== sweep $s (TFLOP/s per variant; per (D, causal, shape) the default first)"
    grep -E "cuDNN|TFLOP|FAILED|compiled" "$OUT/sweep_$s.log"
done
