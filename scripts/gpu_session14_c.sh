#!/bin/bash
# Session 14, device call C (~3 min): (1) the GPU cases of claimed tiles with overlapped
# boundaries (tests/examples/test_flash_attention_wgmma_gpu.py -k overlap_tiles, and the op's
# D=128 tests with the new short default); (2) sweeps d128c14 (causal), d96d14, d64s14.
set -u
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"; export OUT
cd "$(dirname "$0")/.."
export PYTHONPATH=. PYTHONUNBUFFERED=1
t0=$(date +%s)
python3 -m compileall -q warpstage benchmarks examples > /dev/null
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-s14c-t timeout 120 python3 -m pytest -q -p no:cacheprovider -n 8 \
    tests/examples/test_flash_attention_wgmma_gpu.py tests/ops/test_flash_attention_gpu.py \
    tests/ops/test_attention_features_gpu.py tests/ops/test_attention_dynamic_tiles.py \
    -k "overlap_tiles or 128 or dynamic" > "$OUT/pytest.txt" 2>&1
echo "pytest rc $? at $(( $(date +%s) - t0 )) s"
for spec in "d128c14 8,16,1024;16,16,1024;4,16,4096" "d96d14 16,16,1024;4,16,4096" \
            "d64s14 16,16,1024;8,16,2048"; do
    set -- $spec
    mkdir -p "$OUT/$1"
    WARPSTAGE_CACHE_DIR=/tmp/ws-cache-s14c timeout 100 python3 benchmarks/attention_ab.py \
        --set "$1" --rounds 15 --iters 20 --shapes "$2" --out "$OUT/$1" > "$OUT/$1.txt" 2>&1
    echo "$1 rc $? at $(( $(date +%s) - t0 )) s"
done
echo "== pytest"; grep -E "^(FAILED|ERROR)" "$OUT/pytest.txt" | head; tail -1 "$OUT/pytest.txt"
for s in d128c14 d96d14 d64s14; do echo "== $s"; cut -c1-190 "$OUT/$s.txt" | grep -v "^$"; done
