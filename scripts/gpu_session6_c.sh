#!/bin/bash
# Session 6's closing device call, part 1 (< 9.5 min), after merging gemm6, err6, ci6, attn6,
# tp6, host6 and compile6: every GPU test (8 xdist workers), the op plans' small-call rows
# (benchmarks/ops_small.py: end to end vs device time with and without plans), the demo,
# compile_time.py (compile6's loop guess and the kept rewrite), launch_overhead.py (back to
# back; tvm-ffi from a carried .whl/). Logs under $OUT.
#   PYTHONPATH=. bash scripts/gpu_session6_c.sh        (carry .whl)
set -u
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"; export OUT
export PYTHONPATH=${PYTHONPATH:-.} PYTHONUNBUFFERED=1
cd "$(dirname "$0")/.."
t0=$(date +%s)
python3 -m compileall -q warpstage > /dev/null
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-tests timeout 270 python3 -m pytest -m gpu -q -p no:cacheprovider \
    -n 8 tests > "$OUT/pytest_gpu.txt" 2>&1; echo "pytest gpu rc $?" >> "$OUT/rc.txt"
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-ops timeout 100 python3 benchmarks/ops_small.py --iters 200 \
    --repeats 5 > "$OUT/ops_small.txt" 2>&1; echo "ops_small rc $?" >> "$OUT/rc.txt"
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-demo timeout 40 python3 -m warpstage demo > "$OUT/demo.txt" 2>&1
echo "demo rc $?" >> "$OUT/rc.txt"
timeout 100 python3 benchmarks/compile_time.py fresh > "$OUT/compile_time.txt" 2>&1
echo "compile rc $?" >> "$OUT/rc.txt"
if ls .whl/apache_tvm_ffi-*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site-tvmffi .whl/apache_tvm_ffi-*.whl > /dev/null 2>&1
  export PYTHONPATH=$PYTHONPATH:/tmp/site-tvmffi
fi
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-launch timeout 50 python3 -X faulthandler benchmarks/launch_overhead.py \
    --batches 5 --launches 3000 > "$OUT/launch_overhead.txt" 2>&1; echo "launch rc $?" >> "$OUT/rc.txt"
cat "$OUT/rc.txt"
echo "== pytest gpu"; grep -E "^(FAILED|ERROR)" "$OUT/pytest_gpu.txt" | head -20; tail -1 "$OUT/pytest_gpu.txt"
echo "== ops_small"; grep -vE "^\s*$" "$OUT/ops_small.txt" | tail -14 | cut -c1-220
echo "== demo"; tail -3 "$OUT/demo.txt"
echo "== compile"; grep -E "^import|cold|disk hit|rewrite kept|trivial" "$OUT/compile_time.txt" | head -20
echo "== launch"; grep -E "^ws |^  the same, Python|^  the C|^ws prepared|^raw|^Triton|^torch|^tvm" "$OUT/launch_overhead.txt" | cut -c1-110
echo "total $(( $(date +%s) - t0 )) s"
