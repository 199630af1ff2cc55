#!/bin/bash
# Session 14, device call B (~3 min): (1) the compile rows again (call A's read ~1.3-2x session
# 13's in every stage, ptxas included: the host or a cold page cache?); (2) claimed tiles with
# overlapped tile boundaries (dynamic_tiles + overlap_tiles, new) at D=128 S=1024 / 2048 /
# 4096 and D=64. Logs under $OUT.
set -u
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"; export OUT
cd "$(dirname "$0")/.."
export PYTHONPATH=. PYTHONUNBUFFERED=1
t0=$(date +%s)
python3 -m compileall -q warpstage benchmarks examples > /dev/null
nproc > "$OUT/host.txt"; uptime >> "$OUT/host.txt"
timeout 60 python3 benchmarks/compile_time.py fresh > "$OUT/compile_time.txt" 2>&1
echo "compile rc $? at $(( $(date +%s) - t0 )) s"
uptime >> "$OUT/host.txt"
for spec in "d128d14 8,16,1024;4,16,1024;16,16,1024" "d128e14 8,16,2048;4,16,4096" \
            "d64d14 16,16,1024;4,16,4096"; do
    set -- $spec
    mkdir -p "$OUT/$1"
    WARPSTAGE_CACHE_DIR=/tmp/ws-cache-s14b timeout 100 python3 benchmarks/attention_ab.py \
        --set "$1" --rounds 15 --iters 20 --shapes "$2" --out "$OUT/$1" > "$OUT/$1.txt" 2>&1
    echo "$1 rc $? at $(( $(date +%s) - t0 )) s"
done
cat "$OUT/host.txt"
echo "== compile"; grep -vE "^\s*$" "$OUT/compile_time.txt" | cut -c1-200 | tail -13
for s in d128d14 d128e14 d64d14; do echo "== $s"; cut -c1-190 "$OUT/$s.txt" | grep -v "^$"; done
