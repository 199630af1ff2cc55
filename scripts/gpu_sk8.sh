#!/bin/bash
# sk8 (issue 13): stream-K with the CTAs in K step (ws.sched.stream_k_unit: head of the last
# tile first, then the tail of the first, then whole tiles) against data-parallel and cuBLAS
# at the shapes where session 8 measured stream-K slower (benchmarks/gemm_stream_k.py), then
# the same kernel with the old tile-order walk patched in at two of them (an A/B of the order
# alone, in one run), then the GPU stream-K tests. Logs under $OUT; at most 4 minutes.
set -u
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"; export OUT
cd "$(dirname "$0")/.."
export PYTHONPATH=. PYTHONUNBUFFERED=1 WARPSTAGE_CACHE_DIR=/tmp/ws-cache-sk8
t0=$(date +%s)
# most telling first: each row prints when measured, so a timeout loses only the last ones
SHAPES="--shape 4096,4096,11008,K --shape 256,11008,4096,K --shape 4096,4096,4096 \
 --shape 8192,8192,8192 --shape 4096,11008,4096,K --shape 128,11008,4096,K"
timeout 160 python3 benchmarks/gemm_stream_k.py --iters 10 --repeats 3 $SHAPES \
    > "$OUT/gemm_stream_k.txt" 2>&1
echo "stream-K (K step) rc $? at $(( $(date +%s) - t0 )) s"
cat > "$OUT/tile_order.py" <<'PY'
"""benchmarks/gemm_stream_k.py with the tile-order unit walk of session 8 patched in."""
import os, runpy, sys
import warpstage.lang.sched as sched
from warpstage.lang.math import max as _max, min as _min, select as _select

def tile_order_unit(c, j, ctas, tiles, k_tiles, sk_tiles):
    begin, end = sched.stream_k_range(c, ctas, k_tiles, sk_tiles)
    sk = sched._sk_units(begin, end, k_tiles)
    is_sk = j < sk
    t = _select(is_sk, begin // k_tiles + j, sk_tiles + c + (j - sk) * ctas)
    base = t * k_tiles
    k0 = _select(is_sk, _max(begin - base, 0), 0)
    k1 = _select(is_sk, _min(end - base, k_tiles), k_tiles)
    return t, k0, k1 - k0

sched.stream_k_unit = tile_order_unit
sys.path.insert(0, "benchmarks")
os.environ["OUT"] = os.path.join(os.environ["OUT"], "tile_order")
os.makedirs(os.environ["OUT"], exist_ok=True)
sys.argv = ["gemm_stream_k.py"] + sys.argv[1:]
runpy.run_path("benchmarks/gemm_stream_k.py", run_name="__main__")
PY
timeout 45 python3 "$OUT/tile_order.py" --iters 10 --repeats 2 --shape 4096,4096,11008,K \
    --shape 256,11008,4096,K > "$OUT/tile_order.txt" 2>&1
echo "stream-K (tile order) rc $? at $(( $(date +%s) - t0 )) s"
timeout 30 python3 -m pytest -q -m gpu -k stream_k tests/ops > "$OUT/pytest.txt" 2>&1
echo "pytest rc $? at $(( $(date +%s) - t0 )) s"
echo "== stream-K, K step"; grep -E "^\| (M|[0-9])" "$OUT/gemm_stream_k.txt" | tail -7 | cut -c1-260
grep -E "CHECK FAILED|Error" "$OUT/gemm_stream_k.txt" | head -5
echo "== stream-K, tile order (old walk)"; grep -E "^\| (M|[0-9])" "$OUT/tile_order.txt" | tail -3 | cut -c1-260
grep -E "CHECK FAILED|Error" "$OUT/tile_order.txt" | head -3
echo "== pytest"; tail -3 "$OUT/pytest.txt"
