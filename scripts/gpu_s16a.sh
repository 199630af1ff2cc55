#!/usr/bin/env bash
# Session 16, device call A (~2-3 min): keeps FlashAttention-4's first carried half (the call
# carries .whl; scripts/fa4_wheels.sh builds it), runs every GPU test and compile_time.py fresh.
# Then call B (gpu_s16b.sh, FA4 beside warpstage) at once, on the same warm machine; with time
# left, `OPTIONS_AB=1 bash scripts/gpu_s16a.sh` runs only the options A/B (call C): a three-way
# A/B of code-generation options on the default wgmma FlashAttention kernels
# (benchmarks/llvm_pipeline_ab.py: LLVM's default pipeline, the light one, ptxas -O1 alone).
# Predictions (written before the call):
#  - GPU tests: all pass (session 15: 756 passed, 11 skipped); the only codegen change since is
#    the new option ptxas_opt_level, off by default (the PTX and cubin of the defaults unchanged).
#  - compile_time fresh: as session 15 within this host's speed (D=128 cold ~0.8 s, disk hit
#    ~6 ms, trivial cold ~40 ms).
#  - ptxas1 (ptxas -O1, LLVM as default): ptxas stage -10..-20% (CPU host: D=128 449 -> 364 ms
#    children's CPU), kernels 0.99-1.00x (+32 SASS instructions, integer SHF/IMAD in the
#    address math outside the K/V step's critical chain).
#  - light: D=64 S=1024 0.97-0.99x (session 15's 0.965x read once; the SASS predicts <= 1.3%),
#    D=128 0.99-1.00x.
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"
t0=$(date +%s)
if [ "${OPTIONS_AB:-0}" = 0 ]; then
bash scripts/fa4_install.sh
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
  python3 -c "import sys, torch, llvmlite, numpy, triton; from cuda import bindings; print(sys.version.split()[0], 'torch', torch.__version__, 'triton', triton.__version__, 'llvmlite', llvmlite.__version__, 'numpy', numpy.__version__, 'cuda-bindings', bindings.__version__)"
  ptxas --version | tail -1; git log -1 --oneline 2>/dev/null; } > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
PYTHONPATH=. timeout 200 python3 -m pytest -m gpu -q -n 8 -p no:cacheprovider -rf tests > "$OUT/pytest_gpu.txt" 2>&1
echo "pytest rc=$?" >> "$OUT/pytest_gpu.txt"; tail -6 "$OUT/pytest_gpu.txt"
echo "== tests done ($(( $(date +%s) - t0 )) s) =="
PYTHONPATH=. timeout 90 python3 benchmarks/compile_time.py fresh > "$OUT/compile_time.txt" 2>&1
cat "$OUT/compile_time.txt" | tail -30
echo "== compile_time done ($(( $(date +%s) - t0 )) s) =="
exit 0
fi
PYTHONPATH=. timeout 200 python3 benchmarks/llvm_pipeline_ab.py --rounds 15 \
  --rows "64,0,8,16,1024;128,0,8,16,1024;128,0,4,16,4096" \
  --variants "default;light:llvm_pipeline='light';ptxas1:ptxas_opt_level=1" 2>&1 | tee "$OUT/options_ab.txt"
echo "== done ($(( $(date +%s) - t0 )) s) =="
