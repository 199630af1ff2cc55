#!/bin/bash
# Session 14, device call E (~5 min; the kernels are final: the compile helpers' changes keep
# the PTX): (1) `warpstage demo`; (2) the attention table through the public op at D = 64, 128
# with its chart; (3) the rescale threshold 8 vs 12 at the flagship's shapes with sustained
# windows; (4) scripts/gpu_review14.sh; (5) a disk-cache first call under cProfile
# (`compile_time.py profile-hit`). Logs under $OUT.
set -u
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"; export OUT
cd "$(dirname "$0")/.."
export PYTHONPATH=. PYTHONUNBUFFERED=1
t0=$(date +%s)
python3 -m compileall -q warpstage benchmarks examples > /dev/null
timeout 60 python3 -m warpstage demo > "$OUT/demo.txt" 2>&1
echo "demo rc $? at $(( $(date +%s) - t0 )) s"
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-attn-s14e timeout 150 python3 benchmarks/attention.py --chart \
    --head-dims 64,128 --out "$OUT" > "$OUT/attention.txt" 2>&1
echo "attention rc $? at $(( $(date +%s) - t0 )) s"
mkdir -p "$OUT/t"
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-s14e timeout 80 python3 benchmarks/attention_ab.py \
    --set d128t14 --rounds 10 --iters 20 --sustain 2 --shapes "4,16,4096;2,16,8192" \
    --out "$OUT/t" > "$OUT/t.txt" 2>&1
echo "ab rc $? at $(( $(date +%s) - t0 )) s"
timeout 60 bash scripts/gpu_review14.sh > "$OUT/review14.txt" 2>&1
echo "review14 rc $? at $(( $(date +%s) - t0 )) s"
timeout 50 python3 benchmarks/compile_time.py profile-hit > "$OUT/profile_hit.txt" 2>&1
echo "profile-hit rc $? at $(( $(date +%s) - t0 )) s"
echo "== demo"; tail -5 "$OUT/demo.txt" | cut -c1-200
echo "== attention"; grep -E "x cuDNN|rror" "$OUT/attention.txt" | cut -c1-160 | tail -30
echo "== ab"; cut -c1-190 "$OUT/t.txt" | grep -v "^$"
echo "== review14"; tail -4 "$OUT/review14.txt" | cut -c1-200
echo "== profile-hit"; grep -E "^==|cumtime|tottime" "$OUT/profile_hit.txt" | head -12
