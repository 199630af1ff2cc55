#!/usr/bin/env bash
# One device call for issue 14 item 5 (compile speed, branch compile5; < 4 min): compile_time.py's
# rows with the FlashAttention cold compiles also timed without this branch's CSE pass and
# packing reuse ("reference" rows, same process layout), then every GPU test (the CSE pass
# changes the IR of every kernel; the PTX of the FlashAttention mma.sync kernels is checked
# byte-identical on the CPU, the others are checked here by running them). Logs under $OUT, a
# short table last. Run from the repository root: bash scripts/gpu_compile5.sh
set -uo pipefail
export PYTHONPATH=. PYTHONUNBUFFERED=1
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; git log -1 --oneline 2>/dev/null; } 2>&1 | tee "$OUT/env.txt"
python3 -m compileall -q warpstage > /dev/null     # installed copies have their .pyc files
timeout 150 python3 benchmarks/compile_time.py main attention fresh reference 2>&1 | tee "$OUT/compile_time.txt"
timeout 150 python3 -m pytest -q -p no:cacheprovider -m gpu tests -n 8 2>&1 | tee "$OUT/pytest_gpu.txt" | tail -3
echo "== summary =="
grep -E "^import|cold compile" "$OUT/compile_time.txt"
grep -E "cold|disk hit|reference" "$OUT/compile_time.txt"
tail -1 "$OUT/pytest_gpu.txt"
