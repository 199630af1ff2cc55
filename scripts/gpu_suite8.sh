#!/usr/bin/env bash
# Session 8 (branch suite8, issue 10's suite time): the CPU suite as CI runs it (README's
# `pytest -q -n 2`, no GPU, no torch), this tree against the tree it started from (9dcc415),
# side by side on two disjoint pairs of cores of the quiet device host (taskset), both with
# PYTHONDONTWRITEBYTECODE=1 (as on the CI host); this tree compiles its bytecode first, as
# .ci/run now does. Prints wall and CPU (user+sys of the whole process tree) per tree and the
# 15 slowest files.
#
#   mkdir -p base8 && git archive 9dcc415 | tar -x -C base8     # once, in the repository root
#   PYTHONPATH=. bash scripts/gpu_suite8.sh                        # logs under $OUT
# Without base8/ only this tree's rows are printed.
set -u
HERE=$(pwd) PY=${PYTHON:-python3} OUT=${OUT:-/tmp/suite8-out} BASE=${BASE:-$(pwd)/base8}
mkdir -p "$OUT"
# CI has neither a GPU nor torch/cupy: hide them (the tests that need them skip themselves)
NOTORCH="$OUT/notorch"
mkdir -p "$NOTORCH"
cat > "$NOTORCH/sitecustomize.py" <<'PYEOF'
import sys
class _Hide:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("torch", "cupy", "triton"):
            raise ImportError(f"{name} hidden (CI has no torch)")
        return None
sys.meta_path.insert(0, _Hide())
PYEOF

run_tree() {   # tree, cores, label, precompile(0/1)
    local t=$1 cores=$2 label=$3 pre=$4 log="$OUT/suite_$3.log"
    (
        cd "$t" || exit 1
        export PYTHONDONTWRITEBYTECODE=1 CUDA_VISIBLE_DEVICES="" PYTHONPATH="$NOTORCH:$t"
        find warpstage tests examples scripts -name __pycache__ -prune -exec rm -rf {} + 2>/dev/null
        s=$(date +%s.%N)
        [ "$pre" = 1 ] && taskset -c "$cores" $PY -m compileall -q warpstage tests examples scripts >/dev/null
        taskset -c "$cores" $PY - "$log" <<'PYEOF'
import resource, subprocess, sys, time
w = time.perf_counter()
with open(sys.argv[1], "w") as f:
    rc = subprocess.call([sys.executable, "-m", "pytest", "-q", "-n", "2", "-p", "no:cacheprovider",
                          "--durations=0"], stdout=f, stderr=subprocess.STDOUT,
                         timeout=285)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"pytest wall {time.perf_counter() - w:.1f} s, CPU {r.ru_utime + r.ru_stime:.1f} s, exit {rc}")
PYEOF
        e=$(date +%s.%N)
        echo "   with bytecode step: $($PY -c "print(round($e - $s, 1))") s; $(grep -E 'passed|failed' "$log" | tail -1)"
    ) > "$OUT/summary_$label.txt" 2>&1
}
[ -d "$BASE/warpstage" ] && run_tree "$BASE" 0,1 base 0 &
run_tree "$HERE" 2,3 branch 1 &
wait
for label in base branch; do
    [ -f "$OUT/summary_$label.txt" ] || continue
    echo "== $label"; cat "$OUT/summary_$label.txt"
    $PY - "$OUT/suite_$label.log" <<'PYEOF'
import collections, sys
per = collections.Counter()          # --durations=0 rows: "0.12s call     tests/x.py::test"
for words in map(str.split, open(sys.argv[1])):
    if len(words) >= 3 and words[1] in ("setup", "call", "teardown") and words[0][-1:] == "s":
        per[words[2].split("::")[0]] += float(words[0][:-1])
print("\n".join(f"   {sec:7.1f} s  {name}" for name, sec in per.most_common(15)))
print(f"   {sum(per.values()):7.1f} s  all tests, both workers")
PYEOF
done
