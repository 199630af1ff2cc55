#!/bin/bash
# Session 8, device call G: issue 11's differential programs (simulator against Python, CPU
# only) on the host's cores after the source-extent fix, toward 10^5 in one run, then the whole
# GPU suite on the final tree. Logs under $OUT.
set -u
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"; export OUT
cd "$(dirname "$0")/.."
export PYTHONPATH=. PYTHONUNBUFFERED=1
t0=$(date +%s)
python3 -m compileall -q warpstage benchmarks tests > /dev/null
WARPSTAGE_TARGET=sim timeout -k 5 225 python3 benchmarks/diff_programs.py --programs 110000 \
    --jobs "$(nproc)" --chunk 100 --seed 820000 --seconds 200 > "$OUT/diff_programs.log" 2>&1
echo "differential rc $? at $(( $(date +%s) - t0 )) s"
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-g8 timeout 230 python3 -m pytest -m gpu -q -p no:cacheprovider -n 8 tests \
    > "$OUT/pytest_gpu.txt" 2>&1
echo "gpu pytest rc $? at $(( $(date +%s) - t0 )) s"
echo "== differential"; grep -E "^programs|mismatch" "$OUT/diff_programs.log" | tail -2; grep "^seed" "$OUT/diff_programs.log" | cut -c1-200 | head -5
echo "== gpu pytest"; grep -E "^(FAILED|ERROR)" "$OUT/pytest_gpu.txt" | head -20; tail -1 "$OUT/pytest_gpu.txt"
