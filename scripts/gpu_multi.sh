#!/usr/bin/env bash
# One device call for issue 17 on nvidia-h200-x2 (about 3-4 minutes): the multi-GPU tests
# (cuda:1 while cuda:0 is current, the mixed-device error, per-device modules, device 1's
# stream, a 2-rank shared-cache job compiling each specialization once, tuning on 2 GPUs), the
# tensor-parallel example under torchrun at two sizes (checked against a one-GPU reference;
# tokens/s of warpstage and torch), then the autotuner on one GPU vs two
# (benchmarks/autotune_devices.py). Logs under $OUT; a short table last.
# Run from the repo root: bash scripts/gpu_multi.sh
set -uo pipefail
export PYTHONPATH=. PYTHONUNBUFFERED=1 WARPSTAGE_PROGRESS=0
OUT=${OUT:-/tmp/ws-out}; export OUT; mkdir -p "$OUT"
{
  date -u; git rev-parse --short HEAD 2>/dev/null
  nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader
  python3 -c "import torch; print('torch', torch.__version__, 'GPUs', torch.cuda.device_count())"
} 2>&1 | tee "$OUT/env.txt"

echo "== multi-GPU tests"
timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider -rs \
  tests/gpu/test_devices_gpu.py tests/gpu/test_shared_cache_gpu.py \
  "tests/gpu/test_autotune_gpu.py::test_candidates_are_timed_on_two_gpus_and_compiled_once" \
  "tests/gpu/test_autotune_gpu.py::test_tensors_on_cuda1_are_tuned_on_cuda1" \
  2>&1 | tee "$OUT/pytest_multi_gpu.txt" | tail -25

echo "== torchrun (python3 -m torch.distributed.run) examples/tensor_parallel.py, one empty shared disk cache"
export WARPSTAGE_CACHE_DIR="$OUT/tp-cache"; rm -rf "$WARPSTAGE_CACHE_DIR"
timeout 120 python3 -m torch.distributed.run --standalone --nproc-per-node 2 examples/tensor_parallel.py \
  2>&1 | tee "$OUT/tensor_parallel_small.txt" | tail -15
timeout 120 python3 -m torch.distributed.run --standalone --nproc-per-node 2 examples/tensor_parallel.py \
  --batch 2 --seq 4096 --heads 32 --dim 4096 --iters 10 \
  2>&1 | tee "$OUT/tensor_parallel_large.txt" | tail -15
unset WARPSTAGE_CACHE_DIR

echo "== autotune on 1 GPU vs 2"
timeout 180 python3 benchmarks/autotune_devices.py 2>&1 | tee "$OUT/autotune_devices.txt" | tail -20

echo; echo "================ summary"
echo "tests:    $(tail -1 "$OUT/pytest_multi_gpu.txt")"
for f in small large; do
  echo "example ($f):"
  grep -E -- "-> (OK|MISMATCH)|traced|^  (warpstage|torch) |speedup of warpstage|bf16 torch:|tensor-parallel block" \
    "$OUT/tensor_parallel_$f.txt" | sed 's/^/  /'
done
echo "autotune (benchmarks/autotune_devices.py):"
cat "$OUT/autotune_devices.md" 2>/dev/null || tail -5 "$OUT/autotune_devices.txt"
