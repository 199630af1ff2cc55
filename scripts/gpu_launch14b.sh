#!/bin/bash
# launch14b (issue 14, the first calls after a disk-cache hit; with its second part, the generated
# call path read from the code store), one device call, about 4 min
# (< 5): the launch rows and the compile rows in fresh processes, each for main ("before") and
# this tree in turn, the CPU harness of benchmarks/stub_cold.py on the GPU host's 16 cores, and
# the GPU tests of tests/jit and tests/runtime. Logs under $OUT.
#
# "before" is main's tree extracted by `git archive` to the untracked folder before-main/
# (made here when absent; or made on the development machine before the call, so it travels:
#   mkdir before-main && git archive main | tar -x -C before-main
# with BASE=<commit> for another base). BEFORE=<folder> names another. main holds launch14b's
# first part since 8a6157b (the stub through llvm_c, a launch object per configuration, op plans
# not waiting): against main the rows A/B the second part (the generated call path from the code
# store); BASE=1dbaaff (that merge's first parent) A/Bs both.
set -u
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"; export OUT
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
unset PYTHONDONTWRITEBYTECODE WARPSTAGE_CCALL
t0=$(date +%s)
BEFORE=${BEFORE:-before-main}
if [ ! -d "$BEFORE/warpstage" ]; then
    mkdir -p "$BEFORE" && git archive "${BASE:-main}" | tar -x -C "$BEFORE" \
        || echo "no '$BEFORE': git archive ${BASE:-main} failed; the A/B rows will fail"
fi
git -C . log -1 --format='this tree: %h %s' 2>/dev/null
python3 -m compileall -q warpstage benchmarks "$BEFORE/warpstage" "$BEFORE/benchmarks" > /dev/null
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-l14b PYTHONPATH=. timeout 150 python3 -m pytest -m gpu -q \
    -p no:cacheprovider -n 8 tests/jit tests/runtime > "$OUT/pytest_gpu.txt" 2>&1
echo "gpu pytest rc $? at $(( $(date +%s) - t0 )) s"
# this tree's launch_overhead.py (its two-configuration row) run in both trees: a copy in before's
cp benchmarks/launch_overhead.py "$BEFORE/benchmarks/launch_overhead_l14b.py"
for tree in before this; do
    dir=.; name=launch_overhead.py
    [ "$tree" = before ] && dir=$BEFORE && name=launch_overhead_l14b.py
    (cd "$dir" && WARPSTAGE_CACHE_DIR=/tmp/ws-cache-l14b-launch-$tree PYTHONPATH=. timeout 60 \
        python3 benchmarks/$name) > "$OUT/launch_$tree.txt" 2>&1
    echo "launch $tree rc $? at $(( $(date +%s) - t0 )) s"
done
for tree in before this; do
    dir=.; [ "$tree" = before ] && dir=$BEFORE
    (cd "$dir" && PYTHONPATH=. timeout 70 python3 benchmarks/compile_time.py fresh) \
        > "$OUT/compile_$tree.txt" 2>&1
    echo "compile $tree rc $? at $(( $(date +%s) - t0 )) s"
done
PYTHONPATH=. timeout 120 python3 benchmarks/stub_cold.py --runs 3 --before "$BEFORE" \
    > "$OUT/stub_cold.txt" 2>&1
echo "stub_cold rc $? at $(( $(date +%s) - t0 )) s"
echo "== gpu pytest"; grep -E "^(FAILED|ERROR)" "$OUT/pytest_gpu.txt" | head -20; tail -1 "$OUT/pytest_gpu.txt"
for tree in before this; do
    echo "== launch $tree"; grep -E "^(ws|  the same|  the C stub|raw|torch|Triton)" \
        "$OUT/launch_$tree.txt" | cut -c1-120 | head -24
done
for tree in before this; do
    echo "== compile $tree"; grep -E "trivial kernel|cold|disk hit" "$OUT/compile_$tree.txt" | cut -c1-150
done
echo "== stub_cold"; cat "$OUT/stub_cold.txt"
echo "total $(( $(date +%s) - t0 )) s"
