#!/bin/bash
# Issue 11, session 8 (branch review8), on the H200 machine's CPUs (no GPU is used), one run
# under ~4.5 min: the session-8 misuse tests, the key's property test with more examples (in
# memory, and source edits across two processes through the disk cache), and the long
# differential run (int / float / arith programs, Python vs trace + simulator) on every core for
# 190 s, toward the issue's 10^5 programs. Logs under $OUT (or a temp dir); a short table last.
#   PYTHONPATH=. bash scripts/gpu_review8.sh
set -u
OUT=${OUT:-$(mktemp -d)}
export PYTHONPATH=${PYTHONPATH:-.}
export WARPSTAGE_TARGET=sim
cd "$(dirname "$0")/.."
t0=$(date +%s)
timeout 60 python3 -m pytest -q -p no:cacheprovider tests/test_misuse_sweep8.py \
    > "$OUT/sweep8.log" 2>&1
sweep_rc=$?
WS_PROPERTY_EXAMPLES=150 WS_PROPERTY_DISK_EXAMPLES=8 timeout 120 python3 -m pytest -q \
    -p no:cacheprovider tests/frontend/test_facts_property.py > "$OUT/property.log" 2>&1
prop_rc=$?
timeout -k 10 200 python3 benchmarks/diff_programs.py --programs 150000 --jobs "$(nproc)" \
    --chunk 200 --seed 800000 --seconds 190 > "$OUT/diff_programs.log" 2>&1
diff_rc=$?
echo "== session-8 misuse tests (rc $sweep_rc)"; tail -2 "$OUT/sweep8.log"
echo "== property test of the key, 150 + 8 examples (rc $prop_rc)"; tail -2 "$OUT/property.log"
echo "== differential programs (rc $diff_rc; stopped after 190 s: the counts are what ran)"
grep -E "^progress|^programs|mismatch" "$OUT/diff_programs.log" | tail -3
echo "total $(( $(date +%s) - t0 )) s; logs in $OUT"
