#!/bin/bash
# Session 8, device call F (the closing run, < 9.5 min): the whole GPU suite with a slice of
# review8's differential programs on the host's other cores beside it (simulator vs Python,
# CPU only), the attention table through the public op (the defaults of calls C and E),
# `warpstage demo`, and sk8's stream-K K-step walk on its six shapes. Logs under $OUT.
set -u
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"; export OUT
cd "$(dirname "$0")/.."
export PYTHONPATH=. PYTHONUNBUFFERED=1
t0=$(date +%s)
python3 -m compileall -q warpstage benchmarks > /dev/null
( WARPSTAGE_TARGET=sim timeout -k 5 200 python3 benchmarks/diff_programs.py --programs 150000 \
    --jobs 6 --chunk 50 --seed 810000 --seconds 180 > "$OUT/diff_programs.log" 2>&1
  echo "diff rc $?" > "$OUT/diff_rc.txt" ) &
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-f8 timeout 240 python3 -m pytest -m gpu -q -p no:cacheprovider -n 8 tests \
    > "$OUT/pytest_gpu.txt" 2>&1
echo "gpu pytest rc $? at $(( $(date +%s) - t0 )) s"
wait
echo "differential done at $(( $(date +%s) - t0 )) s ($(cat "$OUT/diff_rc.txt"))"
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-attn-f timeout 70 python3 benchmarks/attention.py --chart \
    --head-dims 64,128 --out "$OUT" > "$OUT/attention.txt" 2>&1
echo "attention rc $? at $(( $(date +%s) - t0 )) s"
timeout 60 python3 -m warpstage demo > "$OUT/demo.txt" 2>&1
echo "demo rc $? at $(( $(date +%s) - t0 )) s"
SHAPES="--shape 4096,4096,11008,K --shape 256,11008,4096,K --shape 4096,4096,4096 \
 --shape 8192,8192,8192 --shape 4096,11008,4096,K --shape 128,11008,4096,K"
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-sk8 timeout 150 python3 benchmarks/gemm_stream_k.py --iters 10 --repeats 3 $SHAPES \
    > "$OUT/gemm_stream_k.txt" 2>&1
echo "stream-K rc $? at $(( $(date +%s) - t0 )) s"
echo "== gpu pytest"; grep -E "^(FAILED|ERROR)" "$OUT/pytest_gpu.txt" | head -20; tail -1 "$OUT/pytest_gpu.txt"
echo "== differential"; grep -E "^progress|^programs|mismatch" "$OUT/diff_programs.log" | tail -3
echo "== attention"; grep -E "x cuDNN|Error" "$OUT/attention.txt" | cut -c1-200
echo "== demo"; tail -6 "$OUT/demo.txt" | cut -c1-200
echo "== stream-K"; grep -E "^\| (M|[0-9])" "$OUT/gemm_stream_k.txt" | tail -7 | cut -c1-200
grep -E "CHECK FAILED|Error" "$OUT/gemm_stream_k.txt" | head -5
