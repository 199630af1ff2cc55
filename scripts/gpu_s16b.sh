#!/usr/bin/env bash
# Session 16, device call B, right after call A on the same warm machine (~2 min): carries
# .whl_b (FlashAttention-4's second half and its other wheels), installs FlashAttention-4, then
# benchmarks/attention.py --chart (every D in {64, 128}, causal and not, S 1k-16k, through the
# public op beside SDPA cuDNN / flash and FA4) and launch_overhead.py (its CuTe DSL row).
# Predictions: FA4 imports this time (libs-core carried); FA4 at B=4 H=16 S=4096 D=128
# ~680-720 TFLOP/s non-causal (the 684 on another run), warpstage ~700 (session 15:
# 699.5), so ~1.00-1.03x FA4 (the 1.05x target not met); every warpstage point >= 1.0x cuDNN.
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"
t0=$(date +%s)
mkdir -p .whl && cp .whl_b/* .whl/ && bash scripts/fa4_install.sh
export PYTHONPATH=.:/tmp/site:/tmp/site/nvidia_cutlass_dsl/dsl_packages
python3 -c "import flash_attn.cute; print('flash_attn.cute imports')" 2>&1 | tail -3
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
timeout 300 python3 benchmarks/attention.py --chart --out "$OUT" 2>&1 | tee "$OUT/attention.txt" | tail -60
echo "== attention done ($(( $(date +%s) - t0 )) s) =="
timeout 90 python3 benchmarks/launch_overhead.py --batches 5 --launches 3000 > "$OUT/launch_overhead.txt" 2>&1; tail -20 "$OUT/launch_overhead.txt"
echo "== done ($(( $(date +%s) - t0 )) s) =="
