#!/usr/bin/env bash
# One device call for issue 14's compile figures (branch compile8; < 4 min): compile_time.py's
# fresh-process rows for main (an exported copy in base8/) and this branch, taking turns, twice
# each; then the branch once more with the C call path off (WARPSTAGE_CCALL=0: no launch-stub
# compile beside the first call), and the binding's tests on the GPU host. The branch changes
# no PTX: emit_ptx calls libllvmlite's entry points directly (backend/llvm_c.py) instead of
# importing llvmlite.binding, and loads the library in a thread while the lowering imports.
# The base is `git archive ${BASE_REF:-main}` (set BASE_REF to main's commit before the merge when
# this runs after compile8 landed), or a base8/ folder already there.
# Logs under $OUT, the summary last. Run from the repository root: bash scripts/gpu_compile8.sh
set -uo pipefail
export PYTHONUNBUFFERED=1
unset PYTHONDONTWRITEBYTECODE
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; git log -1 --oneline 2>/dev/null
  echo "base: ${BASE_REF:-main} = $(git rev-parse --short "${BASE_REF:-main}" 2>/dev/null)"
  python3 -c "import llvmlite, sys; print(sys.version.split()[0], 'llvmlite', llvmlite.__version__)"; } 2>&1 | tee "$OUT/env.txt"
if [ ! -d base8 ]; then
  mkdir -p base8 && git archive "${BASE_REF:-main}" | tar -x -C base8 \
    || { echo "no base: git archive ${BASE_REF:-main} failed"; rm -rf base8; }
fi
for tree in base8 .; do [ -d "$tree/warpstage" ] && python3 -m compileall -q "$tree/warpstage" > /dev/null; done
for round in 1 2; do
  for tree in base8 .; do
    [ -d "$tree/warpstage" ] || continue
    name=$([ "$tree" = . ] && echo branch || echo main)
    echo "== round $round: $name ==" | tee -a "$OUT/compile_time.txt"
    (cd "$tree" && PYTHONPATH=. timeout 100 python3 benchmarks/compile_time.py fresh) 2>&1 | tee -a "$OUT/compile_time.txt"
  done
done
echo "== branch, WARPSTAGE_CCALL=0 ==" | tee -a "$OUT/compile_time.txt"
WARPSTAGE_CCALL=0 PYTHONPATH=. timeout 100 python3 benchmarks/compile_time.py fresh 2>&1 | tee -a "$OUT/compile_time.txt"
PYTHONPATH=. timeout 120 python3 -m pytest -q -p no:cacheprovider tests/backend/test_llvm_c.py \
  tests/backend/test_backend_ptx.py tests/jit/test_disk_hit.py tests/backend/test_host_stub.py 2>&1 \
  | tee "$OUT/pytest.txt" | tail -2
echo "== summary =="
grep -E "== |trivial kernel|cold|disk hit" "$OUT/compile_time.txt" | cut -c1-150
tail -1 "$OUT/pytest.txt"
