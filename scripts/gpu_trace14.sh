#!/usr/bin/env bash
# One device call for issue 14, session 14 branch trace14 (~3 min): the `trace` stage of the
# cold compiles, main against this branch, twice each, taking turns (main, branch, main, branch).
# Nothing in the kernels changes (the traced IR, the IR after the passes and the PTX are
# byte-identical: RESULTS.md "Session 14, trace14"), so only the compile rows are measured:
#   - the AST rewrite (what the 'wgmma (default) D=64, cold' row pays for 19 functions and the
#     D=128 row for 7 more: the rows' cache has no rewritten code of them yet) parses at the
#     file's lines, has the loaded-code check compare bytecode (no disassembly: the check's module
#     imports the names the module imported) and reads pass 1's return/break/continue bits from
#     one walk: 764 -> ~545 M instructions for D=64's 19 functions on the CPU host;
#   - the tracing: a loop's rebound guess walks each root once, merge plans take a dynamic
#     scalar straight to its leaf, skeleton keys keep IR types: the D=64 trace ~5% fewer
#     instructions.
# Expected: the 'trace' stage of 'wgmma (default) D=64, cold' ~25-35% lower than main's (H200
# session 13: 211 ms), D=128 cold ~10-15% lower (162 ms); the disk-hit rows and the other
# stages unchanged (within the noise).
# Needs base14/: main at b223f7c (BASE_REF overrides), made with `git archive` if absent (where
# the device's git is stale, make it before the call, in the repository root:
#   mkdir -p base14 && git archive b223f7c | tar -x -C base14).
# Logs under $OUT, the summary last. Run from the repository root: bash scripts/gpu_trace14.sh
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"
t0=$(date +%s)
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
  git log -1 --oneline 2>/dev/null
  python3 -c "import llvmlite, sys, torch; print(sys.version.split()[0], 'llvmlite', llvmlite.__version__, 'torch', torch.__version__)"; } 2>&1 | tee "$OUT/env.txt"
BASE_REF=${BASE_REF:-b223f7c}
if [ ! -d base14/warpstage ]; then
  mkdir -p base14 && git archive "$BASE_REF" | tar -x -C base14 \
    || { echo "no base: git archive $BASE_REF failed"; rm -rf base14; }
fi
[ -d base14/benchmarks ] && cp benchmarks/compile_time.py base14/benchmarks/compile_time.py
for tree in base14 .; do [ -d "$tree/warpstage" ] && python3 -m compileall -q "$tree/warpstage" > /dev/null; done
for round in 1 2; do
  for tree in base14 .; do
    [ -d "$tree/warpstage" ] || continue
    name=$([ "$tree" = . ] && echo branch || echo main)
    echo "== $name, round $round ==" | tee -a "$OUT/compile_time.txt"
    (cd "$tree" && PYTHONPATH=. timeout 80 python3 benchmarks/compile_time.py fresh) 2>&1 | tee -a "$OUT/compile_time.txt"
  done
done
echo "== summary ($(( $(date +%s) - t0 )) s): the trace stage (ms) of each row =="
grep -E "== |flash_attention D|wgmma \(default\)|trivial" "$OUT/compile_time.txt" \
  | sed -E 's/^ {2}(.{34}).*traced [0-9]+: (trace [0-9.]+).*/  \1 \2/' | cut -c1-120
