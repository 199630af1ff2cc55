#!/bin/bash
# Session 4, device call B, right after call A on the same warm machine (< ~5 min): installs
# FlashAttention-4 (part 2 of its wheels, scripts/fa4_install.sh) and runs the attention table
# and chart side by side: warpstage, cuDNN SDPA, flash SDPA, FlashAttention-4.
#   PYTHONPATH=. bash scripts/gpu_session4_b.sh
set -u
OUT=${OUT:-$(mktemp -d)}
export PYTHONPATH=${PYTHONPATH:-.}
cd "$(dirname "$0")/.."
t0=$(date +%s)
bash scripts/fa4_install.sh > "$OUT/fa4_install.log" 2>&1
if [ -d /tmp/site ]; then
    export PYTHONPATH=/tmp/site:/tmp/site/nvidia_cutlass_dsl/dsl_packages:$PYTHONPATH
fi
python3 -c "from flash_attn.cute import flash_attn_func; print('fa4 importable')" \
    >> "$OUT/fa4_install.log" 2>&1
timeout 420 python3 benchmarks/attention.py --chart --head-dims 64,128,256 --iters 10 \
    --repeats 5 --out "$OUT" > "$OUT/attention.log" 2>&1; echo "attention rc $?"
echo "== fa4"; tail -4 "$OUT/fa4_install.log"
grep -E "B=|floor|FlashAttention-4|chart" "$OUT/attention.log"
echo "total $(( $(date +%s) - t0 )) s"
