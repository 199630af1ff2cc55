#!/bin/bash
# Issue 10 item 2 (the parameter-kind table, frontend/kinds/) on the H200 machine, one run
# (< ~3 min): the GPU tests of the launch paths the table feeds (the generated call path with
# torch tensors, TMA descriptors, save/load and the stored bindings, the dtype kind on the cuda
# target), then the kinds' own tests (the hypothesis agreement test runs on tests/fake_gpu.py's
# pretend GPU there too). Logs under $OUT (or a temp dir); a short table last.
#   PYTHONPATH=. bash scripts/gpu_kinds.sh
set -u
OUT=${OUT:-$(mktemp -d)}
export PYTHONPATH=${PYTHONPATH:-.}
cd "$(dirname "$0")/.."
t0=$(date +%s)
timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider tests/jit tests/runtime/test_tma_launch_gpu.py \
    tests/frontend/test_kinds_dtype.py > "$OUT/gpu_tests.log" 2>&1
gpu_rc=$?
timeout 100 python3 -m pytest -q -p no:cacheprovider tests/frontend/test_kinds_agree.py \
    tests/frontend/test_kinds_dtype.py tests/frontend/test_binders.py tests/frontend/test_binding_time.py \
    > "$OUT/kinds_tests.log" 2>&1
kinds_rc=$?
echo "== gpu tests: tests/jit, TMA launch, dtype kind on cuda (rc $gpu_rc)"; tail -2 "$OUT/gpu_tests.log"
echo "== kinds tests (rc $kinds_rc)"; tail -1 "$OUT/kinds_tests.log"
echo "total $(( $(date +%s) - t0 )) s; logs in $OUT"
