#!/bin/bash
# Where the driver's launch cost comes from (issue 14): scripts/launch_floor.c's pure-C
# cuLaunchKernel loop run (1) as its own process, (2) as a shared library called through ctypes
# from a Python process without torch, (3) the same after torch made the primary context
# current and ran a kernel, (4) as (3) with CUDA_MODULE_LOADING=EAGER. If (3) reads ~2 us
# slower than (1), the gap between warpstage's launch rows and the C floor is the process's
# CUDA state (torch's), not warpstage's code.        bash scripts/launch_floor_env.sh
set -u
cd "$(dirname "$0")/.."
CC=$(command -v gcc || command -v cc || true)
[ -z "$CC" ] && { echo "no C compiler"; exit 0; }
"$CC" -O2 -o /tmp/launch_floor scripts/launch_floor.c -ldl || exit 1
"$CC" -O2 -shared -fPIC -Dmain=launch_floor_main -o /tmp/launch_floor.so scripts/launch_floor.c -ldl || exit 1
echo "== (1) own process"; /tmp/launch_floor 20000 5
cat > /tmp/floor_call.py <<'PY'
import ctypes, sys
if sys.argv[1] != "bare":
    import torch
    torch.zeros(1, device="cuda").add_(1); torch.cuda.synchronize()
lib = ctypes.CDLL("/tmp/launch_floor.so")
argv = (ctypes.c_char_p * 3)(b"launch_floor", b"20000", b"5")
sys.stdout.flush()
lib.launch_floor_main(3, argv)
ctypes.CDLL(None).fflush(None)
PY
echo "== (2) ctypes, no torch"; python3 /tmp/floor_call.py bare
echo "== (3) ctypes, after torch"; python3 /tmp/floor_call.py torch
echo "== (4) ctypes, after torch, CUDA_MODULE_LOADING=EAGER"; CUDA_MODULE_LOADING=EAGER python3 /tmp/floor_call.py torch
