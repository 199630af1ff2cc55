#!/bin/bash
# Session 8, device call E: attn8's rescale_threshold tests and sweeps (scripts/gpu_attn8.sh),
# then one round of benchmarks/compile_time.py fresh after compile8 (llvm_c). Logs under $OUT.
set -u
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"; export OUT
cd "$(dirname "$0")/.."
t0=$(date +%s)
mkdir -p "$OUT/attn8run"
OUT="$OUT/attn8run" timeout 330 bash scripts/gpu_attn8.sh > "$OUT/attn8.txt" 2>&1
echo "attn8 rc $? at $(( $(date +%s) - t0 )) s"
export PYTHONPATH=.; unset PYTHONDONTWRITEBYTECODE
timeout 110 python3 benchmarks/compile_time.py fresh > "$OUT/compile_time.txt" 2>&1
echo "compile_time rc $? at $(( $(date +%s) - t0 )) s"
cat "$OUT/attn8.txt" | cut -c1-220 | tail -75
echo "== compile"; grep -vE "^\s*$" "$OUT/compile_time.txt" | tail -10 | cut -c1-300
