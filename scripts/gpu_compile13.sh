#!/usr/bin/env bash
# One device call for issue 14 item 5 (branch compile13; ~1-1.5 min): the cold compile of the
# default wgmma FlashAttention (and the other compile_time.py rows), main against this branch.
# Nothing in the kernels changes (PTX byte-identical for the 20 default wgmma policies, the 15
# scripts/kernel_ptx.py configurations and every kernel of the CPU suite: RESULTS.md "Session 13,
# compile13"), so no speed or GPU test run is needed for the kernels; only the compile rows:
#   - alwaysinline device functions of >= 80 results return through an out-pointer (was 192):
#     IPSCCP no longer walks the D=64 kernel's 161-field loop struct (nor D=128's 140-field step);
#   - aggregates of >= 8 fields are one named struct type per module: the LLVM IR text of the
#     D=64 kernel 1.9 -> 0.5 MB, LLVM's parse 67 -> 20 ms CPU on the CPU host;
#   - the AST rewrite walks with one stack (rewritten code identical).
# Needs base13/: the tree the branch started from (main at aa5cd8a; BASE_REF overrides), made
# with `git archive` if absent (where the device's git is stale, make it before the call:
#   mkdir -p base13 && git archive aa5cd8a | tar -x -C base13   # in the repository root).
# Logs under $OUT, the summary last. Run from the repository root: bash scripts/gpu_compile13.sh
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"
t0=$(date +%s)
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
  git log -1 --oneline 2>/dev/null
  python3 -c "import llvmlite, sys, torch; print(sys.version.split()[0], 'llvmlite', llvmlite.__version__, 'torch', torch.__version__)"; } 2>&1 | tee "$OUT/env.txt"
BASE_REF=${BASE_REF:-aa5cd8a}
BASE=${BASE_DIR:-base13}        # another base folder and ref: scripts/gpu_trace14.sh
if [ ! -d "$BASE/warpstage" ]; then
  mkdir -p "$BASE" && git archive "$BASE_REF" | tar -x -C "$BASE" \
    || { echo "no base: git archive $BASE_REF failed"; rm -rf "$BASE"; }
fi
# main's tree runs this branch's compile_time.py (the same rows; it only calls public APIs)
[ -d "$BASE/benchmarks" ] && cp benchmarks/compile_time.py "$BASE/benchmarks/compile_time.py"
for tree in "$BASE" .; do [ -d "$tree/warpstage" ] && python3 -m compileall -q "$tree/warpstage" > /dev/null; done
for tree in "$BASE" .; do
  [ -d "$tree/warpstage" ] || continue
  name=$([ "$tree" = . ] && echo branch || echo main)
  echo "== $name ==" | tee -a "$OUT/compile_time.txt"
  (cd "$tree" && PYTHONPATH=. timeout 60 python3 benchmarks/compile_time.py fresh) 2>&1 | tee -a "$OUT/compile_time.txt"
done
echo "== summary ($(( $(date +%s) - t0 )) s) =="
grep -E "== |flash_attention D|wgmma \(default\)|trivial" "$OUT/compile_time.txt" | cut -c1-230
