#!/usr/bin/env bash
# One device call for issue 14's compile-time rows and issue 17's shared disk cache (< 2 min):
# compile_time.py's rows (import, per-stage cold compiles, FlashAttention D=64/128 cold and disk
# hit in fresh processes, trivial kernel cold and disk hit, 4 processes racing on one empty
# cache), then the CPU tests of the disk-hit path and the shared cache on this machine's cores;
# logs under $OUT, a short table last. Run from the repository root: bash scripts/gpu_compile.sh
set -uo pipefail
export PYTHONPATH=. PYTHONUNBUFFERED=1
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; git log -1 --oneline 2>/dev/null; } 2>&1 | tee "$OUT/env.txt"
# a fresh checkout has no __pycache__: without this the first fresh process would pay Python's
# byte-compilation of warpstage, which no installed copy pays
python3 -m compileall -q warpstage > /dev/null
timeout 100 python3 benchmarks/compile_time.py main attention fresh shared 2>&1 | tee "$OUT/compile_time.txt"
timeout 60 python3 -m pytest -q -p no:cacheprovider tests/test_disk_hit.py tests/test_shared_cache.py \
  tests/runtime/test_cache_lock.py 2>&1 | tee "$OUT/pytest_cache.txt" | tail -3
echo "== summary =="
grep -E "^import|cold compile" "$OUT/compile_time.txt"
grep -E "cold|disk hit|compiles across" "$OUT/compile_time.txt"
tail -1 "$OUT/pytest_cache.txt"
