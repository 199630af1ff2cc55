#!/usr/bin/env bash
# One device call for the arch branch (issue 10): every GPU test (the refactor must leave them
# passing; the new mbarrier.try_wait_parity_hint runs in tests/gpu/test_mbarrier_hint_gpu.py),
# the SASS checks, and a table last. Logs under $OUT. Run from the repo root:
#   bash scripts/gpu_arch.sh
set -uo pipefail
export PYTHONPATH=. PYTHONUNBUFFERED=1 WARPSTAGE_CACHE_DIR=/tmp/ws-cache-arch
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/env.txt" 2>&1
timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider tests > "$OUT/pytest_gpu.txt" 2>&1
gpu_rc=$?
timeout 60 python3 -m pytest -q -p no:cacheprovider -rs \
    -k "setmaxnreg_sets or survives_to_sass" tests/lang tests/examples > "$OUT/pytest_sass.txt" 2>&1
sass_rc=$?
echo "== arch branch on $(cat "$OUT/env.txt")"
printf '%-28s %-6s %s\n' "step" "rc" "summary"
printf '%-28s %-6s %s\n' "pytest -m gpu" "$gpu_rc" "$(tail -1 "$OUT/pytest_gpu.txt")"
printf '%-28s %-6s %s\n' "SASS checks" "$sass_rc" "$(tail -1 "$OUT/pytest_sass.txt")"
grep -E "^(FAILED|ERROR)" "$OUT/pytest_gpu.txt" | head -20
