#!/bin/bash
# Session 6, issue 12 (attn6) device call (< 4 min): the attention GPU tests of the files this
# branch touched (8 xdist workers when pytest-xdist is importable; the simulator CASES now
# include skip_idle, partial_last and head_group), then the sweep "attn6" at the chart's
# (B, H, S) = (16, 16, 1024), (8, 16, 2048), (4, 16, 4096): skip_idle (+ partial_last) at D = 64
# and 128, head_group for D = 128 causal, each against today's default fields. Logs under
# $OUT; a table last.
#   PYTHONPATH=. bash scripts/gpu_attn6.sh
set -u
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"
export PYTHONPATH=${PYTHONPATH:-.} PYTHONUNBUFFERED=1
cd "$(dirname "$0")/.."
XDIST=""; python3 -c "import xdist" 2>/dev/null && XDIST="-n 8"
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-attn6 timeout 90 python3 -m pytest -m gpu -q \
    -p no:cacheprovider $XDIST tests/examples/test_flash_attention_wgmma_gpu.py \
    tests/ops/test_flash_attention_gpu.py tests/ops/test_attention_features_gpu.py \
    > "$OUT/pytest_gpu.txt" 2>&1; echo "pytest rc $?" >> "$OUT/rc.txt"
timeout 160 python3 benchmarks/attention.py --sweep attn6 \
    --sweep-shapes "16,16,1024;8,16,2048;4,16,4096" --out "$OUT" > "$OUT/sweep_attn6.log" 2>&1
echo "sweep attn6 rc $?" >> "$OUT/rc.txt"
cat "$OUT/rc.txt"
echo "== pytest"; grep -E "^(FAILED|ERROR)" "$OUT/pytest_gpu.txt" | head -20
tail -1 "$OUT/pytest_gpu.txt"
echo "== sweep attn6 (TFLOP/s per variant; per (D, causal, shape) the default first)"
grep -E "cuDNN|TFLOP|FAILED|compiled" "$OUT/sweep_attn6.log"
