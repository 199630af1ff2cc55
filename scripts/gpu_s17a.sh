#!/usr/bin/env bash
# Session 17, device call A (~9 min; carries .whl, FlashAttention-4's first half, kept in /tmp
# for call B): every GPU test at this tree (session 16's later commits and this session's
# descriptor legalization were not GPU-run), then the descriptor change timed against the tree
# before it (_base17/: warpstage at 580a811, carried untracked) with benchmarks/attention_trees.py
# (fresh processes in turns, errors against SDPA), then Nsight Compute on the default wgmma
# kernels at D=64 and D=128, B=2 H=16 S=8192 (SourceCounters: per-SASS warp-state samples,
# exported as CSV for reading on the CPU).
# Predictions: every GPU test passes. Descriptor change: the K/V step 2-3% fewer instructions
# and the ping-pong turn ~10% shorter, so D=64 long +0.5..+2% (issue-bound steps), D=128 long
# +0..+1%, errors identical (the same descriptor bits). ncu: the consumer warps' largest
# stalls in the K/V step at D=64 are the MUFU pipe (math/mio throttle at the EX2 run) and the
# wgmma wait; at D=128 the wgmma wait and the named-barrier turn; tensor pipe active ~60% at
# D=64 and ~75% at D=128.
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=.
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"
t0=$(date +%s)
bash scripts/fa4_install.sh 2>&1 | tail -1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
echo "ncu: $NCU"
timeout 200 python3 -m pytest -m gpu -q -n 6 -p no:cacheprovider -rf tests > "$OUT/pytest_gpu.txt" 2>&1
echo "pytest rc=$?" >> "$OUT/pytest_gpu.txt"; tail -8 "$OUT/pytest_gpu.txt"
echo "== tests done ($(( $(date +%s) - t0 )) s) =="
for tree in _base17 .; do python3 -m compileall -q "$tree/warpstage" > /dev/null; done
timeout 170 python3 benchmarks/attention_trees.py --trees _base17,. --rounds 4 --cache /tmp/ab17 \
    --only wgmma:64,wgmma:128 --shapes "2,16,8192;4,16,4096" 2>&1 | tee "$OUT/attention_trees.txt" | tail -10
echo "== trees done ($(( $(date +%s) - t0 )) s) =="
for D in 64 128; do
  timeout 80 "$NCU" --clock-control none -k regex:flash_attention --launch-skip 2 --launch-count 1 \
      --set full --import-source no -f -o "$OUT/ws_d$D" \
      python3 scripts/ncu_attention.py --impl warpstage --shape 2,16,8192,$D > "$OUT/ncu_d$D.log" 2>&1
  echo "ncu D=$D rc=$?"; tail -2 "$OUT/ncu_d$D.log"
  "$NCU" --import "$OUT/ws_d$D.ncu-rep" --page source --csv --print-source sass > "$OUT/ws_d${D}_sass.csv" 2>&1
  "$NCU" --import "$OUT/ws_d$D.ncu-rep" --page details --csv > "$OUT/ws_d${D}_details.csv" 2>&1
  ls -la "$OUT"/ws_d$D* | awk '{print $5, $9}'
  echo "== ncu D=$D done ($(( $(date +%s) - t0 )) s) =="
done
