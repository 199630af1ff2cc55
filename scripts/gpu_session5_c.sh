#!/bin/bash
# Session 5's closing device call, part 1 (< 9.5 min), after merging rooms, attn5, kinds, clevel,
# err5 and compile5: every GPU test (8 xdist workers; the C-level call path on, its default),
# the launch GPU tests again with it off, err5's rewrite-location tests under the device's
# Python 3.12, the demo, compile_time.py (with compile5's reference rows) and
# launch_overhead.py (C and Python rows; tvm-ffi from a carried .whl/). Logs under $OUT.
#   PYTHONPATH=. bash scripts/gpu_session5_c.sh        (carry .whl)
set -u
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"
export PYTHONPATH=${PYTHONPATH:-.} PYTHONUNBUFFERED=1
cd "$(dirname "$0")/.."
t0=$(date +%s)
python3 -m compileall -q warpstage > /dev/null
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-tests timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider \
    -n 8 tests > "$OUT/pytest_gpu.txt" 2>&1; echo "pytest gpu rc $?" >> "$OUT/rc.txt"
WARPSTAGE_CCALL=0 WARPSTAGE_CACHE_DIR=/tmp/ws-cache-tests timeout 70 python3 -m pytest -m gpu -q \
    -p no:cacheprovider -n 4 tests/jit tests/runtime/test_graphs_gpu.py tests/gpu/test_devices_gpu.py \
    tests/runtime/test_tma_launch_gpu.py > "$OUT/pytest_ccall0.txt" 2>&1
echo "pytest ccall=0 rc $?" >> "$OUT/rc.txt"
timeout 90 python3 -m pytest -q -p no:cacheprovider -n 8 tests/tune tests/test_misuse_kernel_code.py \
    tests/frontend/test_rewrite_locations.py tests/core/test_arguments.py \
    tests/lang/test_tensor_protocol.py > "$OUT/pytest_py312.txt" 2>&1
echo "pytest py3.12 rc $?" >> "$OUT/rc.txt"
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-demo timeout 40 python3 -m warpstage demo > "$OUT/demo.txt" 2>&1
echo "demo rc $?" >> "$OUT/rc.txt"
timeout 120 python3 benchmarks/compile_time.py main attention fresh reference > "$OUT/compile_time.txt" 2>&1
echo "compile rc $?" >> "$OUT/rc.txt"
if ls .whl/apache_tvm_ffi-*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site-tvmffi .whl/apache_tvm_ffi-*.whl > /dev/null 2>&1
  export PYTHONPATH=$PYTHONPATH:/tmp/site-tvmffi
fi
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-launch timeout 60 python3 -X faulthandler benchmarks/launch_overhead.py \
    --batches 5 --launches 5000 > "$OUT/launch_overhead.txt" 2>&1; echo "launch rc $?" >> "$OUT/rc.txt"
cat "$OUT/rc.txt"
echo "== pytest gpu"; grep -E "^(FAILED|ERROR)" "$OUT/pytest_gpu.txt" | head -20; tail -1 "$OUT/pytest_gpu.txt"
echo "== ccall=0"; grep -E "^(FAILED|ERROR)" "$OUT/pytest_ccall0.txt" | head; tail -1 "$OUT/pytest_ccall0.txt"
echo "== py3.12"; grep -E "^(FAILED|ERROR)" "$OUT/pytest_py312.txt" | head; tail -1 "$OUT/pytest_py312.txt"
echo "== demo"; tail -3 "$OUT/demo.txt"
echo "== compile"; grep -E "^import|cold|disk hit|reference|compiles across" "$OUT/compile_time.txt" | head -24
echo "== launch"; tail -32 "$OUT/launch_overhead.txt"
echo "total $(( $(date +%s) - t0 )) s"
