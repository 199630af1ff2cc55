"""The launch stub in a fresh process (backend/host_stub.py, jit/c_env.py): the first process on a
machine compiles its object code and stores it in the disk cache; a later process loads those
bytes and compiles nothing; neither imports ``llvmlite.binding`` on the launch path (the stub goes
through backend/llvm_c.py's host JIT); and with an llvmlite release llvm_c did not check, the
stub still loads, through ``llvmlite.binding``. Each child launches a kernel on the pretend GPU
of tests/fake_gpu.py (torch tensors on the CPU) through the stub's C path, started the way a
real process starts it: in the background thread, at the configuration's second launch; the
third call, the first with the stub ready, registers its entry (launching from Python), and the
stub launches the fourth and fifth."""
import json
import os
import subprocess
import sys

import pytest

from warpstage.backend import llvm_c

torch = pytest.importorskip("torch")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
direct_only = pytest.mark.skipif(not isinstance(llvm_c.api(), llvm_c.Direct),
                                 reason="this llvmlite release is not one llvm_c checked")

CHILD = r"""
import json, sys, time
if sys.argv[1] == "fallback":
    from warpstage.backend import llvm_c
    llvm_c.CHECKED = ()                         # an llvmlite release llvm_c does not know
import pytest
import torch
from warpstage.jit import c_env
import fake_gpu
from launch_kernels import four
mp = pytest.MonkeyPatch()
stub_address = c_env.stub_address
c_env.stub_address = lambda: 0                  # install() would load the stub at once
try:
    fake_gpu.install(mp, torch)
finally:
    c_env.stub_address = stub_address
t = [torch.ones(64) for _ in range(4)]
call = lambda: four[8, 32](t[0], t[1], t[2], t[3], 64)
call()
call()                                          # starts the stub's load in its thread
deadline = time.monotonic() + 120
while c_env.stub_ready(start=False) is False and time.monotonic() < deadline:
    time.sleep(0.01)
for _ in range(3):
    call()
from warpstage.backend import host_stub, llvm_c
names = {x.data_ptr(): f"t{i}" for i, x in enumerate(t)}
named = lambda launch: launch[:4] + (tuple(names.get(v, v) for v in launch[4]),) + launch[5:]
print(json.dumps({"ready": c_env.stub_ready(start=False), "counts": host_stub.COUNTS,
                  "binding": "llvmlite.binding" in sys.modules,
                  "direct": isinstance(llvm_c.api(), llvm_c.Direct),
                  "c_launches": len(fake_gpu.C_LAUNCHES), "launches": len(fake_gpu.DRIVER_LAUNCHES),
                  "values": sorted({str(named(v)) for v in fake_gpu.DRIVER_LAUNCHES})}))
"""


def _child(tmp_path, mode="direct"):
    env = dict(os.environ, WARPSTAGE_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=os.pathsep.join(
        [ROOT, os.path.join(ROOT, "tests"), os.path.join(ROOT, "benchmarks")]))
    env.pop("WARPSTAGE_CCALL", None)
    out = subprocess.run([sys.executable, "-c", CHILD, mode], env=env, cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@direct_only
def test_a_disk_hit_loads_the_stub_without_compiling_it_or_importing_llvmlite_binding(tmp_path):
    first = _child(tmp_path)
    assert first["ready"] is True and first["direct"] is True
    assert first["counts"] == {"compiled": 1, "loaded": 1}      # compiled once, stored
    assert first["binding"] is False
    assert first["c_launches"] == 2 and first["launches"] == 5  # the 4th, 5th calls: the stub
    second = _child(tmp_path)
    assert second["counts"] == {"compiled": 0, "loaded": 1}     # the object code from disk
    assert second["binding"] is False
    assert second["c_launches"] == 2 and second["launches"] == 5
    assert len(second["values"]) == 1 and second["values"] == first["values"]   # one launch, 5x
    assert "'t3', 64, 64)" in second["values"][0]


def test_without_the_direct_binding_the_stub_loads_through_llvmlite_binding(tmp_path):
    got = _child(tmp_path, "fallback")
    assert got["ready"] is True and got["direct"] is False and got["binding"] is True
    assert got["counts"] == {"compiled": 1, "loaded": 1}
    assert got["c_launches"] == 2 and got["launches"] == 5
    again = _child(tmp_path, "fallback")
    assert again["counts"] == {"compiled": 0, "loaded": 1}
    assert again["c_launches"] == 2 and again["values"] == got["values"]
