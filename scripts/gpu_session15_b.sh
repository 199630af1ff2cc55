#!/bin/bash
# Session 15, device call B, right after call A on the same machine (carry .whl_b: cu13.part2
# and the other FlashAttention-4 wheels): installs FlashAttention-4 into /tmp/site
# (scripts/fa4_install.sh), then launch_overhead (its CuTe DSL / TVM-FFI row imports now), the attention table through the public op at D = 64, 128 with
# FA4 beside cuDNN and its chart. Logs under $OUT.
set -u
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"; export OUT
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
t0=$(date +%s)
mkdir -p .whl && cp .whl_b/* .whl/ 2>/dev/null
bash scripts/fa4_install.sh > "$OUT/fa4_install.log" 2>&1
export PYTHONPATH=.
[ -d /tmp/site ] && export PYTHONPATH=.:/tmp/site:/tmp/site/nvidia_cutlass_dsl/dsl_packages
python3 -c "import flash_attn.cute; print('FA4 imports')" >> "$OUT/fa4_install.log" 2>&1
echo "fa4 at $(( $(date +%s) - t0 )) s: $(tail -1 "$OUT/fa4_install.log")"
python3 -m compileall -q warpstage benchmarks examples > /dev/null
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-s15b-launch timeout 80 python3 benchmarks/launch_overhead.py --batches 7 --launches 5000 > "$OUT/launch_overhead.txt" 2>&1
echo "launch rc $? at $(( $(date +%s) - t0 )) s"
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-attn-s15b timeout 330 python3 benchmarks/attention.py --chart \
    --head-dims 64,128 --out "$OUT" > "$OUT/attention.txt" 2>&1
echo "attention rc $? at $(( $(date +%s) - t0 )) s"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw --format=csv > "$OUT/smi.txt" 2>&1
cat "$OUT/smi.txt"
echo "== launch"; grep -E "^ws |^  |^raw|^torch|^Triton|^CuTe|^tvm|^C path" "$OUT/launch_overhead.txt" | cut -c1-120
echo "== fa4"; tail -5 "$OUT/fa4_install.log" | cut -c1-200
echo "== attention"; grep -E "x cuDNN|FA4|rror" "$OUT/attention.txt" | cut -c1-200 | tail -40
