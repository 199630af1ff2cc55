#!/bin/bash
# Issue 11, session 8 (branch review8), on the H200 machine's CPUs (no GPU is used), one run
# under ~4.5 min: the session-8 misuse tests, the key's property test with more examples (in
# memory, and source edits across two processes through the disk cache), and the long
# differential run (int / float / arith programs, Python vs trace + simulator) on every core for
# 130 s, toward the issue's 10^5 programs (SEED=... for another slice: runs add up).
# Logs under $OUT (or a temp dir); a short table last.
#   PYTHONPATH=. bash scripts/gpu_review8.sh
set -u
OUT=${OUT:-$(mktemp -d)}
export PYTHONPATH=${PYTHONPATH:-.}
export WARPSTAGE_TARGET=sim
cd "$(dirname "$0")/.."
t0=$(date +%s)
timeout 45 python3 -m pytest -q -p no:cacheprovider tests/test_misuse_sweep8.py \
    > "$OUT/sweep8.log" 2>&1
sweep_rc=$?
WS_PROPERTY_EXAMPLES=80 WS_PROPERTY_DISK_EXAMPLES=4 timeout 90 python3 -m pytest -q \
    -p no:cacheprovider tests/frontend/test_facts_property.py > "$OUT/property.log" 2>&1
prop_rc=$?
timeout -k 5 150 python3 benchmarks/diff_programs.py --programs 150000 --jobs "$(nproc)" \
    --chunk 50 --seed "${SEED:-800000}" --seconds 130 > "$OUT/diff_programs.log" 2>&1
diff_rc=$?
echo "== session-8 misuse tests (rc $sweep_rc)"; tail -2 "$OUT/sweep8.log"
echo "== property test of the key, 80 + 4 examples (rc $prop_rc)"; tail -2 "$OUT/property.log"
echo "== differential programs (rc $diff_rc; stopped starting chunks at 130 s: the counts are what ran)"
grep -E "^progress|^programs|mismatch" "$OUT/diff_programs.log" | tail -3
echo "total $(( $(date +%s) - t0 )) s; logs in $OUT"
