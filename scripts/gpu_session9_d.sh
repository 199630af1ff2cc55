#!/bin/bash
# Session 9, device call D (the closing run, < 10 min): the whole GPU suite on the merged tree
# (attn9, gemm9, compile9, suite9; dynamic_tiles' counters one pair per stream), the attention
# table and chart through the public op, `warpstage demo`, gemm9's host-time and GEMM rows, and
# the compile-time rows (fresh processes). Logs under $OUT.
set -u
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"; export OUT
cd "$(dirname "$0")/.."
export PYTHONPATH=. PYTHONUNBUFFERED=1
t0=$(date +%s)
python3 -m compileall -q warpstage benchmarks > /dev/null
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-d9 timeout 240 python3 -m pytest -m gpu -q -p no:cacheprovider -n 8 tests \
    > "$OUT/pytest_gpu.txt" 2>&1
echo "gpu pytest rc $? at $(( $(date +%s) - t0 )) s"
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-attn-d9 timeout 100 python3 benchmarks/attention.py --chart \
    --head-dims 64,128 --out "$OUT" > "$OUT/attention.txt" 2>&1
echo "attention rc $? at $(( $(date +%s) - t0 )) s"
timeout 60 python3 -m warpstage demo > "$OUT/demo.txt" 2>&1
echo "demo rc $? at $(( $(date +%s) - t0 )) s"
timeout 40 python3 benchmarks/gemm_host_gpu.py > "$OUT/host_gpu.txt" 2>&1
timeout 80 python3 benchmarks/gemm.py --no-sweep --no-fp8 --kmajor --iters 20 --repeats 5 \
    --shape 128,4096,4096 --shape 128,11008,4096 --shape 128,4096,11008 \
    --shape 128,128256,4096 --shape 4096,4096,11008 > "$OUT/gemm_llm.txt" 2>&1
timeout 90 python3 benchmarks/gemm.py --no-sweep --iters 20 --repeats 5 \
    --shape 4096,4096,4096 --shape 8192,8192,8192 > "$OUT/gemm_squares.txt" 2>&1
echo "gemm rc $? at $(( $(date +%s) - t0 )) s"
unset PYTHONDONTWRITEBYTECODE
timeout 60 python3 benchmarks/compile_time.py fresh > "$OUT/compile_time.txt" 2>&1
echo "compile rc $? at $(( $(date +%s) - t0 )) s"
echo "== gpu pytest"; grep -E "^(FAILED|ERROR)" "$OUT/pytest_gpu.txt" | head -20; tail -1 "$OUT/pytest_gpu.txt"
echo "== attention"; grep -E "x cuDNN|Error" "$OUT/attention.txt" | cut -c1-200
echo "== demo"; tail -5 "$OUT/demo.txt" | cut -c1-200
echo "== gemm host"; cat "$OUT/host_gpu.txt"
echo "== gemm"; grep -hE "^\| M x N" "$OUT/gemm_llm.txt" | head -1; grep -hE "^\| [0-9]|^FP8" "$OUT/gemm_llm.txt" "$OUT/gemm_squares.txt" | grep -v "\]$" | cut -c1-230
grep -hE "Error|error:" "$OUT/gemm_llm.txt" "$OUT/gemm_squares.txt" | head -5
echo "== compile"; grep -E "trivial kernel|cold|disk hit" "$OUT/compile_time.txt" | cut -c1-160
