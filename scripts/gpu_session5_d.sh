#!/bin/bash
# Session 5's closing device call, part 2 (< 8 min): launch_overhead.py (its raw rows' lifetime
# fixed; C and Python rows, tvm-ffi from a carried .whl/), the graph/stream GPU tests after
# their spy fix, gemm3's benchmarks (host path, small M, FP8), and the attention table and
# chart with the new defaults (fma_select, overlap_tiles at D=64 causal short, native D=96).
#   PYTHONPATH=. bash scripts/gpu_session5_d.sh        (carry .whl)
set -u
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"
export PYTHONPATH=${PYTHONPATH:-.} PYTHONUNBUFFERED=1
cd "$(dirname "$0")/.."
t0=$(date +%s)
if ls .whl/apache_tvm_ffi-*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site-tvmffi .whl/apache_tvm_ffi-*.whl > /dev/null 2>&1
  TVM=/tmp/site-tvmffi
fi
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-launch PYTHONPATH=$PYTHONPATH:${TVM:-} timeout 70 python3 \
    -X faulthandler benchmarks/launch_overhead.py --batches 5 --launches 5000 \
    > "$OUT/launch_overhead.txt" 2>&1; echo "launch rc $?" >> "$OUT/rc.txt"
timeout 40 python3 -m pytest -m gpu -q -p no:cacheprovider tests/runtime/test_graphs_gpu.py \
    tests/jit/test_c_call_gpu.py > "$OUT/pytest_graphs.txt" 2>&1; echo "graphs rc $?" >> "$OUT/rc.txt"
export WARPSTAGE_CACHE_DIR=/tmp/ws-cache-gemm3
timeout 25 python3 benchmarks/gemm_host.py --calls 500 > "$OUT/gemm_host.txt" 2>&1
echo "gemm_host rc $?" >> "$OUT/rc.txt"
timeout 80 python3 benchmarks/gemm.py --small-m --iters 20 --repeats 5 > "$OUT/bench_small_m.txt" 2>&1
echo "small_m rc $?" >> "$OUT/rc.txt"
timeout 45 python3 benchmarks/gemm.py --fp8 --iters 10 --repeats 3 --shape 4096,4096,4096 \
    --shape 8192,8192,8192 > "$OUT/bench_fp8.txt" 2>&1; echo "fp8 rc $?" >> "$OUT/rc.txt"
export WARPSTAGE_CACHE_DIR=/tmp/ws-cache-attn
timeout 200 python3 benchmarks/attention.py --chart --head-dims 64,128 --out "$OUT" \
    > "$OUT/attention.txt" 2>&1; echo "attention rc $?" >> "$OUT/rc.txt"
cat "$OUT/rc.txt"
echo "== graphs"; grep -E "^(FAILED|ERROR)" "$OUT/pytest_graphs.txt"; tail -1 "$OUT/pytest_graphs.txt"
echo "== launch"; tail -34 "$OUT/launch_overhead.txt"
echo "== gemm_host"; tail -8 "$OUT/gemm_host.txt"
echo "== small M"; grep -E "^\| [0-9]" "$OUT/bench_small_m.txt" | tail -14 | cut -c1-180
echo "== fp8"; grep -E "^\| [0-9]" "$OUT/bench_fp8.txt" | tail -3
echo "== attention"; grep -vE "^\s*$" "$OUT/attention.txt" | tail -40 | cut -c1-200
echo "total $(( $(date +%s) - t0 )) s"
