#!/usr/bin/env bash
# Session 16, device call D (~3 min): where FlashAttention-4 led on the H100 in call B
# (RESULTS.md "Session 16, device calls A-C"), interleaved A/Bs of existing policies
# (benchmarks/attention_ab.py), and D=64 causal short (0.87-0.93x cuDNN on the H100, 1.02x on
# the H200 in session 15) with session 14's d64c14 set.
# Predictions: fa4d128l16 at S=8192/16384: 2 warpgroups of 128 keys +2-6% over the long default
# (FA4's shape leads by 5-10% there); fa4d64l16 at S=8192: claimed tiles +0-2%, 2 warpgroups
# -3..-8%; d64c14 at B=16 S=1024: the short default stays best within 3% (the H100's gap to
# cuDNN there is not a schedule choice).
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=.
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
timeout 150 python3 benchmarks/attention_ab.py --set fa4d128l16 --shapes "2,16,8192;1,16,16384" --rounds 11 --out "$OUT" 2>&1 | tee "$OUT/ab_d128.txt" | tail -14
timeout 120 python3 benchmarks/attention_ab.py --set fa4d64l16 --shapes "2,16,8192;4,16,4096" --rounds 11 --out "$OUT" 2>&1 | tee "$OUT/ab_d64.txt" | tail -14
timeout 120 python3 benchmarks/attention_ab.py --set d64c14 --shapes "16,16,1024;8,16,2048" --rounds 11 --out "$OUT" 2>&1 | tee "$OUT/ab_d64c.txt" | tail -16
echo "== done ($(( $(date +%s) - t0 )) s) =="
