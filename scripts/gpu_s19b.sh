#!/usr/bin/env bash
# Session 19, device call B, right after call A on the same warm machine (~2 min): carries
# .whl_b, installs FlashAttention-4, and runs benchmarks/attention.py's table (warpstage through
# the public op, cuDNN, SDPA flash, FA4, the floor) with exp_after_wait in the long defaults.
# Prediction: the flagship B=4 H=16 S=4096 D=128 +1..+2.5% over session 19's first table (698.9
# TFLOP/s, 1.012x FA4), so ~1.02-1.03x FA4; D=64 S=4096 +2..+3% (514 -> ~527, FA4 539).
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"
t0=$(date +%s)
mkdir -p .whl && cp .whl_b/* .whl/ && bash scripts/fa4_install.sh 2>&1 | tail -1
export PYTHONPATH=.:/tmp/site:/tmp/site/nvidia_cutlass_dsl/dsl_packages
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
timeout 200 python3 benchmarks/attention.py --out "$OUT" 2>&1 | tee "$OUT/attention.txt" | tail -12
echo "== done ($(( $(date +%s) - t0 )) s) =="
