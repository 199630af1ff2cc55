#!/bin/bash
# Session 15, device call A (~1 min): `warpstage demo` (the launch rows go to call B, beside CuTe DSL;
# the GPU suite runs once, on the session's final tree, to spare device time after failed starts).
# Carrying .whl (cu13.part1 of FlashAttention-4's CuTe DSL library) keeps it in /tmp for call B.
# (ptxas's --Ofast-compile spilled 568-6502 bytes at D=64 and saved no time on the CPU host.)
set -u
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"; export OUT
cd "$(dirname "$0")/.."
export PYTHONPATH=. PYTHONUNBUFFERED=1
t0=$(date +%s)
[ -d .whl ] && bash scripts/fa4_install.sh > "$OUT/fa4_install.log" 2>&1   # carry .whl: keeps part 1 for call B
python3 -m compileall -q warpstage benchmarks examples > /dev/null
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$OUT/smi.txt" 2>&1
timeout 60 python3 -m warpstage demo > "$OUT/demo.txt" 2>&1
echo "demo rc $? at $(( $(date +%s) - t0 )) s"
cat "$OUT/smi.txt"
echo "== demo"; tail -8 "$OUT/demo.txt" | cut -c1-220
