#!/usr/bin/env bash
# Session 16, device call E (the session's last: ~4.5 min): every GPU test after this session's
# frontend/runtime changes (the CUDA probe's shadowing check, rule 1 at @ws.jit calls), at -n 6
# (-n 8 ran six tests out of the H100's 80 GB in call A), then what time is left on call D's
# first A/B (fa4d128l16: where FA4 led at D=128 S >= 8192; predictions in gpu_s16d.sh).
# Predictions: every GPU test passes (the changes add checks on error paths only; the CUDA
# package on the device is a package, so the probe is unchanged there).
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=.
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
timeout 175 python3 -m pytest -m gpu -q -n 6 -p no:cacheprovider -rf tests > "$OUT/pytest_gpu.txt" 2>&1
echo "pytest rc=$?" >> "$OUT/pytest_gpu.txt"; tail -8 "$OUT/pytest_gpu.txt"
echo "== tests done ($(( $(date +%s) - t0 )) s) =="
timeout 90 python3 benchmarks/attention_ab.py --set fa4d128l16 --shapes "1,16,16384;2,16,8192" --rounds 7 --out "$OUT" 2>&1 | tee "$OUT/ab_d128.txt" | tail -14
echo "== done ($(( $(date +%s) - t0 )) s) =="
