#!/usr/bin/env bash
# Issue 14 item 1, the C-level call path (jit/c_call.py, docs/launch.md): one device call, under
# 3 minutes. Installs apache-tvm-ffi from .whl/ (carried: the lead copies
# /tmp/fa4/wheels/apache_tvm_ffi-0.1.15.post2-cp312-*.whl there) into a --target dir, for the
# tvm-ffi row and CuTe DSL's TVM-FFI path; runs the launch, graph, stream and device GPU tests with
# the C path on and off (WARPSTAGE_CCALL=1/0), then benchmarks/launch_overhead.py (C and Python
# rows interleaved). Logs under $OUT; a short table last. From the repository root:
#     bash scripts/gpu_clevel.sh          (carry .whl when the wheel is there)
set -uo pipefail
export PYTHONPATH=. PYTHONUNBUFFERED=1 WARPSTAGE_CACHE_DIR=/tmp/ws-cache-clevel
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"
rm -rf "$WARPSTAGE_CACHE_DIR"
{ date -u; nvidia-smi --query-gpu=index,name,driver_version,clocks.sm --format=csv,noheader; } 2>&1 | tee "$OUT/env.txt"
if ls .whl/apache_tvm_ffi-*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site-tvmffi .whl/apache_tvm_ffi-*.whl 2>&1 | tail -2
  export PYTHONPATH=.:/tmp/site-tvmffi
fi
[ -d /tmp/site ] && export PYTHONPATH="$PYTHONPATH:/tmp/site"   # CuTe DSL, if fa4_install.sh ran here
python3 -c "import tvm_ffi; print('tvm_ffi', tvm_ffi.__version__)" 2>&1 | tail -1 | tee -a "$OUT/env.txt"
TESTS="tests/jit/test_c_call_gpu.py tests/jit/test_fast_call_gpu.py tests/runtime/test_graphs_gpu.py
  tests/gpu/test_devices_gpu.py tests/runtime/test_tma_launch_gpu.py"
for mode in 1 0; do
  WARPSTAGE_CCALL=$mode timeout 60 python3 -m pytest -m gpu -q -p no:cacheprovider $TESTS 2>&1 \
    | tee "$OUT/pytest_ccall$mode.txt" | tail -6
done
timeout 60 python3 -X faulthandler benchmarks/launch_overhead.py --batches 5 --launches 5000 2>&1 | tee "$OUT/launch_overhead.txt"
echo "== summary =="
for mode in 1 0; do echo "WARPSTAGE_CCALL=$mode: $(tail -1 "$OUT/pytest_ccall$mode.txt")"; done
grep -E "^ws |^  the |^  BoundLaunch|^raw|^torch|^Triton|^CuTe|^tvm-ffi|^C path" "$OUT/launch_overhead.txt"
