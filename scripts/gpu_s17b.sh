#!/usr/bin/env bash
# Session 17, device call B, right after call A on the same warm machine (~6 min): carries .whl_b
# (FlashAttention-4's second half and its wheels), installs FlashAttention-4, runs Nsight Compute
# on FA4's sm90 forward at the points where it leads (D=64 and D=128, B=2 H=16 S=8192; its
# kernel's name holds FlashAttentionForwardSm90), the same sections and exports as call A's for
# warpstage, then benchmarks/attention.py's table (warpstage through the public op, cuDNN, SDPA
# flash, FA4, the floor) with this session's descriptor change in.
# Predictions: FA4's tensor pipe is ~5-10% more active than ours at S=8192 (its lead), its XU
# (MUFU) pipe busier at D=64 with fewer issue-slot stalls; the flagship B=4 H=16 S=4096 D=128
# ~1.00-1.02x FA4 (session 16: 1.008x), >= 1.05x cuDNN.
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"
t0=$(date +%s)
mkdir -p .whl && cp .whl_b/* .whl/ && bash scripts/fa4_install.sh 2>&1 | tail -1
export PYTHONPATH=.:/tmp/site:/tmp/site/nvidia_cutlass_dsl/dsl_packages
python3 -c "import flash_attn.cute; print('flash_attn.cute imports')" 2>&1 | tail -2
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
for D in 64 128; do
  timeout 90 "$NCU" --clock-control none -k regex:FlashAttentionForwardSm90 --launch-skip 2 \
      --launch-count 1 --set full --import-source no -f -o "$OUT/fa4_d$D" \
      python3 scripts/ncu_attention.py --impl fa4 --shape 2,16,8192,$D > "$OUT/ncu_fa4_d$D.log" 2>&1
  echo "ncu FA4 D=$D rc=$?"; tail -2 "$OUT/ncu_fa4_d$D.log"
  "$NCU" --import "$OUT/fa4_d$D.ncu-rep" --page source --csv --print-source sass > "$OUT/fa4_d${D}_sass.csv" 2>&1
  "$NCU" --import "$OUT/fa4_d$D.ncu-rep" --page details --csv > "$OUT/fa4_d${D}_details.csv" 2>&1
  ls -la "$OUT"/fa4_d$D* | awk '{print $5, $9}'
  echo "== ncu FA4 D=$D done ($(( $(date +%s) - t0 )) s) =="
done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
timeout 200 python3 benchmarks/attention.py --out "$OUT" 2>&1 | tee "$OUT/attention.txt" | tail -24
echo "== done ($(( $(date +%s) - t0 )) s) =="
