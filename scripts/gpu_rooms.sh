#!/usr/bin/env bash
# The rooms branch on the H200 (issue 10 items 4, 5, 7): every GPU test after the moves (the GPU
# tests now sit beside their simulator tests; `target` cases run on both targets), the demo and
# a compile + launch through the new stages; logs under $OUT, a short table last.
#   PYTHONPATH=. bash scripts/gpu_rooms.sh          # from the repository root, < 4 minutes
set -uo pipefail
export PYTHONPATH=. PYTHONUNBUFFERED=1 WARPSTAGE_CACHE_DIR=/tmp/ws-cache-rooms
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"
timeout "${TEST_S:-200}" python3 -m pytest -m gpu -q -p no:cacheprovider -rf tests \
  > "$OUT/pytest_gpu.txt" 2>&1
echo "rc=$?" >> "$OUT/pytest_gpu.txt"
timeout 40 python3 -m warpstage demo > "$OUT/demo.txt" 2>&1; echo "rc=$?" >> "$OUT/demo.txt"
timeout 60 python3 - > "$OUT/stages.txt" 2>&1 <<'PY'
import numpy as np, torch, warpstage as ws
@ws.kernel
def add_one(a: ws.Tensor, n: ws.Int32):
    i = ws.arch.block_idx()[0] * ws.arch.block_dim()[0] + ws.arch.thread_idx()[0]
    if i < n:
        a[i] = a[i] + 1.0
ck = ws.compile(add_one, ws.Tensor[ws.Float32, 1], ws.Int32, block=128)
print(repr(ck.traced), repr(ck.lowered), repr(ck.compiled))
x = torch.zeros(1000, device="cuda")
ck[(1000 + 127) // 128, 128](x, 1000)
add_one[(1000 + 127) // 128, 128](x, 1000)
torch.cuda.synchronize()
print("stages launch ok:", bool((x == 2).all()), "executable:", repr(ck._cuda))
PY
echo "rc=$?" >> "$OUT/stages.txt"
echo "== rooms on the GPU"
printf '%-10s %s\n' pytest "$(grep -E 'passed|failed' "$OUT/pytest_gpu.txt" | tail -1) ($(tail -1 "$OUT/pytest_gpu.txt"))"
printf '%-10s %s\n' demo "$(tail -1 "$OUT/demo.txt")"
printf '%-10s %s\n' stages "$(grep -E 'stages launch|Error' "$OUT/stages.txt" | tail -1) ($(tail -1 "$OUT/stages.txt"))"
