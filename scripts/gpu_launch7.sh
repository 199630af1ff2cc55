#!/usr/bin/env bash
# One device call for issue 14's launch must-show after session 7's launch glue (docs/launch.md,
# "The launch glue"): the C-path and graph GPU tests, benchmarks/launch_overhead.py (all rows,
# interleaved), the glue alone on this host's CPU (benchmarks/launch_glue.py: the no-op driver,
# so only the host work), and a pure-C floor (scripts/launch_floor.c: cuLaunchKernel in a C loop,
# compiled here with gcc/cc, skipped with a message without one). Logs under $OUT, a summary
# last. About 1-2 minutes (at most 3). Run from the repository root: bash scripts/gpu_launch7.sh
set -uo pipefail
export PYTHONPATH=. PYTHONUNBUFFERED=1 WARPSTAGE_CACHE_DIR=/tmp/ws-cache-launch7
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"
rm -rf "$WARPSTAGE_CACHE_DIR"
{ date -u; git log -1 --format='commit %h %s' 2>/dev/null
  nvidia-smi --query-gpu=index,name,driver_version,clocks.sm --format=csv,noheader
  python3 -c "import sys, torch; print('python', sys.version.split()[0], 'torch', torch.__version__)"
  nproc; uptime; } 2>&1 | tee "$OUT/env.txt"
timeout 60 python3 -m pytest -q -p no:cacheprovider tests/jit/test_c_glue.py tests/jit/test_c_call.py \
  tests/jit/test_c_call_gpu.py tests/jit/test_fast_call_gpu.py tests/runtime/test_graphs_gpu.py \
  2>&1 | tee "$OUT/pytest_launch7.txt" | tail -6
timeout 75 python3 benchmarks/launch_overhead.py --batches 7 --launches 5000 2>&1 | tee "$OUT/launch_overhead.txt"
timeout 25 python3 benchmarks/launch_glue.py --reps 100 2>&1 | tee "$OUT/launch_glue.txt"
CC=$(command -v gcc || command -v cc || true)
if [ -z "$CC" ]; then
  echo "C floor: skipped (no gcc or cc on this host)" | tee "$OUT/launch_floor.txt"
elif "$CC" -O2 -o /tmp/launch7_floor scripts/launch_floor.c -ldl 2>"$OUT/launch_floor_cc.txt"; then
  timeout 20 /tmp/launch7_floor 20000 5 2>&1 | tee "$OUT/launch_floor.txt"
else
  echo "C floor: skipped ($CC failed: $(head -c 300 "$OUT/launch_floor_cc.txt"))" | tee "$OUT/launch_floor.txt"
fi
echo "== summary =="
tail -1 "$OUT/pytest_launch7.txt"
grep -E "^ws |^  the same|^  the C stub|^  p\(\)|^  BoundLaunch|^raw|^torch|^Triton|^CuTe|^C path" "$OUT/launch_overhead.txt"
grep -E "glue|stub alone" "$OUT/launch_glue.txt"
cat "$OUT/launch_floor.txt"
