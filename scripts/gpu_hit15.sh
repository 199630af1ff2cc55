#!/bin/bash
# Session 15, hit15 (~5 min: at most 80 + 140 + 45 + 35 s of rows): issue 14's host-side
# compile rows on the GPU host, main (6419b31, in _trees/m15) against this branch, fresh
# processes. Logs under $OUT.
#  (0) the page cache: how long a first read of libllvmlite, ptxas and libcuda takes (cold on a
#      fresh machine: what the machine's first process pays; printed, then warm);
#  (1) `compile_time.py fresh` on the branch (its first row is the machine's first warpstage
#      process when this script runs first on a fresh machine);
#  (2) disk hits, trees taking turns (`compile_trees.py --hit`: each tree fills its own cache per
#      row once, then every round is a fresh process finding it on disk): trivial, mma.sync
#      D=128, wgmma (default, ws.ops.flash_attention) D=64 and D=128;
#  (3) the trivial kernel cold, trees taking turns: with the machine's facts stored (what a new
#      kernel costs) and from an empty cache folder (`--bare`).
# Before the device call, in the checkout: mkdir -p _trees/m15 && git archive 6419b31 warpstage |
# tar -x -C _trees/m15   (untracked, so it travels with the tree).
set -u
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"; export OUT
cd "$(dirname "$0")/.."
export PYTHONPATH=. PYTHONUNBUFFERED=1
t0=$(date +%s)
BASE=_trees/m15
if [ ! -d "$BASE/warpstage" ]; then
    echo "no $BASE/warpstage (main at 6419b31): the tree rows run on the branch only"
    TREES=.
else
    TREES=$BASE,.
    python3 -m compileall -q "$BASE/warpstage" > /dev/null
fi
python3 - > "$OUT/page_cache.txt" 2>&1 <<'PY'
import glob, importlib.util, os, shutil, time
spec = importlib.util.find_spec("llvmlite")
lib = glob.glob(os.path.join(spec.submodule_search_locations[0], "binding", "libllvmlite*"))
site = os.path.dirname(spec.submodule_search_locations[0])
ptxas = glob.glob(os.path.join(site, "nvidia", "*", "bin", "ptxas")) + [shutil.which("ptxas")]
cuda = [p for p in glob.glob("/usr/lib/x86_64-linux-gnu/libcuda.so*") if os.path.isfile(p)][:1]
for path in lib + [p for p in ptxas if p][:1] + cuda:
    t = time.perf_counter()
    with open(path, "rb") as f:
        while f.read(1 << 22):
            pass
    first = time.perf_counter() - t
    t = time.perf_counter()
    with open(path, "rb") as f:
        while f.read(1 << 22):
            pass
    print(f"{path}: {os.path.getsize(path) >> 20} MB, first read {1e3 * first:.0f} ms, "
          f"again {1e3 * (time.perf_counter() - t):.0f} ms")
PY
python3 -m compileall -q warpstage benchmarks examples > /dev/null
timeout 80 python3 benchmarks/compile_time.py fresh > "$OUT/compile_time.txt" 2>&1
echo "fresh rc $? at $(( $(date +%s) - t0 )) s"
timeout 140 python3 benchmarks/compile_trees.py --trees $TREES --hit --rounds 4 \
    --rows trivial,attention:128,wgmma:64,wgmma:128 > "$OUT/hits.txt" 2>&1
echo "hits rc $? at $(( $(date +%s) - t0 )) s"
timeout 45 python3 benchmarks/compile_trees.py --trees $TREES --rows trivial --rounds 7 \
    > "$OUT/trivial.txt" 2>&1
echo "trivial rc $? at $(( $(date +%s) - t0 )) s"
timeout 35 python3 benchmarks/compile_trees.py --trees $TREES --rows trivial --rounds 5 --bare \
    > "$OUT/trivial_bare.txt" 2>&1
echo "trivial bare rc $? at $(( $(date +%s) - t0 )) s"
echo "== page cache"; cat "$OUT/page_cache.txt"
echo "== compile_time fresh (branch)"; grep -vE "^\s*$" "$OUT/compile_time.txt" | cut -c1-250 | tail -13
echo "== disk hits, trees taking turns"; cut -c1-250 "$OUT/hits.txt" | tail -12
echo "== trivial cold, facts stored"; cut -c1-250 "$OUT/trivial.txt" | tail -3
echo "== trivial cold, empty cache"; cut -c1-250 "$OUT/trivial_bare.txt" | tail -3
