#!/bin/bash
# Session 8, device call B, right after call A (carry .whl with cu13.part2): FlashAttention-4
# into /tmp/site, attn7's sweeps with FA4 beside cuDNN, then one round of compile7's
# compile-time figures and the disk-hit profile. Logs under $OUT.
set -u
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"; export OUT
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
t0=$(date +%s)
bash scripts/fa4_install.sh
export PYTHONPATH=.
[ -d /tmp/site ] && export PYTHONPATH=.:/tmp/site:/tmp/site/nvidia_cutlass_dsl/dsl_packages
python3 -c "import flash_attn.cute; print('FA4 imports')" 2>&1 | tail -1
python3 -m compileall -q warpstage > /dev/null
mkdir -p "$OUT/attn7" "$OUT/attn7_64"
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-attn7 timeout 190 python3 benchmarks/attention.py --sweep attn7 \
    --sweep-shapes "4,16,4096;8,16,1024;16,16,1024" --out "$OUT/attn7" > "$OUT/sweep_attn7.log" 2>&1
echo "sweep attn7 rc $? at $(( $(date +%s) - t0 )) s"
WARPSTAGE_CACHE_DIR=/tmp/ws-cache-attn7 timeout 75 python3 benchmarks/attention.py --sweep attn7_64 \
    --sweep-shapes "4,16,4096" --out "$OUT/attn7_64" > "$OUT/sweep_attn7_64.log" 2>&1
echo "sweep attn7_64 rc $? at $(( $(date +%s) - t0 )) s"
export PYTHONPATH=.
unset PYTHONDONTWRITEBYTECODE
timeout 110 python3 benchmarks/compile_time.py fresh > "$OUT/compile_time.txt" 2>&1
echo "compile_time rc $? at $(( $(date +%s) - t0 )) s"
export WARPSTAGE_CACHE_DIR="$OUT/hit-cache"
sed -n '/^cat > "\$OUT\/hit.py"/,/^PY$/p' scripts/gpu_compile7.sh | sed '1d;$d' > /tmp/hit.py
timeout 50 python3 /tmp/hit.py fill > /dev/null 2>&1
timeout 50 python3 /tmp/hit.py profile > "$OUT/hit_profile.txt" 2>&1
rm -rf "$OUT/hit-cache"
echo "hit rc at $(( $(date +%s) - t0 )) s"
for s in attn7 attn7_64; do echo "== sweep $s"; grep -E "cuDNN|FA4|TFLOP|FAILED|compiled" "$OUT/sweep_$s.log" | cut -c1-200; done
echo "== compile"; grep -vE "^\s*$" "$OUT/compile_time.txt" | tail -25 | cut -c1-160
head -1 "$OUT/hit_profile.txt"
