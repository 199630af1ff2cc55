#!/bin/bash
# Issue 11 on the H200 machine, one run (< ~4.5 min): the GPU tests this branch touches (the
# control-flow differential test, now with arith programs: Int32 wraparound, Python float //
# and %, float->int saturation; save/load and cache on the GPU; setmaxnreg kernels), the launch
# overhead (guards on every cache hit), and a slice of the long differential run on the
# machine's CPU cores. Logs under $OUT (or a temp dir); a short table last.
#   PYTHONPATH=. bash scripts/gpu_key.sh
set -u
OUT=${OUT:-$(mktemp -d)}
export PYTHONPATH=${PYTHONPATH:-.}
cd "$(dirname "$0")/.."
t0=$(date +%s)
WARPSTAGE_DIFF_EXAMPLES_GPU=60 timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider \
    tests/gpu/test_control_flow_gpu.py tests/gpu/test_hopper_gpu.py tests/test_save_load.py \
    > "$OUT/gpu_tests.log" 2>&1
gpu_rc=$?
timeout 60 python3 benchmarks/launch_overhead.py --batches 5 --launches 5000 \
    > "$OUT/launch_overhead.log" 2>&1
timeout -k 10 140 python3 benchmarks/diff_programs.py --programs 100000 --jobs "$(nproc)" \
    --chunk 200 --seed 500000 --seconds 100 > "$OUT/diff_programs.log" 2>&1
diff_rc=$?
echo "== gpu tests (rc $gpu_rc)"; tail -3 "$OUT/gpu_tests.log"
echo "== launch overhead"; tail -12 "$OUT/launch_overhead.log"
echo "== differential programs (rc $diff_rc; stopped after 100 s: the counts are what ran)"
grep -E "^progress|^programs" "$OUT/diff_programs.log" | tail -1
echo "total $(( $(date +%s) - t0 )) s; logs in $OUT"
