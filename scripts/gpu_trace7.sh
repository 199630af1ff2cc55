#!/usr/bin/env bash
# Session 7, tracing (branch trace7): cold-compile stage breakdown and the CPU time of the 10
# slowest test files, this tree against the tree it started from (12add7f), interleaved.
#
#   mkdir -p base7 && git archive 12add7f | tar -x -C base7     # once, in the repository root
#   PYTHONPATH=. bash scripts/gpu_trace7.sh                        # logs under $OUT (default /tmp)
#
# Without base7/ (and without git to make it) only this tree's rows are printed.
set -u
OUT=${OUT:-/tmp/trace7-out}
mkdir -p "$OUT"
HERE=$(pwd)
BASE=${BASE:-$HERE/base7}
if [ ! -d "$BASE/warpstage" ] && git rev-parse -q --verify 12add7f >/dev/null 2>&1; then
    mkdir -p "$BASE" && git archive 12add7f | tar -x -C "$BASE"
fi
TREES="$HERE"
[ -d "$BASE/warpstage" ] && TREES="$BASE $HERE"
PY=${PYTHON:-python3}
FILES="tests/examples/test_flash_attention_wgmma_sim.py tests/tune/test_autotune_sim.py
tests/examples/test_flash_attention_sim.py tests/examples/test_flash_attention_ptx.py
tests/ops/test_attention_ptx_stable.py tests/test_cli.py tests/ops/test_scaled_matmul_sim.py
tests/ops/test_matmul_sim.py tests/examples/test_examples_sim.py tests/examples/test_gemm_sim.py"

echo "== trees: $TREES"
# 1. first calls in fresh processes (trivial, FlashAttention D=64 / D=128, cold and disk hit),
#    twice per tree, trees taking turns (~25 s a run)
for r in 1 2; do
    for t in $TREES; do
        echo "== compile_time.py fresh, round $r, $(basename "$t")"
        (cd "$t" && PYTHONPATH=. timeout 120 $PY benchmarks/compile_time.py fresh) \
            2>&1 | tee "$OUT/fresh_$(basename "$t")_$r.log"
    done
done
# 2. the 10 slowest CPU test files (session 6's list), -n 8, twice per tree, taking turns;
#    per file: the summed durations of its tests (setup + call + teardown)
for r in 1 2; do
    for t in $TREES; do
        log="$OUT/files_$(basename "$t")_$r.log"
        start=$(date +%s.%N)
        (cd "$t" && PYTHONPATH=. timeout 150 $PY -m pytest -q -n 8 -p no:cacheprovider \
            --durations=0 $FILES) > "$log" 2>&1
        end=$(date +%s.%N)
        echo "== 10 slowest files, round $r, $(basename "$t"): wall $($PY -c "print(round($end - $start, 1))") s;" \
             "$(grep -E '^[0-9]+ passed|passed' "$log" | tail -1)"
        $PY - "$log" <<'EOF'
import re, sys, collections
per = collections.Counter()
for line in open(sys.argv[1]):
    m = re.match(r"\s*([\d.]+)s (setup|call|teardown)\s+(\S+?)::", line)
    if m:
        per[m.group(3)] += float(m.group(1))
for f, s in sorted(per.items(), key=lambda kv: -kv[1]):
    print(f"   {s:7.1f} s  {f}")
print(f"   {sum(per.values()):7.1f} s  all ten (summed over the 8 workers)")
EOF
    done
done
