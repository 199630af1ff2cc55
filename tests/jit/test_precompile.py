"""Pre-building specializations (warpstage/jit/precompile.py): ``ws.compile(requests, jobs=N)`` and
``warpstage compile``. Workers build into the disk cache; the parent's own compile is then a disk
hit (no trace in the parent) and gives what a sequential build gives."""
import os
import subprocess
import sys

import pytest

import warpstage as ws
from warpstage.backend import find_ptxas

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
needs_ptxas = pytest.mark.skipif(find_ptxas(ws.CompileOptions()) is None, reason="no ptxas")

MODULE = '''
import warpstage as ws

@ws.kernel
def axpy(x: ws.Tensor, y: ws.Tensor, a: ws.Float32, n: ws.Int32):
    i = ws.arch.block_idx()[0] * ws.arch.block_dim()[0] + ws.arch.thread_idx()[0]
    if i < n:
        y[i] = a * x[i] + y[i]

def warpstage_specializations():
    return [(axpy, (ws.Tensor[dt, 1], ws.Tensor[dt, 1], ws.Float32, ws.Int32), {"block": 128})
            for dt in (ws.Float32, ws.Float64)]
'''


@pytest.fixture
def kernels_module(tmp_path, monkeypatch):
    (tmp_path / "pc_kernels.py").write_text(MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("WARPSTAGE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([ROOT, str(tmp_path)]))
    import importlib
    sys.modules.pop("pc_kernels", None)
    module = importlib.import_module("pc_kernels")
    yield module
    sys.modules.pop("pc_kernels", None)


@needs_ptxas
def test_workers_build_into_the_disk_cache(kernels_module, tmp_path, monkeypatch):
    requests = kernels_module.warpstage_specializations()
    built = ws.compile(requests, jobs=2)
    assert kernels_module.axpy.trace_count == 0              # the workers traced, not us
    assert [ck.cubin is not None for ck in built] == [True, True]
    monkeypatch.setenv("WARPSTAGE_CACHE_DIR", str(tmp_path / "empty"))
    fresh = ws.kernel(kernels_module.axpy.fn)                 # a sequential build to compare
    again = [ws.compile(fresh, *args, **kw) for _, args, kw in requests]
    assert fresh.trace_count == 2
    assert [ck.ptx.replace(ck.name, "k") for ck in built] == \
        [ck.ptx.replace(ck.name, "k") for ck in again]


def test_kernels_a_worker_cannot_import_build_here(monkeypatch, tmp_path):
    monkeypatch.setenv("WARPSTAGE_CACHE_DIR", str(tmp_path))

    def local(n: ws.Int32):
        pass
    kern = ws.kernel(local)                                   # <locals>: not importable
    built = ws.compile([(kern, (ws.Int32,)), (kern, (ws.Int32,), {"block": 64})], jobs=4)
    assert kern.trace_count == 2 and len(built) == 2


def test_bad_requests_say_what_is_expected():
    with pytest.raises(ws.ArgumentError, match=r"request #1 .* expected \(kernel, args\)"):
        ws.compile([(ws.kernel(lambda: None), ()), ("not a kernel", ())], jobs=2)
    with pytest.raises(ws.ArgumentError, match="jobs must be an int >= 1"):
        ws.compile([], jobs=0)


@needs_ptxas
def test_the_compile_command(kernels_module, tmp_path):
    r = subprocess.run([sys.executable, "-m", "warpstage", "compile",
                        str(tmp_path / "pc_kernels.py"), "--jobs", "1"],
                       capture_output=True, text=True, timeout=600, env=os.environ.copy())
    assert r.returncode == 0, r.stderr
    assert "building 2 specialization(s) with 1 process(es)" in r.stdout
    assert r.stdout.count("bytes cubin") == 2 and "done in" in r.stdout
    missing = subprocess.run([sys.executable, "-m", "warpstage", "compile", "pc_kernels:nothing"],
                             capture_output=True, text=True, timeout=600, env=os.environ.copy(),
                             cwd=tmp_path)
    assert missing.returncode != 0 and "has no function nothing()" in missing.stderr
