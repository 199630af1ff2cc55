#!/usr/bin/env bash
# Session 6, first device call (~3 min): the launch cost with the GPU busy (the host's enqueue
# alone, benchmarks/launch_overhead.py --busy) beside the usual back-to-back rows, and the
# small-M GEMM sweep at today's main (benchmarks/gemm.py --small-m: device time, end to end,
# and the tile rows x width x splits policy rows) for the small-M work of issue 13.
set -uo pipefail
export PYTHONPATH=. PYTHONUNBUFFERED=1 WARPSTAGE_CACHE_DIR=/tmp/ws-cache-s6a
OUT=${OUT:-$(mktemp -d)}; export OUT; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader > "$OUT/env.txt" 2>&1
for w in .whl/*.whl; do [ -e "$w" ] && python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/whl "$w" >/dev/null 2>&1; done
export PYTHONPATH=.:/tmp/whl
timeout 60 python3 benchmarks/launch_overhead.py --batches 7 --launches 400 --busy > "$OUT/launch_busy.txt" 2>&1; busy_rc=$?
timeout 60 python3 benchmarks/launch_overhead.py --batches 5 --launches 3000 > "$OUT/launch_b2b.txt" 2>&1; b2b_rc=$?
timeout 150 python3 benchmarks/gemm.py --small-m --iters 20 --repeats 5 > "$OUT/bench_small_m.txt" 2>&1; small_rc=$?
echo "== $(cat "$OUT/env.txt"); rc busy=$busy_rc b2b=$b2b_rc small=$small_rc"
echo "== launch, busy GPU (enqueue alone)"; grep -E "^ws |^  |^raw|^torch|^Triton|^tvm|^C path" "$OUT/launch_busy.txt" | cut -c1-110
echo "== launch, back to back"; grep -E "^ws kern|^  the same, Python|^  the C|^ws prepared|^raw|^Triton" "$OUT/launch_b2b.txt" | cut -c1-110
echo "== small M"; grep -E "^\| [0-9]" "$OUT/bench_small_m.txt" | cut -c1-200
grep -E "^Policies" "$OUT/bench_small_m.txt" | sort -u | cut -c1-900
tail -3 "$OUT/bench_small_m.txt"
