#!/bin/bash
# Session 15, device call C (~5 min; carry .whl: cu13.part1 of FlashAttention-4's CuTe DSL
# library stays in /tmp for call E): the two A/Bs that decide this session's compile-time
# defaults, nothing else (device time is short after failed starts): (1) boundary15's peeled
# against shared tile boundary (`attention_ab.py --set d128sb15 / d128csb15`); (2) llvm15's
# default against light LLVM pipeline (`llvm_pipeline_ab.py`, which also times each cold
# compile's stages in-process). Logs under $OUT.
set -u
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"; export OUT
cd "$(dirname "$0")/.."
export PYTHONPATH=. PYTHONUNBUFFERED=1
t0=$(date +%s)
[ -d .whl ] && bash scripts/fa4_install.sh > "$OUT/fa4_install.log" 2>&1
python3 -m compileall -q warpstage benchmarks > /dev/null
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$OUT/smi.txt" 2>&1
mkdir -p "$OUT/ab" "$OUT/abc"
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-c15 timeout 90 python3 benchmarks/attention_ab.py \
    --set d128sb15 --rounds 12 --iters 20 --shapes "8,16,1024;4,16,1024;16,16,1024" \
    --out "$OUT/ab" > "$OUT/ab.txt" 2>&1
echo "ab rc $? at $(( $(date +%s) - t0 )) s"
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-c15 timeout 60 python3 benchmarks/attention_ab.py \
    --set d128csb15 --rounds 12 --iters 20 --shapes "8,16,1024;8,16,2048" \
    --out "$OUT/abc" > "$OUT/abc.txt" 2>&1
echo "abc rc $? at $(( $(date +%s) - t0 )) s"
timeout 170 python3 benchmarks/llvm_pipeline_ab.py --rounds 9 > "$OUT/pipeline_ab.txt" 2>&1
echo "pipeline ab rc $? at $(( $(date +%s) - t0 )) s"
cat "$OUT/smi.txt"
echo "== ab"; cut -c1-220 "$OUT/ab.txt" | grep -v "^$"
echo "== abc"; cut -c1-220 "$OUT/abc.txt" | grep -v "^$"
echo "== pipeline"; grep -v "^$" "$OUT/pipeline_ab.txt" | cut -c1-170 | tail -40
