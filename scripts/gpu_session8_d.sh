#!/bin/bash
# Session 8, device call D: issue 13's benchmarks/gemm.py (gemm8's one run: FP8 first, squares
# 1024^3-16384^3, the LLM shapes, Triton, chart), issue 12's benchmarks/attention.py table
# through the public op (the defaults flipped after call C), and the launch floor's
# environment (scripts/launch_floor_env.sh). Logs under $OUT.
set -u
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"; export OUT
cd "$(dirname "$0")/.."
export PYTHONPATH=. PYTHONUNBUFFERED=1 WARPSTAGE_COMMIT=${WARPSTAGE_COMMIT:-unknown}
t0=$(date +%s)
python3 -m compileall -q warpstage > /dev/null
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-gemm8 timeout 150 python3 benchmarks/gemm.py --no-sweep --iters 10 --repeats 3 \
    > "$OUT/gemm.txt" 2>&1
echo "gemm.py rc $? at $(( $(date +%s) - t0 )) s"
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-attn timeout 220 python3 benchmarks/attention.py --chart \
    --head-dims 64,128 --out "$OUT" > "$OUT/attention.txt" 2>&1
echo "attention rc $? at $(( $(date +%s) - t0 )) s"
timeout 60 bash scripts/launch_floor_env.sh > "$OUT/floor_env.txt" 2>&1
echo "floor rc $? at $(( $(date +%s) - t0 )) s"
echo "== bf16"; grep -E "^\| [0-9]" "$OUT/gemm.txt" | head -26 | cut -c1-200
echo "== FP8"; grep -E "^FP8 \|" "$OUT/gemm.txt" | cut -c1-200
grep -E "Error|Traceback" "$OUT/gemm.txt" | head -5
echo "== attention"; grep -E "x cuDNN|FA4|flash-attn|Error" "$OUT/attention.txt" | cut -c1-230 | tail -40
echo "== floor"; cat "$OUT/floor_env.txt" | cut -c1-200
