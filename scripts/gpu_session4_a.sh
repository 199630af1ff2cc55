#!/bin/bash
# Session 4, device call A (< ~9 min): part 1 of FlashAttention-4's wheels (scripts/fa4_install.sh), the
# attention sweeps "short" (S 1k/2k) and "wide" (native D 192/256), then the attention GPU
# tests (every D) while a slice of the differential run uses the other CPU cores.
#   PYTHONPATH=. bash scripts/gpu_session4_a.sh
set -u
OUT=${OUT:-$(mktemp -d)}
export PYTHONPATH=${PYTHONPATH:-.}
cd "$(dirname "$0")/.."
t0=$(date +%s)
bash scripts/fa4_install.sh > "$OUT/fa4_install.log" 2>&1    # keeps part 1 of its wheels
timeout 170 python3 benchmarks/attention.py --sweep short --sweep-shapes "16,16,1024;8,16,2048" \
    --out "$OUT" > "$OUT/sweep_short.log" 2>&1; echo "sweep short rc $?" >> "$OUT/rc.log"
mv "$OUT/attention_sweep.json" "$OUT/sweep_short.json" 2>/dev/null
timeout 170 python3 benchmarks/attention.py --sweep wide --sweep-shapes "4,16,4096;8,16,2048" \
    --out "$OUT" > "$OUT/sweep_wide.log" 2>&1; echo "sweep wide rc $?" >> "$OUT/rc.log"
mv "$OUT/attention_sweep.json" "$OUT/sweep_wide.json" 2>/dev/null
timeout -k 10 200 python3 benchmarks/diff_programs.py --programs 100000 --jobs 10 \
    --chunk 200 --seed 600000 --seconds 150 > "$OUT/diff_programs.log" 2>&1 &
diff_pid=$!
timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider -x \
    tests/gpu/test_attention_features_gpu.py tests/gpu/test_flash_attention_wgmma_gpu.py \
    > "$OUT/gpu_attention_tests.log" 2>&1; echo "gpu tests rc $?" >> "$OUT/rc.log"
wait $diff_pid; echo "diff rc $?" >> "$OUT/rc.log"
cat "$OUT/rc.log"
echo "== fa4"; tail -3 "$OUT/fa4_install.log" 2>/dev/null
echo "== sweep short"; grep -E "cuDNN|TFLOP|FAILED|compiled" "$OUT/sweep_short.log" | tail -60
echo "== sweep wide"; grep -E "cuDNN|TFLOP|FAILED|compiled" "$OUT/sweep_wide.log" | tail -60
echo "== gpu tests"; tail -5 "$OUT/gpu_attention_tests.log"
echo "== diff"; grep -E "^progress|^programs|mismatch" "$OUT/diff_programs.log" | tail -3
echo "total $(( $(date +%s) - t0 )) s"
