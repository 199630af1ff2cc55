#!/bin/bash
# The err5 branch's one device call (< 4 min): the autotuner's GPU tests (its worker processes
# now warm up before the first timing and label failures by where they happened), the traceback
# GPU test, and this branch's new tests (simulator) under the device's Python 3.12, whose call
# positions the header-line fix relies on (this machine has 3.11). Logs under $OUT; a summary
# last.
#   PYTHONPATH=. bash scripts/gpu_err5.sh
set -u
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"
export PYTHONPATH=${PYTHONPATH:-.} PYTHONUNBUFFERED=1
cd "$(dirname "$0")/.."
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-err5 timeout 200 python3 -m pytest -q -p no:cacheprovider \
    tests/gpu/test_autotune_gpu.py tests/gpu/test_tracebacks_gpu.py tests/tune \
    tests/test_misuse_kernel_code.py tests/frontend/test_rewrite_locations.py \
    tests/core/test_arguments.py tests/lang/test_tensor_protocol.py \
    > "$OUT/pytest.txt" 2>&1; echo "pytest rc $?" >> "$OUT/rc.txt"
cat "$OUT/rc.txt"
echo "== pytest"; grep -E "^(FAILED|ERROR)" "$OUT/pytest.txt" | head -20; tail -1 "$OUT/pytest.txt"
