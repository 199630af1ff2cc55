#!/usr/bin/env bash
# Session 17, device call A (~8 min): every GPU test at main (session 16's later commits were not
# GPU-run), then Nsight Compute on the default wgmma FlashAttention at the points where
# FlashAttention-4 leads (D=128 and D=64, B=2 H=16 S=8192, non-causal): per-SASS-instruction
# warp-state samples (SourceCounters), exported as CSV for reading on the CPU; then the
# fa4d64l16 A/B that session 16 could not run.
# Predictions: every GPU test passes (session 16's later commits touch error paths, warnings and
# prepare() in the simulator only). ncu: the consumer warps' largest stall in the K/V step is
# the wgmma wait (WARPGROUP.DEPBAR / HGMMA dependency, ~30-40% of the step's samples), then the
# named-barrier turn (BAR.SYNC, ~10-20%) and the MUFU pipe (~10%); tensor pipe active ~70-75%
# (700 of ~990 TFLOP/s). fa4d64l16 at S=8192: claimed tiles +0-2%, 2 warpgroups -3..-8%.
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=.
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
echo "ncu: $NCU"
timeout 210 python3 -m pytest -m gpu -q -n 6 -p no:cacheprovider -rf tests > "$OUT/pytest_gpu.txt" 2>&1
echo "pytest rc=$?" >> "$OUT/pytest_gpu.txt"; tail -8 "$OUT/pytest_gpu.txt"
echo "== tests done ($(( $(date +%s) - t0 )) s) =="
for D in 128 64; do
  timeout 110 "$NCU" --clock-control none -k regex:flash_attention --launch-skip 2 --launch-count 1 \
      --set full --import-source no -f -o "$OUT/ws_d$D" \
      python3 scripts/ncu_attention.py --impl warpstage --shape 2,16,8192,$D > "$OUT/ncu_d$D.log" 2>&1
  echo "ncu D=$D rc=$?"; tail -3 "$OUT/ncu_d$D.log"
  "$NCU" --import "$OUT/ws_d$D.ncu-rep" --page source --csv --print-source sass > "$OUT/ws_d${D}_sass.csv" 2>&1
  "$NCU" --import "$OUT/ws_d$D.ncu-rep" --page details --csv > "$OUT/ws_d${D}_details.csv" 2>&1
  "$NCU" --import "$OUT/ws_d$D.ncu-rep" --page raw --csv > "$OUT/ws_d${D}_raw.csv" 2>&1
  wc -c "$OUT"/ws_d$D* | tail -5
  echo "== ncu D=$D done ($(( $(date +%s) - t0 )) s) =="
done
timeout 100 python3 benchmarks/attention_ab.py --set fa4d64l16 --shapes "2,16,8192;4,16,4096" --rounds 9 --out "$OUT" 2>&1 | tee "$OUT/ab_d64.txt" | tail -14
echo "== done ($(( $(date +%s) - t0 )) s) =="
