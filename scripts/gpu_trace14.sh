#!/usr/bin/env bash
# One device call for issue 14, session 14 branch trace14 (~3 min): the `trace` stage of the
# cold compiles, main against this branch: scripts/gpu_compile13.sh's rows (compile_time.py
# fresh, each tree once, main first) twice, with main at b223f7c in base14/.
# Nothing in the kernels changes (the traced IR, the IR after the passes and the PTX are
# byte-identical: RESULTS.md "Session 14, trace14"), so only the compile rows are measured:
#   - the AST rewrite (what the 'wgmma (default) D=64, cold' row pays for 19 functions and the
#     D=128 row for 7 more: the rows' cache has no rewritten code of them yet) parses at the
#     file's lines, has the loaded-code check compare bytecode (no disassembly: the check's module
#     imports the names the module imported) and reads pass 1's return/break/continue bits from
#     one walk: 762 -> 546 M instructions for D=64's 19 functions on the CPU host;
#   - the tracing: a loop's rebound guess walks each root once, merge plans take a dynamic
#     scalar straight to its leaf, skeleton keys keep IR types: ~5% fewer instructions.
# Expected: the 'trace' stage of 'wgmma (default) D=64, cold' ~20-30% below main's (H200,
# session 13: 211 ms), D=128 cold ~5-15% below (162 ms); the disk-hit rows and the other stages
# unchanged within the noise. Where the device's git is stale, make the base before the call, in
# the repository root: mkdir -p base14 && git archive b223f7c | tar -x -C base14.
# Logs under $OUT, the summary last. Run from the repository root: bash scripts/gpu_trace14.sh
set -uo pipefail
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"
for round in 1 2; do
  OUT="$OUT/round$round" BASE_DIR=base14 BASE_REF=${BASE_REF:-b223f7c} \
    bash scripts/gpu_compile13.sh > "$OUT/round$round.txt" 2>&1
done
echo "== summary: the trace stage (ms) of each row, main then branch, two rounds =="
for round in 1 2; do
  grep -E "^== (main|branch)|flash_attention D|wgmma \(default\)|trivial" "$OUT/round$round/compile_time.txt" \
    | sed -E 's/^ {2}(.{34}).*traced [0-9]+: (trace [0-9.]+).*/  \1 \2/' | cut -c1-120
done
