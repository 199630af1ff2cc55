"""The disk-cache hit path (warpstage/jit/cache/persist.py): a fresh process that finds its kernel
on disk reads the entry without tracing, without loading LLVM (libllvmlite is not mapped into the
process), without running ptxas (neither ``--version`` nor the assembler) and without hashing warpstage's sources again (facts stored per
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
llvm_loaded = any("libllvmlite" in line for line in open("/proc/self/maps"))
print(vector_add.trace_count, llvm_loaded, len(runs))
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
llvm_loaded = any("libllvmlite" in line for line in open("/proc/self/maps"))
print(vector_add.trace_count, llvm_loaded, len(runs),
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


def _fresh_process_caches(monkeypatch):
    """Forget what this process knows of the machine's key parts, as a new process would."""
    from warpstage.backend import ptxas_tool
    for fn in (key_facts._machine, key_facts._source_scan, key_facts._llvm_version,
               key_facts._llvm_stamps, key_facts._ptxas_version, ptxas_tool.ptxas_version):
        getattr(fn, "cache_clear", lambda: None)()      # a test may have replaced one
    monkeypatch.setattr(key_facts, "_known", {})


@pytest.fixture
def machine_env(tmp_path, monkeypatch):
    """A pretend warpstage source tree and a pretend ptxas (a script printing its version), with
    the disk cache in a temporary folder; yields (source file, ptxas, options)."""
    monkeypatch.setenv("WARPSTAGE_CACHE_DIR", str(tmp_path / "cache"))
    src = tmp_path / "ws_src"
    (src / "backend").mkdir(parents=True)
    (src / "backend" / "lower_x.py").write_text("RULE = 1\n")
    monkeypatch.setattr(key_facts, "_ROOT", str(src))
    ptxas = tmp_path / "ptxas"
    ptxas.write_text("#!/bin/sh\necho 'Cuda compilation tools, release 13.0, V13.0.1'\n")
    os.chmod(ptxas, 0o755)
    _fresh_process_caches(monkeypatch)
    cached = (key_facts._machine, key_facts._source_scan, key_facts._llvm_version,
              key_facts._llvm_stamps, key_facts._ptxas_version)
    yield src / "backend" / "lower_x.py", ptxas, ws.CompileOptions(ptxas=str(ptxas))
    for fn in cached:                   # what this process knows of the pretend tree: forgotten
        fn.cache_clear()


def _edit(path, text):
    """Rewrite ``path`` with ``text`` and move its mtime on, so its stamp surely changes."""
    st = os.stat(path)
    path.write_text(text)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))


def test_the_machine_part_is_one_stored_fact(machine_env, monkeypatch):
    source, ptxas, options = machine_env
    first = key_facts.machine(options)
    assert first[1][1] == "Cuda compilation tools, release 13.0, V13.0.1"
    _fresh_process_caches(monkeypatch)

    def recomputed(*args):
        raise AssertionError("a part was recomputed although no stamp changed")
    monkeypatch.setattr(key_facts, "fingerprint", recomputed)
    monkeypatch.setattr(key_facts, "_toolchain", recomputed)
    assert key_facts.machine(options) == first         # read back: one fact, nothing computed


def test_an_edited_warpstage_source_changes_the_key(machine_env, monkeypatch):
    source, ptxas, options = machine_env
    before = key_facts.machine(options)
    _edit(source, "RULE = 2\n")                         # the compiler changed: a new digest
    _fresh_process_caches(monkeypatch)
    after = key_facts.machine(options)
    assert after[0] != before[0] and after[1] == before[1]
    (source.parent / "lower_y.py").write_text("")      # a new source file counts too
    _fresh_process_caches(monkeypatch)
    assert key_facts.machine(options)[0] not in (before[0], after[0])


def test_another_ptxas_changes_the_key(machine_env, monkeypatch):
    source, ptxas, options = machine_env
    before = key_facts.machine(options)
    _edit(ptxas, "#!/bin/sh\necho 'Cuda compilation tools, release 13.1, V13.1.9'\n")
    _fresh_process_caches(monkeypatch)
    after = key_facts.machine(options)
    assert after[1][1] == "Cuda compilation tools, release 13.1, V13.1.9"
    assert after[0] == before[0]


EDITED_CHILD = """
import warpstage as ws
from edited_kernel import scale
ck = ws.compile(scale, ws.Tensor[ws.Float32, 1], ws.Int32)
ck.cubin
print(scale.trace_count, ck.ptx.count("2.5"), ck.ptx.count("0f40200000"))
"""

EDITED_KERNEL = """
import warpstage as ws

@ws.kernel
def scale(x: ws.Tensor, n: ws.Int32):
    i = ws.arch.thread_idx()[0]
    if i < n:
        x[i] = x[i] * FACTOR
"""


@needs_ptxas
def test_an_edited_kernel_recompiles_in_a_fresh_process(tmp_path):
    """A stale-key test: the second process hits the disk, and after the kernel's source is
    edited the third traces again and its PTX holds the new constant (2.5 = 0f40200000)."""
    kernel = tmp_path / "edited_kernel.py"
    kernel.write_text("FACTOR = 2.0\n" + EDITED_KERNEL)
    env = dict(os.environ, WARPSTAGE_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([ROOT, str(tmp_path)]), PYTHONDONTWRITEBYTECODE="1")
    run = lambda: subprocess.run([sys.executable, "-c", EDITED_CHILD], env=env, cwd=tmp_path,
                                 capture_output=True, text=True, check=True).stdout.split()
    assert run()[0] == "1" and run()[0] == "0"          # cold, then a disk hit
    kernel.write_text("FACTOR = 2.5\n" + EDITED_KERNEL)  # a global the kernel reads
    assert run() == ["1", "0", "1"]
    kernel.write_text("FACTOR = 2.5\n" + EDITED_KERNEL.replace("x[i] * FACTOR",
                                                                 "x[i] * FACTOR + 1.0"))
    assert run()[0] == "1"                               # the kernel's own code


def test_another_llvmlite_recomputes_the_machine_fact(machine_env, monkeypatch, tmp_path):
    source, ptxas, options = machine_env
    key_facts.machine(options)
    lib = tmp_path / "libllvmlite.so"
    lib.write_bytes(b"another build")
    calls = []
    real = key_facts._toolchain
    monkeypatch.setattr(key_facts, "_toolchain", lambda path: calls.append(path) or real(path))
    _fresh_process_caches(monkeypatch)
    key_facts.machine(options)
    assert calls == []                                  # same stamps: the stored fact
    _fresh_process_caches(monkeypatch)
    monkeypatch.setattr(key_facts, "_llvm_stamps", lambda: key_facts.stamp([str(lib)]))
    key_facts.machine(options)
    assert calls == [str(ptxas)]                        # llvmlite's stamps changed: recomputed
