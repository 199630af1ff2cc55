#!/usr/bin/env bash
# One device call for issue 14, item 16 (branch lower14; ~1.5-2.5 min): the `lower` stage (our IR
# -> LLVM IR text) of the cold compiles, main against this branch, through
# `benchmarks/compile_time.py fresh` (fresh processes; the wgmma (default) rows are what
# ws.ops.flash_attention runs). The function bodies are now written as text by
# backend/llvm_builder.py; the LLVM IR text is byte-identical to llvmlite's (same value names),
# so the PTX and the kernels are the same and nothing else needs the GPU. Expected: `lower` of the
# wgmma D=64 / D=128 cold rows about -50% (H200 before: ~81 / ~101 ms; the CPU host measured
# 93 -> 43 and 113 -> 56 ms), the mma.sync rows -50 to -65%, every other stage within the noise.
# Needs base14/: the tree the branch started from (main at b223f7c; BASE_REF overrides), made
# with `git archive` if absent (where the device's git is stale, make it before the call:
#   mkdir -p base14 && git archive b223f7c | tar -x -C base14   # in the repository root).
# Logs under $OUT, the summary last. Run from the repository root: bash scripts/gpu_lower14.sh
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"
t0=$(date +%s)
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
  git log -1 --oneline 2>/dev/null
  python3 -c "import llvmlite, sys; print(sys.version.split()[0], 'llvmlite', llvmlite.__version__)"; } 2>&1 | tee "$OUT/env.txt"
BASE_REF=${BASE_REF:-b223f7c}
if [ ! -d base14/warpstage ]; then
  mkdir -p base14 && git archive "$BASE_REF" | tar -x -C base14 \
    || { echo "no base: git archive $BASE_REF failed"; rm -rf base14; }
fi
for tree in base14 .; do [ -d "$tree/warpstage" ] && python3 -m compileall -q "$tree/warpstage" > /dev/null; done
# two rounds, the trees taking turns (main, branch, branch, main): each row is one fresh process
for tree in base14 . . base14; do
  [ -d "$tree/warpstage" ] || continue
  name=$([ "$tree" = . ] && echo branch || echo main)
  echo "== $name ==" | tee -a "$OUT/compile_time.txt"
  (cd "$tree" && PYTHONPATH=. timeout 55 python3 benchmarks/compile_time.py fresh) 2>&1 | tee -a "$OUT/compile_time.txt"
done
echo "== summary ($(( $(date +%s) - t0 )) s): the lower stage of each cold row, ms =="
awk '/^== /{tree=$2} /cold/ && /lower/ {
       label=$0; sub(/^ +/, "", label); sub(/ +[0-9].*/, "", label)
       m=$0; sub(/.*lower /, "", m); sub(/[,;].*/, "", m)
       if (!(label in seen)) { seen[label]=1; order[++n]=label }
       vals[label, tree]=vals[label, tree] " " m }
     END { for (i=1; i<=n; i++) printf "  %-34s main%s | branch%s\n", order[i],
                                       vals[order[i], "main"], vals[order[i], "branch"] }' \
  "$OUT/compile_time.txt"
