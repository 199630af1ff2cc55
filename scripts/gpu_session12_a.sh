#!/bin/bash
# Session 12, device call A (~5 min): the wide head dims (D = 96, 192, 256) against cuDNN with
# the fields D=64/128 took since session 5 (benchmarks/attention_ab.py --set wide12: the
# variants interleaved round by round, cuDNN in every round). The variants are compiled first
# in 12 processes into one disk cache, which the timing process then hits. Logs under $OUT.
set -u
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"; export OUT
cd "$(dirname "$0")/.."
export PYTHONPATH=.:benchmarks PYTHONUNBUFFERED=1 WARPSTAGE_CACHE_DIR=/tmp/ws-cache-s12a
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv > "$OUT/smi.txt" 2>&1
timeout 150 python3 - > "$OUT/precompile.txt" 2>&1 <<'PY'
import multiprocessing as mp, time
import attention, attention_ab
jobs = [(d, c, f) for (d, c), fs in attention_ab.SETS["wide12"].items() for f in fs]
t = time.perf_counter()
with mp.get_context("spawn").Pool(12) as pool:
    for job, sec, st in pool.map(attention._compile_one, jobs):
        print(job, f"{sec:.1f} s", st)
print(f"compiled {len(jobs)} in {time.perf_counter() - t:.1f} s")
PY
echo "precompile rc $? at $(( $(date +%s) - t0 )) s"
timeout 330 python3 benchmarks/attention_ab.py --set wide12 --shapes "4,16,4096;16,16,1024" \
    --rounds 7 --iters 10 --out "$OUT" > "$OUT/wide12.txt" 2>&1
echo "wide12 rc $? at $(( $(date +%s) - t0 )) s"
echo "== precompile"; grep -v " ok$" "$OUT/precompile.txt" | cut -c1-220 | tail -12
echo "== wide12"; cut -c1-230 "$OUT/wide12.txt" | tail -80
