#!/bin/bash
# Session 7, device call B, right after call A (carry .whl holding cu13.part2): installs
# FlashAttention-4 into /tmp/site (scripts/fa4_install.sh), then attn7's GPU tests and sweeps
# (scripts/gpu_attn7.sh; benchmarks/attention.py --sweep logs FA4 beside cuDNN per shape).
set -u
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"; export OUT
cd "$(dirname "$0")/.."
t0=$(date +%s)
bash scripts/fa4_install.sh
if [ -d /tmp/site ]; then
    export PYTHONPATH=.:/tmp/site:/tmp/site/nvidia_cutlass_dsl/dsl_packages
    python3 -c "import flash_attn.cute; print('FA4 imports')" 2>&1 | tail -1
fi
timeout 420 bash scripts/gpu_attn7.sh > "$OUT/attn7.txt" 2>&1
echo "attn7 rc $? at $(( $(date +%s) - t0 )) s"
cat "$OUT/attn7.txt" | cut -c1-220 | tail -80
