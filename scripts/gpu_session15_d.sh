#!/bin/bash
# Session 15, device call D (~7 min, the session's one device call after ten failed starts took
# most of its device time): (1) `warpstage demo`; (2) boundary15's A/B (peeled vs shared tile
# boundary, D=128 S=1024, trimmed to 8 rounds and two shapes); (3) llvm15's A/B (default vs
# light LLVM pipeline, 5 rounds, with each kernel's max error against SDPA); (4)
# `compile_time.py fresh` (issue 14's rows, with hit15's disk-hit cuts); (5) the whole GPU
# suite (hit15 changed the disk entry that a GPU hit loads). Logs under $OUT.
set -u
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"; export OUT
cd "$(dirname "$0")/.."
export PYTHONPATH=. PYTHONUNBUFFERED=1
t0=$(date +%s)
python3 -m compileall -q warpstage benchmarks examples tests > /dev/null
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$OUT/smi.txt" 2>&1
timeout 50 python3 -m warpstage demo > "$OUT/demo.txt" 2>&1
echo "demo rc $? at $(( $(date +%s) - t0 )) s"
mkdir -p "$OUT/ab"
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-d15 timeout 60 python3 benchmarks/attention_ab.py \
    --set d128sb15 --rounds 8 --iters 20 --shapes "8,16,1024;4,16,1024" \
    --out "$OUT/ab" > "$OUT/ab.txt" 2>&1
echo "ab rc $? at $(( $(date +%s) - t0 )) s"
mkdir -p "$OUT/abc"
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-d15 timeout 40 python3 benchmarks/attention_ab.py \
    --set d128csb15 --rounds 8 --iters 20 --shapes "8,16,1024" \
    --out "$OUT/abc" > "$OUT/abc.txt" 2>&1
echo "abc rc $? at $(( $(date +%s) - t0 )) s"
timeout 90 python3 benchmarks/llvm_pipeline_ab.py --rounds 5 --rows "128,0,4,16,4096;128,0,8,16,1024;64,0,8,16,1024;128,0,8,16,1024,shared_boundary=True" > "$OUT/pipeline_ab.txt" 2>&1
echo "pipeline ab rc $? at $(( $(date +%s) - t0 )) s"
timeout 75 python3 benchmarks/compile_time.py fresh > "$OUT/compile_time.txt" 2>&1
echo "compile rc $? at $(( $(date +%s) - t0 )) s"
export PYTHONDONTWRITEBYTECODE=1
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-d15s timeout 210 python3 -m pytest -m gpu -q -p no:cacheprovider \
    -n 8 tests > "$OUT/pytest_gpu.txt" 2>&1
echo "gpu pytest rc $? at $(( $(date +%s) - t0 )) s"
cat "$OUT/smi.txt"
echo "== demo"; tail -5 "$OUT/demo.txt" | cut -c1-200
echo "== ab"; cut -c1-200 "$OUT/ab.txt" | grep -v "^$" | tail -14
echo "== abc"; cut -c1-200 "$OUT/abc.txt" | grep -v "^$" | tail -8
echo "== pipeline"; grep -v "^$" "$OUT/pipeline_ab.txt" | cut -c1-160 | tail -24
echo "== compile"; grep -vE "^\s*$" "$OUT/compile_time.txt" | cut -c1-200 | tail -24
echo "== gpu pytest"; grep -E "^(FAILED|ERROR)" "$OUT/pytest_gpu.txt" | head -12; tail -1 "$OUT/pytest_gpu.txt"
