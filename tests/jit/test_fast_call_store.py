"""The generated call path's code object in the disk cache (jit/fast_call.compiled, through
jit/cache/code_store.py): a second process, or a second kernel with the same parameters, reads
the code an earlier compile stored instead of compiling the source again; what it reads runs as
the compiled code does; a corrupt or foreign entry is compiled again; without a disk cache it
compiles as before."""
import marshal
import os
import subprocess
import sys

import pytest

import warpstage as ws
from warpstage.jit import fast_call
from warpstage.jit.cache import code_store

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SOURCE = "def f(x):\n    return x * 3 + 1\n"


def _compiles(monkeypatch):
    seen = []
    real = compile

    def counting(source, filename, mode, *a, **k):
        seen.append(filename)
        return real(source, filename, mode, *a, **k)
    monkeypatch.setattr(fast_call, "compile", counting, raising=False)   # the module's name
    return seen


def _run(code):
    ns = {}
    exec(code, ns)
    return ns["f"](4)


def test_a_stored_code_object_is_read_back_not_compiled(monkeypatch):
    seen = _compiles(monkeypatch)
    first = fast_call.compiled(SOURCE, "<fast call of f>")
    second = fast_call.compiled(SOURCE, "<fast call of f>")
    assert seen == ["<fast call of f>"]                  # compiled once, read back once
    assert second is not first and second.co_code == first.co_code and _run(second) == 13
    fast_call.compiled(SOURCE, "<fast call of g>")       # another file name: its own entry
    fast_call.compiled(SOURCE.replace("3", "5"), "<fast call of f>")     # another source
    assert len(seen) == 3


@pytest.mark.parametrize("data", [b"\x00garbage", marshal.dumps(42)])
def test_a_corrupt_or_foreign_entry_is_compiled_again(monkeypatch, data):
    seen = _compiles(monkeypatch)
    monkeypatch.setattr(code_store, "get", lambda key: data)
    assert _run(fast_call.compiled(SOURCE, "<fast call of f>")) == 13 and len(seen) == 1


def test_without_a_disk_cache_it_compiles(monkeypatch):
    monkeypatch.setenv("WARPSTAGE_CACHE_DIR", "")
    seen = _compiles(monkeypatch)
    for _ in range(2):
        assert _run(fast_call.compiled(SOURCE, "<fast call of f>")) == 13
    assert len(seen) == 2


CHILD = r"""
import sys
from warpstage.jit import fast_call
seen = []
real = compile
fast_call.compile = lambda source, filename, *a, **k: seen.append(filename) or real(
    source, filename, *a, **k)
import numpy as np
import warpstage as ws
from examples_vector_add import vector_add
a = np.ones(64, np.float32)
out = np.zeros(64, np.float32)
vector_add[1, 64](a, a, out, 64)
print(len([f for f in seen if "fast call of" in f]), float(out.sum()))
"""


def test_a_fresh_process_reads_the_generated_call_path(tmp_path):
    (tmp_path / "examples_vector_add.py").write_text(
        open(os.path.join(ROOT, "examples", "vector_add.py")).read())
    env = dict(os.environ, WARPSTAGE_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([ROOT, str(tmp_path)]))
    runs = [subprocess.run([sys.executable, "-c", CHILD], env=env, cwd=tmp_path,
                           capture_output=True, text=True, timeout=300) for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr[-3000:]
    assert [r.stdout.split() for r in runs] == [["1", "128.0"], ["0", "128.0"]]
