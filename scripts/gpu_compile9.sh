#!/usr/bin/env bash
# One device call for issue 14's compile figures (branch compile9; < 4 min): first the GPU tests
# of what the branch touched (torch.compile(fullgraph=True) with inductor, now that ws.ops'
# torch.library ops register on the first traced call instead of the first eager call; the C
# call path's launch stub, now started before the PTX emission; the disk hit), then
# compile_time.py's fresh-process rows (trivial, FlashAttention D=64 and D=128 mma.sync: cold and
# disk hit, with the stage breakdown) for main (an exported copy in base9/) and this branch,
# taking turns, twice each; then the branch once more with the C call path off
# (WARPSTAGE_CCALL=0: no launch-stub compile beside the first call).
# The branch changes no PTX (ws.compile's PTX and cubin of the four mma.sync FlashAttention
# configurations D=64/128 x causal compared by SHA-256 on the CPU host, main vs branch).
# The base is `git archive ${BASE_REF:-6d9bbf5}` (the commit compile9 branched from), or a base9/
# folder already there. Logs under $OUT, the summary last.
# Run from the repository root: bash scripts/gpu_compile9.sh
set -uo pipefail
export PYTHONUNBUFFERED=1
unset PYTHONDONTWRITEBYTECODE
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"
BASE_REF=${BASE_REF:-6d9bbf5}
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; git log -1 --oneline 2>/dev/null
  echo "base: $BASE_REF = $(git rev-parse --short "$BASE_REF" 2>/dev/null)"
  python3 -c "import llvmlite, sys, torch; print(sys.version.split()[0], 'llvmlite', llvmlite.__version__, 'torch', torch.__version__)"; } 2>&1 | tee "$OUT/env.txt"
PYTHONPATH=. timeout 120 python3 -m pytest -q -p no:cacheprovider -m gpu -n 8 \
  tests/test_torch_compile_gpu.py tests/jit/test_c_call_gpu.py tests/jit/test_fast_call_gpu.py \
  tests/runtime/test_graphs_gpu.py tests/gpu/test_shared_cache_gpu.py tests/jit/test_save_load.py 2>&1 \
  | tee "$OUT/pytest_gpu.txt" | tail -3
PYTHONPATH=. timeout 60 python3 -m pytest -q -p no:cacheprovider -n 8 tests/runtime/test_torch_library.py \
  tests/jit/test_beside.py tests/jit/test_disk_hit.py tests/backend/test_host_stub.py 2>&1 \
  | tee "$OUT/pytest_cpu_here.txt" | tail -2
if [ ! -d base9 ]; then
  mkdir -p base9 && git archive "$BASE_REF" | tar -x -C base9 \
    || { echo "no base: git archive $BASE_REF failed"; rm -rf base9; }
fi
for tree in base9 .; do [ -d "$tree/warpstage" ] && python3 -m compileall -q "$tree/warpstage" > /dev/null; done
for round in 1 2; do
  for tree in base9 .; do
    [ -d "$tree/warpstage" ] || continue
    name=$([ "$tree" = . ] && echo branch || echo main)
    echo "== round $round: $name ==" | tee -a "$OUT/compile_time.txt"
    (cd "$tree" && PYTHONPATH=. timeout 50 python3 benchmarks/compile_time.py fresh) 2>&1 | tee -a "$OUT/compile_time.txt"
  done
done
echo "== branch, WARPSTAGE_CCALL=0 ==" | tee -a "$OUT/compile_time.txt"
WARPSTAGE_CCALL=0 PYTHONPATH=. timeout 50 python3 benchmarks/compile_time.py fresh 2>&1 | tee -a "$OUT/compile_time.txt"
echo "== summary =="
tail -1 "$OUT/pytest_gpu.txt"; tail -1 "$OUT/pytest_cpu_here.txt"
grep -E "== |trivial kernel|cold|disk hit" "$OUT/compile_time.txt" | cut -c1-160
