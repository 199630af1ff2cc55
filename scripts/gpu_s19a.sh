#!/usr/bin/env bash
# Session 19, device call A (~8 min; carries .whl, FlashAttention-4's first half, kept in /tmp
# for call B): every GPU test with exp_after_wait in the D=64 / D=128 non-causal long defaults
# (attention_plan.WGMMA_DEFAULTS; session 19's eaw17 runs: +0.8..+3.3% at S = 4096-8192), then
# where it was not measured: the short defaults (eaw19s: WGMMA_SHORT at S_q <= short_bound) and
# the causal defaults (eaw19c), each without and with it, interleaved with cuDNN.
# Predictions (2026-12-08, before the run): every GPU test passes. eaw19s: D=64 short (3 stages,
# claimed tiles) +2..+6% at S=1024 (the long kernel took +6.8% there), +1..+3% at S=2048;
# D=128 short (2 x 128 keys, overlapped boundaries) -1..+3%. eaw19c: -1..+2% at D=64 and
# D=128 causal (the masked diagonal steps keep the old order's serial tail shorter).
# Then session 17's descriptor change again (session 19's 4 rounds read D=64 non-causal 0.9-2.6%
# slower, against +0.5..+2% predicted): attention_trees.py over _base17/ (warpstage at 580a811,
# carried untracked: mkdir _base17 && git archive 580a811 warpstage | tar -x -C _base17) and
# this tree, 8 rounds, D=64 only. Prediction: within +-1% (the 4-round read was noise); if
# D=64 non-causal is again >= 1.5% slower, the change is a regression to find in the SASS.
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=.
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT" "$OUT/eaw19s" "$OUT/eaw19c"
t0=$(date +%s)
bash scripts/fa4_install.sh 2>&1 | tail -1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
timeout 220 python3 -m pytest -m gpu -q -n 6 -p no:cacheprovider -rf tests > "$OUT/pytest_gpu.txt" 2>&1
echo "pytest rc=$?" >> "$OUT/pytest_gpu.txt"; tail -4 "$OUT/pytest_gpu.txt"
echo "== tests done ($(( $(date +%s) - t0 )) s) =="
timeout 120 python3 benchmarks/attention_ab.py --set eaw19s --rounds 15 \
    --shapes "8,16,1024;4,16,2048" --out "$OUT/eaw19s" > "$OUT/eaw19s.txt" 2>&1
timeout 120 python3 benchmarks/attention_ab.py --set eaw19c --rounds 15 \
    --shapes "4,16,4096;2,16,8192" --out "$OUT/eaw19c" > "$OUT/eaw19c.txt" 2>&1
python3 scripts/ab_summary.py "$OUT"/eaw19[sc]/attention_ab.json
if [ -d _base17/warpstage ]; then
  for tree in _base17 .; do python3 -m compileall -q "$tree/warpstage" > /dev/null; done
  timeout 200 python3 benchmarks/attention_trees.py --trees _base17,. --rounds 8 --cache /tmp/ab19 \
      --only wgmma:64 --shapes "2,16,8192;4,16,4096" 2>&1 | tee "$OUT/attention_trees.txt" | tail -6
fi
echo "== done ($(( $(date +%s) - t0 )) s) =="
