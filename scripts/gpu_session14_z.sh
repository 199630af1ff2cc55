#!/bin/bash
# Session 14, the closing device call (~7-8 min): (1) `warpstage demo`; (2) the compile rows
# (`compile_time.py fresh`) and the disk hit under cProfile (`profile-hit`); (3) cold compiles of
# this session's start (_trees/s14 = b223f7c) and this tree taking turns; (4) the attention
# table through the public op at D = 64, 128 with its chart; (5) the rescale threshold 8 vs 12
# at the flagship's shapes with sustained windows; (6) scripts/gpu_review14.sh; (7) the whole
# GPU suite. Logs under $OUT.
set -u
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"; export OUT
cd "$(dirname "$0")/.."
export PYTHONPATH=. PYTHONUNBUFFERED=1
t0=$(date +%s)
for t in . _trees/s14; do python3 -m compileall -q $t/warpstage > /dev/null; done
python3 -m compileall -q benchmarks examples > /dev/null
timeout 60 python3 -m warpstage demo > "$OUT/demo.txt" 2>&1
echo "demo rc $? at $(( $(date +%s) - t0 )) s"
timeout 60 python3 benchmarks/compile_time.py fresh > "$OUT/compile_time.txt" 2>&1
echo "compile rc $? at $(( $(date +%s) - t0 )) s"
timeout 40 python3 benchmarks/compile_time.py profile-hit > "$OUT/profile_hit.txt" 2>&1
echo "profile-hit rc $? at $(( $(date +%s) - t0 )) s"
timeout 70 python3 benchmarks/compile_trees.py --trees _trees/s14,. --rows wgmma:128,wgmma:64 \
    --rounds 3 > "$OUT/trees.txt" 2>&1
echo "trees rc $? at $(( $(date +%s) - t0 )) s"
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-attn-s14z timeout 130 python3 benchmarks/attention.py --chart \
    --head-dims 64,128 --out "$OUT" > "$OUT/attention.txt" 2>&1
echo "attention rc $? at $(( $(date +%s) - t0 )) s"
mkdir -p "$OUT/t"
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-s14z timeout 70 python3 benchmarks/attention_ab.py \
    --set d128t14 --rounds 10 --iters 20 --sustain 2 --shapes "4,16,4096;2,16,8192" \
    --out "$OUT/t" > "$OUT/t.txt" 2>&1
echo "ab rc $? at $(( $(date +%s) - t0 )) s"
timeout 60 bash scripts/gpu_review14.sh > "$OUT/review14.txt" 2>&1
echo "review14 rc $? at $(( $(date +%s) - t0 )) s"
export PYTHONDONTWRITEBYTECODE=1
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-s14z-t timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider \
    -n 8 tests > "$OUT/pytest_gpu.txt" 2>&1
echo "gpu pytest rc $? at $(( $(date +%s) - t0 )) s"
echo "== demo"; tail -5 "$OUT/demo.txt" | cut -c1-200
echo "== compile"; grep -vE "^\s*$" "$OUT/compile_time.txt" | cut -c1-200 | tail -13
echo "== trees"; cut -c1-200 "$OUT/trees.txt" | tail -7
echo "== attention"; grep -E "x cuDNN|rror|\|" "$OUT/attention.txt" | cut -c1-160 | tail -26
echo "== ab"; cut -c1-190 "$OUT/t.txt" | grep -v "^$"
echo "== review14"; tail -4 "$OUT/review14.txt" | cut -c1-200
echo "== gpu pytest"; grep -E "^(FAILED|ERROR)" "$OUT/pytest_gpu.txt" | head -20; tail -1 "$OUT/pytest_gpu.txt"
