#!/bin/bash
# Issue 11, session 7 (branch err7), one run (< ~5 min) on the H200 machine: the tests of the
# launch paths this branch touches that the CPU machine skips (they need torch or a GPU): the
# per-parameter binders and the generated / C call paths (a Static[int] given numpy integers,
# parameters annotated int / float / bool), the gpu-marked frontend/jit tests, and the launch
# overhead (a Static[int] and the class snapshot on every hit).
#   PYTHONPATH=. bash scripts/gpu_err7.sh
set -u
OUT=${OUT:-$(mktemp -d)}
export PYTHONPATH=${PYTHONPATH:-.}
cd "$(dirname "$0")/.."
t0=$(date +%s)
timeout 200 python3 -m pytest -q -p no:cacheprovider -x \
    tests/frontend/test_binders.py tests/frontend/test_kinds_agree.py \
    tests/frontend/test_fast_call_devices.py tests/jit/test_fast_call.py tests/jit/test_c_call.py \
    tests/jit/test_c_call_gpu.py tests/jit/test_fast_call_gpu.py \
    > "$OUT/launch_tests.log" 2>&1
launch_rc=$?
timeout 150 python3 -m pytest -q -p no:cacheprovider -m gpu tests/frontend tests/jit \
    > "$OUT/gpu_marked.log" 2>&1
gpu_rc=$?
timeout 60 python3 benchmarks/launch_overhead.py --batches 5 --launches 5000 \
    > "$OUT/launch_overhead.log" 2>&1
echo "== launch-path tests (rc $launch_rc)"; tail -3 "$OUT/launch_tests.log"
echo "== gpu-marked tests of tests/frontend, tests/jit (rc $gpu_rc)"; tail -3 "$OUT/gpu_marked.log"
echo "== launch overhead"; tail -12 "$OUT/launch_overhead.log"
echo "total $(( $(date +%s) - t0 )) s; logs in $OUT"
