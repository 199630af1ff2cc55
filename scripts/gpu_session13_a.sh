#!/bin/bash
# Session 13, device call A (< 9.5 min): the first GPU run of the out-pointer lowering
# (backend/lower.py returns_through_pointer, session 12 after call F): (1) the whole GPU suite;
# (2) the compile rows in fresh processes (the wgmma FlashAttention cold compile with the
# out-pointer results); (3) the attention table through the public op at D = 64, 128 with the
# chart shapes (interleaved with cuDNN and SDPA-flash); (4) the launch rows. Logs under $OUT.
set -u
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"; export OUT
cd "$(dirname "$0")/.."
export PYTHONPATH=. PYTHONUNBUFFERED=1
t0=$(date +%s)
python3 -m compileall -q warpstage benchmarks > /dev/null
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-s13a timeout 230 python3 -m pytest -m gpu -q -p no:cacheprovider \
    -n 8 tests > "$OUT/pytest_gpu.txt" 2>&1
echo "gpu pytest rc $? at $(( $(date +%s) - t0 )) s"
unset PYTHONDONTWRITEBYTECODE
timeout 80 python3 benchmarks/compile_time.py fresh > "$OUT/compile_time.txt" 2>&1
echo "compile rc $? at $(( $(date +%s) - t0 )) s"
export PYTHONDONTWRITEBYTECODE=1
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-attn-s13 timeout 200 python3 benchmarks/attention.py --chart \
    --head-dims 64,128 --out "$OUT" > "$OUT/attention.txt" 2>&1
echo "attention rc $? at $(( $(date +%s) - t0 )) s"
timeout 40 python3 benchmarks/launch_overhead.py > "$OUT/launch.txt" 2>&1
echo "launch rc $? at $(( $(date +%s) - t0 )) s"
echo "== gpu pytest"; grep -E "^(FAILED|ERROR)" "$OUT/pytest_gpu.txt" | head -20; tail -1 "$OUT/pytest_gpu.txt"
echo "== compile"; grep -E "kernel|cold|disk hit|second" "$OUT/compile_time.txt" | cut -c1-170 | head -30
echo "== attention"; grep -E "x cuDNN|Error|rror" "$OUT/attention.txt" | cut -c1-200
echo "== launch"; tail -22 "$OUT/launch.txt" | cut -c1-160
