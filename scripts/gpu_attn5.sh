#!/bin/bash
# Session 5, issue 12 (attn5) device call (< 4 min): the attention GPU tests of the files this
# branch touched (8 xdist workers when pytest-xdist is importable), then the sweep "attn5" at
# (B, H, S) = (4, 16, 4096) and (16, 16, 1024): fma_select (the branch-free single-FFMA
# exponent) and overlap_tiles (cross-tile overlap) against the default at D = 64 and 128,
# causal and not, and native D = 96 against the D = 128 kernel. Logs under $OUT; a table last.
#   PYTHONPATH=. bash scripts/gpu_attn5.sh
set -u
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"
export PYTHONPATH=${PYTHONPATH:-.} PYTHONUNBUFFERED=1
cd "$(dirname "$0")/.."
XDIST=""; python3 -c "import xdist" 2>/dev/null && XDIST="-n 8"
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-attn5 timeout 80 python3 -m pytest -m gpu -q \
    -p no:cacheprovider $XDIST tests/examples/test_flash_attention_wgmma_gpu.py \
    tests/ops/test_flash_attention_gpu.py tests/ops/test_attention_features_gpu.py \
    > "$OUT/pytest_gpu.txt" 2>&1; echo "pytest rc $?" >> "$OUT/rc.txt"
timeout 150 python3 benchmarks/attention.py --sweep attn5 --sweep-shapes "4,16,4096;16,16,1024" \
    --out "$OUT" > "$OUT/sweep_attn5.log" 2>&1; echo "sweep attn5 rc $?" >> "$OUT/rc.txt"
cat "$OUT/rc.txt"
echo "== pytest"; grep -E "^(FAILED|ERROR)" "$OUT/pytest_gpu.txt" | head -20
tail -1 "$OUT/pytest_gpu.txt"
echo "== sweep attn5 (TFLOP/s per variant; per (D, causal, shape) the default first)"
grep -E "cuDNN|TFLOP|FAILED|compiled" "$OUT/sweep_attn5.log"
