#!/bin/bash
# Session 12, device call E (~2 min): is D=64's -3% in call D (against session 11's table) the
# merged compile14b (inline device functions lowered in place: same SASS counts, a few
# instructions reordered)? benchmarks/attention_trees.py, base12/ (8a6157b: main just before the
# compile14b merge, extracted untracked: mkdir base12 && git archive 8a6157b | tar -x -C base12)
# against this tree, the default wgmma kernel at D = 64 and 128, rounds taking turns.
set -u
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"; export OUT
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
for t in base12 .; do python3 -m compileall -q "$t/warpstage" > /dev/null; done
timeout 400 python3 benchmarks/attention_trees.py --trees base12,. --rounds 4 --only wgmma:64,wgmma:128 \
    --shapes "4,16,4096;16,16,1024;8,16,1024" --cache /tmp 2>&1 | tee "$OUT/trees.txt" | grep -v "^round"
