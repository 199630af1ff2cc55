#!/bin/bash
# Session 15, device call C (~7 min; carry .whl: cu13.part1 of FlashAttention-4's CuTe DSL
# library stays in /tmp for call B): (1) `warpstage demo`; (2) scripts/gpu_boundary15.sh's
# A/B of the peeled and shared tile boundary, cold compiles of both forms; (3) the whole GPU
# suite (instead of boundary15's attention files alone). Logs under $OUT.
set -u
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"; export OUT
cd "$(dirname "$0")/.."
export PYTHONPATH=. PYTHONUNBUFFERED=1
t0=$(date +%s)
[ -d .whl ] && bash scripts/fa4_install.sh > "$OUT/fa4_install.log" 2>&1
python3 -m compileall -q warpstage benchmarks examples tests > /dev/null
timeout 60 python3 -m warpstage demo > "$OUT/demo.txt" 2>&1
echo "demo rc $? at $(( $(date +%s) - t0 )) s"
sed -e '/^export PYTHONDONTWRITEBYTECODE=1$/,/^echo "gpu pytest rc/d' -e '/^echo "== gpu pytest"/d' \
    -e '/^cd "$(dirname "$0")/.."$/d' scripts/gpu_boundary15.sh > /tmp/b15.sh
bash /tmp/b15.sh
export PYTHONDONTWRITEBYTECODE=1
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-s15c timeout 220 python3 -m pytest -m gpu -q -p no:cacheprovider \
    -n 8 tests > "$OUT/pytest_gpu.txt" 2>&1
echo "gpu pytest rc $? at $(( $(date +%s) - t0 )) s"
echo "== demo"; tail -5 "$OUT/demo.txt" | cut -c1-220
echo "== gpu pytest"; grep -E "^(FAILED|ERROR)" "$OUT/pytest_gpu.txt" | head -20; tail -1 "$OUT/pytest_gpu.txt"
