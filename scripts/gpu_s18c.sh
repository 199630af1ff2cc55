#!/usr/bin/env bash
# Session 18, device call C (~8 min; after gpu_s17a.sh / gpu_s17b.sh on the same warm machine,
# or alone): the two step-order / tile-width A/Bs prepared on the CPU, interleaved with cuDNN
# (benchmarks/attention_ab.py: each round times every variant once, rotated order; medians and
# 25th-75th percentiles, SM clock and power sampled).
#   eaw17: exp_after_wait (FA4's order: the P V wait after the max and the exponent arguments,
#     the exponentials interleaved with the rescale and P's conversion) over the D=64 and D=128
#     long defaults, and FA4's shape (2 x 128 x 128) with it.
#   wide18: FA4's shape at 128 / 160 / 192 keys, each without and with exp_after_wait, against
#     the D=128 long default (3 warpgroups x 80 keys).
# Predictions (written 2026-12-07, session 18, before any run): eaw17 at D=64 long +0..+3%
# (the EX2 run no longer leaves a serial tail; risk: the exponentials wait for P V), at D=128
# long (3 x 80) -1..+2%; wide18: 160 keys >= 128 keys by +1..+3% at S >= 8192 (12% fewer
# instructions per key at 192, but 225 KiB of shared memory leaves one CTA per SM either way),
# 192 keys within +-2% of 160; the best 2-warpgroup variant within +-3% of the 3 x 80 default
# at S=4096, ahead of it at S=16384 (FA4's lead there is its 2 x 128 shape's steady state).
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=.
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
timeout 260 python3 benchmarks/attention_ab.py --set eaw17 --rounds 9 \
    --shapes "4,16,4096;2,16,8192;1,16,16384" --out "$OUT" 2>&1 | tee "$OUT/eaw17.txt" | tail -30
echo "== eaw17 done ($(( $(date +%s) - t0 )) s) =="
timeout 300 python3 benchmarks/attention_ab.py --set wide18 --rounds 9 \
    --shapes "4,16,4096;2,16,8192;1,16,16384" --out "$OUT" 2>&1 | tee "$OUT/wide18.txt" | tail -30
echo "== done ($(( $(date +%s) - t0 )) s) =="
