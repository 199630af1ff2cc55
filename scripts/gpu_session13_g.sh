#!/bin/bash
# Session 13, device call G (< 6 min): (1) `attention_ab.py --set d128n13` (the new D=128 long
# default with 2 or 3 stages); (2) the whole GPU suite on the tree with the new D=128 default;
# (3) `warpstage demo`; (4) the attention table through the public op at D = 64, 128 (chart).
# (The compile and launch rows were dropped: 634 s of device time left.) Logs under $OUT.
set -u
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"; export OUT
cd "$(dirname "$0")/.."
export PYTHONPATH=. PYTHONUNBUFFERED=1
t0=$(date +%s)
python3 -m compileall -q warpstage benchmarks > /dev/null
mkdir -p "$OUT/ab"
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-s13g-ab timeout 150 python3 benchmarks/attention_ab.py \
    --set d128n13 --rounds 15 --iters 20 --sustain 2 --shapes "4,16,4096;2,16,8192;8,16,2048" \
    --out "$OUT/ab" > "$OUT/ab.txt" 2>&1
echo "ab rc $? at $(( $(date +%s) - t0 )) s"
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-s13g timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider \
    -n 8 tests > "$OUT/pytest_gpu.txt" 2>&1
echo "gpu pytest rc $? at $(( $(date +%s) - t0 )) s"
timeout 60 python3 -m warpstage demo > "$OUT/demo.txt" 2>&1
echo "demo rc $? at $(( $(date +%s) - t0 )) s"
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-attn-s13g timeout 120 python3 benchmarks/attention.py --chart \
    --head-dims 64,128 --out "$OUT" > "$OUT/attention.txt" 2>&1
echo "attention rc $? at $(( $(date +%s) - t0 )) s"
echo "== ab"; cut -c1-200 "$OUT/ab.txt" | grep -v "^$"
echo "== gpu pytest"; grep -E "^(FAILED|ERROR)" "$OUT/pytest_gpu.txt" | head -20; tail -1 "$OUT/pytest_gpu.txt"
echo "== demo"; tail -6 "$OUT/demo.txt" | cut -c1-200
echo "== attention"; grep -E "x cuDNN|rror" "$OUT/attention.txt" | cut -c1-200
