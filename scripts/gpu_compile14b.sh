#!/usr/bin/env bash
# One device call for issue 14 item 5 (branch compile14b; ~4-5 min): the cold compile of the
# FlashAttention kernels, main against this branch, and the kernels' speed and results in both.
# The branch changes the PTX: inline='always' device functions are lowered in place (no LLVM
# functions returning 100+-field structs: LLVM's IPSCCP took 2.7 of the wgmma D=128's 2.9 s of
# O3 on the CPU host), and passes/addresses.py splits unrolled ptr.offset chains into shared
# bases plus constants (mma.sync FA SASS 2570 -> 2530 instructions at D=128, 1930 -> 1914 at
# D=64; registers 168, no spills; wgmma SASS the same counts). Needs base14b/: the tree the
# branch started from (44495a4; main has merged part of this branch since, so not `main`),
#   mkdir -p base14b && git archive 44495a4 | tar -x -C base14b     # in the repository root
# (the helper's worktree has it untracked beside the code; made here if absent, BASE_REF
# overrides the commit).
#  1. compile_time.py fresh (first calls in fresh processes, stage breakdown; now with the
#     default wgmma rows), main then branch, once each (~40 + ~25 s);
#  2. benchmarks/attention_trees.py: device time of ws.ops.flash_attention, wgmma (causal or
#     not) and mma.sync, D 64/128, two shapes, 3 rounds taking turns, and the max error against
#     SDPA in each tree (~2 min: main's first round compiles its slow wgmma kernels);
#  3. the GPU tests of what the PTX change touches (ops, examples, backend: -m gpu, -n 8).
# Logs under $OUT, the summary last. Run from the repository root: bash scripts/gpu_compile14b.sh
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"
t0=$(date +%s)
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
  git log -1 --oneline 2>/dev/null
  python3 -c "import llvmlite, sys, torch; print(sys.version.split()[0], 'llvmlite', llvmlite.__version__, 'torch', torch.__version__)"; } 2>&1 | tee "$OUT/env.txt"
BASE_REF=${BASE_REF:-44495a4}
if [ ! -d base14b/warpstage ]; then
  mkdir -p base14b && git archive "$BASE_REF" | tar -x -C base14b \
    || { echo "no base: git archive $BASE_REF failed"; rm -rf base14b; }
fi
# main's tree runs this branch's compile_time.py (the same rows; it only calls public APIs)
[ -d base14b/benchmarks ] && cp benchmarks/compile_time.py base14b/benchmarks/compile_time.py
for tree in base14b .; do [ -d "$tree/warpstage" ] && python3 -m compileall -q "$tree/warpstage" > /dev/null; done
for tree in base14b .; do
  [ -d "$tree/warpstage" ] || continue
  name=$([ "$tree" = . ] && echo branch || echo main)
  echo "== $name ==" | tee -a "$OUT/compile_time.txt"
  (cd "$tree" && PYTHONPATH=. timeout 75 python3 benchmarks/compile_time.py fresh) 2>&1 | tee -a "$OUT/compile_time.txt"
done
echo "compile rows done at $(( $(date +%s) - t0 )) s"
trees=.; [ -d base14b/warpstage ] && trees=base14b,.
timeout 200 python3 benchmarks/attention_trees.py --trees "$trees" --rounds 3 --cache /tmp/ab14b 2>&1 \
  | tee "$OUT/attention_trees.txt"
echo "attention A/B done at $(( $(date +%s) - t0 )) s"
PYTHONPATH=. timeout 100 python3 -m pytest -q -p no:cacheprovider -m gpu -n 8 tests/ops tests/examples \
  tests/backend 2>&1 | tee "$OUT/pytest_gpu.txt" | tail -3
echo "== summary ($(( $(date +%s) - t0 )) s) =="
tail -1 "$OUT/pytest_gpu.txt"
grep -E "== |flash_attention D|wgmma \(default\)" "$OUT/compile_time.txt" | cut -c1-200
grep -vE "^round " "$OUT/attention_trees.txt"
