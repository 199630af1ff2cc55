#!/usr/bin/env bash
# One device call: GPU tests, the demo and the benchmarks, logs under $OUT (see benchmarks/RESULTS.md).
set -uo pipefail
export PYTHONPATH=. PYTHONUNBUFFERED=1 WARPSTAGE_CACHE_DIR=/tmp/ws-cache
OUT=${OUT:-/tmp/ws-out}; mkdir -p "$OUT"
{
  date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import sys, torch, llvmlite, numpy; from cuda import bindings; print(sys.version.split()[0], 'torch', torch.__version__, 'llvmlite', llvmlite.__version__, 'numpy', numpy.__version__, 'cuda-bindings', bindings.__version__)"
  ptxas --version | tail -1
} 2>&1 | tee "$OUT/env.txt"
python3 -m pytest -m gpu -q -x -p no:cacheprovider "${@:-tests}" 2>&1 | tee "$OUT/pytest_gpu.txt" | tail -40
# SASS checks (need nvdisasm, which the GPU machine has): USETMAXREG where setmaxnreg is used
python3 -m pytest -q -p no:cacheprovider -k "setmaxnreg_sets or survives_to_sass" -rs tests/lang tests/examples 2>&1 | tee "$OUT/pytest_sass.txt" | tail -5
python3 -m warpstage demo 2>&1 | tee "$OUT/demo.txt" | tail -12
python3 benchmarks/launch_overhead.py 2>&1 | tee "$OUT/launch_overhead.txt"
python3 benchmarks/compile_time.py 2>&1 | tee "$OUT/compile_time.txt"
python3 benchmarks/profile_launch.py 2>&1 | tee "$OUT/profile_launch.txt" | head -40
