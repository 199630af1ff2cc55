#!/bin/bash
# Session 15, boundary15 (~5 min): the D=128 short defaults' tile boundary peeled (shipped)
# against shared_boundary=True (the boundary as one more step of the K/V loop). (1) the
# interleaved A/B `attention_ab.py --set d128sb15` (non-causal, S=1024, B = 8, 4, 16) and
# `--set d128csb15` (causal, B=8 H=16 S = 1024, 2048); (2) cold compiles of both forms in fresh
# processes taking turns (`compile_trees.py`, one tree, a row per form, printed after every
# round); (3) the GPU tests of the attention files. Logs under $OUT.
set -u
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"; export OUT
cd "$(dirname "$0")/.."
export PYTHONPATH=. PYTHONUNBUFFERED=1
t0=$(date +%s)
python3 -m compileall -q warpstage benchmarks examples tests > /dev/null
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$OUT/smi.txt" 2>&1
mkdir -p "$OUT/ab" "$OUT/abc"
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-b15-ab timeout 90 python3 benchmarks/attention_ab.py \
    --set d128sb15 --rounds 15 --iters 20 --shapes "8,16,1024;4,16,1024;16,16,1024" \
    --out "$OUT/ab" > "$OUT/ab.txt" 2>&1
echo "ab rc $? at $(( $(date +%s) - t0 )) s"
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-b15-ab timeout 70 python3 benchmarks/attention_ab.py \
    --set d128csb15 --rounds 15 --iters 20 --shapes "8,16,1024;8,16,2048" \
    --out "$OUT/abc" > "$OUT/abc.txt" 2>&1
echo "abc rc $? at $(( $(date +%s) - t0 )) s"
rows=wgmma+shared_boundary=False:128,wgmma+shared_boundary=True:128
rows=$rows,wgmma+causal=True+shared_boundary=False:128,wgmma+causal=True+shared_boundary=True:128
timeout 60 python3 benchmarks/compile_trees.py --trees . --rounds 3 --rows "$rows" \
    > "$OUT/trees.txt" 2>&1
echo "trees rc $? at $(( $(date +%s) - t0 )) s"
export PYTHONDONTWRITEBYTECODE=1
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-b15 timeout 130 python3 -m pytest -m gpu -q -p no:cacheprovider \
    -n 8 tests/ops/test_attention_shared_boundary.py tests/ops/test_attention_dynamic_tiles.py \
    tests/ops/test_attention_features_gpu.py tests/examples/test_flash_attention_wgmma_gpu.py \
    > "$OUT/pytest_gpu.txt" 2>&1
echo "gpu pytest rc $? at $(( $(date +%s) - t0 )) s"
cat "$OUT/smi.txt"
echo "== ab"; cut -c1-220 "$OUT/ab.txt" | grep -v "^$"
echo "== abc"; cut -c1-220 "$OUT/abc.txt" | grep -v "^$"
echo "== trees"; cut -c1-230 "$OUT/trees.txt" | tail -9
echo "== gpu pytest"; grep -E "^(FAILED|ERROR)" "$OUT/pytest_gpu.txt" | head -20; tail -1 "$OUT/pytest_gpu.txt"
