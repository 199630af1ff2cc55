#!/usr/bin/env bash
# One device call for issue 14 (compile speed, branch compile6; < 4 min): compile_time.py's
# fresh-process rows (FlashAttention D=64/128 cold and disk hit, D=128 cold with the rewritten
# kernel code kept, the trivial kernel), then the GPU tests of the frontend, the examples and
# ws.ops (the loop-guess change alters how loop bodies are traced; the IR and PTX were checked
# identical on the CPU for tests/ops, tests/examples and the library's GEMM / wgmma attention
# configurations, these run them). Logs under $OUT, a short table last.
# Run from the repository root: bash scripts/gpu_compile6.sh
set -uo pipefail
export PYTHONPATH=. PYTHONUNBUFFERED=1
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; git log -1 --oneline 2>/dev/null; } 2>&1 | tee "$OUT/env.txt"
python3 -m compileall -q warpstage > /dev/null     # installed copies have their .pyc files
timeout 100 python3 benchmarks/compile_time.py fresh 2>&1 | tee "$OUT/compile_time.txt"
timeout 120 python3 -m pytest -q -p no:cacheprovider -m gpu tests/frontend tests/examples tests/ops -n 8 2>&1 | tee "$OUT/pytest_gpu.txt" | tail -3
echo "== summary =="
grep -E "cold|disk hit|rewrite kept" "$OUT/compile_time.txt"
tail -1 "$OUT/pytest_gpu.txt"
