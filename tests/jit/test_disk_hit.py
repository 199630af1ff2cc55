"""The disk-cache hit path (warpstage/jit/cache/persist.py): a fresh process that finds its kernel on disk
reads the entry without tracing, without loading LLVM, without running ptxas (neither
``--version`` nor the assembler) and without hashing warpstage's sources again (facts stored per
file stamp, key_facts.py); a changed stamp recomputes the fact. Both ways in are checked:
``ws.compile`` and a launch ``kern[grid, block](...)`` on the cuda target, the latter on the
pretend GPU of tests/fake_gpu.py (the driver faked, the disk cache real)."""
import os
import subprocess
import sys

import pytest

import warpstage as ws
from warpstage.jit.cache import key_facts
from warpstage.backend import find_ptxas
from warpstage.jit.cache import files as cache

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
needs_ptxas = pytest.mark.skipif(find_ptxas(ws.CompileOptions()) is None, reason="no ptxas")

CHILD = """
import sys, subprocess
import warpstage as ws
from examples_vector_add import vector_add
runs = []
real_run = subprocess.run
subprocess.run = lambda *a, **k: runs.append(a) or real_run(*a, **k)
ck = ws.compile(vector_add, ws.Tensor[ws.Float32, 1], ws.Tensor[ws.Float32, 1],
                ws.Tensor[ws.Float32, 1], ws.Int32)
ck.cubin
print(vector_add.trace_count, "llvmlite.binding" in sys.modules, len(runs))
"""


LAUNCH_CHILD = """
import sys, subprocess
import numpy as np
import pytest
from warpstage.jit.cache import persist
from warpstage.jit.compiled import STAGE_COUNTS
import fake_gpu
runs = []
real_run = subprocess.run
subprocess.run = lambda *a, **k: runs.append(a) or real_run(*a, **k)
lookup, store = persist.lookup, persist.store
mp = pytest.MonkeyPatch()
fake_gpu.install(mp, None)                      # the pretend GPU, but with the real disk cache
mp.setattr(persist, "lookup", lookup)
mp.setattr(persist, "store", store)
from examples_vector_add import vector_add
a, b, out = (fake_gpu.FakeCudaArray(np.ones(1000, np.float32)) for _ in range(3))
vector_add[4, 256](a, b, out, 1000)
ck = next(iter(vector_add._cache.values()))
print(vector_add.trace_count, "llvmlite.binding" in sys.modules, len(runs),
      len(fake_gpu.DRIVER_LAUNCHES), *(STAGE_COUNTS[k] for k in ("trace", "lower", "ptx", "ptxas",
                                                                 "disk_hit")), ck.cubin is not None)
"""


@needs_ptxas
def test_a_fresh_process_launching_from_the_disk_runs_no_stage(tmp_path):
    (tmp_path / "examples_vector_add.py").write_text(
        open(os.path.join(ROOT, "examples", "vector_add.py")).read())
    env = dict(os.environ, WARPSTAGE_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([ROOT, str(tmp_path), os.path.join(ROOT, "tests")]))
    run = lambda: subprocess.run([sys.executable, "-c", LAUNCH_CHILD], env=env, cwd=tmp_path,
                                 capture_output=True, text=True, check=True).stdout.split()
    assert run() == ["1", "True", "2", "1", "1", "1", "1", "1", "0", "True"]   # cold: all stages
    # warm: no trace, no LLVM loaded, no subprocess, no stage; launched once, cubin from disk
    assert run() == ["0", "False", "0", "1", "0", "0", "0", "0", "1", "True"]


@needs_ptxas
def test_a_fresh_process_hits_the_disk_without_llvm_or_ptxas(tmp_path):
    (tmp_path / "examples_vector_add.py").write_text(
        open(os.path.join(ROOT, "examples", "vector_add.py")).read())
    env = dict(os.environ, WARPSTAGE_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([ROOT, str(tmp_path)]))
    run = lambda: subprocess.run([sys.executable, "-c", CHILD], env=env, cwd=tmp_path,
                                 capture_output=True, text=True, check=True).stdout.split()
    assert run()[0] == "1"                          # cold: traced, LLVM and ptxas ran
    assert run() == ["0", "False", "0"]             # warm: no trace, no LLVM, no subprocess


def test_facts_are_keyed_by_file_stamps(tmp_path, monkeypatch):
    monkeypatch.setenv("WARPSTAGE_CACHE_DIR", str(tmp_path))
    tool = tmp_path / "tool"
    tool.write_bytes(b"v1")
    calls = []

    def compute():
        calls.append(1)
        return f"version {len(calls)}"
    assert key_facts.fact("tool", key_facts.stamp([str(tool)]), compute) == "version 1"
    assert key_facts.fact("tool", key_facts.stamp([str(tool)]), compute) == "version 1"
    tool.write_bytes(b"v2 longer")                  # another binary: another stamp
    assert key_facts.fact("tool", key_facts.stamp([str(tool)]), compute) == "version 2"
    assert len(calls) == 2
    assert cache.info()["entries"] == 0 and cache.clear() == 0     # facts are not entries


def test_an_unwritable_cache_still_gives_the_fact(tmp_path, monkeypatch):
    blocked = tmp_path / "file"
    blocked.write_text("")
    monkeypatch.setenv("WARPSTAGE_CACHE_DIR", str(blocked / "sub"))    # cannot be created
    assert key_facts.fact("x", ("stamp",), lambda: "value") == "value"
