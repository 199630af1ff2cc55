"""The rewritten code of kernel functions kept in the disk cache (jit/cache/code_store.py with
frontend/rewrite.py's code store): a second rewrite of the same loaded code reads it back, an
edited file or another warpstage never reuses it, and a bad entry is rebuilt."""
import importlib.util
import os
import sys

import pytest

from warpstage.errors import UnsupportedError
from warpstage.frontend import rewrite as rw, rewrite_store
from warpstage.jit.cache import code_store, files

SOURCE = '''\
def count_up(n, limit):
    total = 0
    for i in range(n):
        if i % 3 == 0 and i < limit:
            total += i
        else:
            total -= 1
    return total
'''


def _import(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def kernel_file(tmp_path):
    path = tmp_path / "kern_src.py"
    path.write_text(SOURCE)
    yield str(path)
    for name in [n for n in sys.modules if n.startswith("kern_src_")]:
        del sys.modules[name]


@pytest.fixture
def built(monkeypatch):
    """The functions _rewrite_code is called for (a miss of the store)."""
    calls = []
    original = rw._rewrite_code
    monkeypatch.setattr(rw, "_rewrite_code", lambda fn: calls.append(fn) or original(fn))
    code_store.install()
    return calls


def test_a_second_process_view_of_the_same_code_reads_the_stored_rewrite(kernel_file, built):
    first = rw.rewrite(_import(kernel_file, "kern_src_a").count_up)
    again = rw.rewrite(_import(kernel_file, "kern_src_b").count_up)   # a new function object
    assert len(built) == 1
    assert again is not first and again.__code__ is not first.__code__
    for n, limit in [(0, 5), (7, 5), (12, 100)]:
        assert again(n, limit) == first(n, limit)
    assert [s.kind for s in again.__closure__[-1].cell_contents] == \
        [s.kind for s in first.__closure__[-1].cell_contents]


def test_a_file_edited_after_import_is_not_served_from_the_store(kernel_file, built):
    fn = _import(kernel_file, "kern_src_c").count_up
    rw.rewrite(fn)
    with open(kernel_file, "w") as f:               # same lines, another constant
        f.write(SOURCE.replace("i % 3", "i % 4"))
    os.utime(kernel_file, ns=(1, 1))                # linecache sees a new mtime
    del rw._CACHE[fn]
    with pytest.raises(UnsupportedError, match="changed since it was imported"):
        rw.rewrite(fn)
    assert len(built) == 2


def test_another_warpstage_fingerprint_misses(kernel_file, built, monkeypatch):
    rw.rewrite(_import(kernel_file, "kern_src_d").count_up)
    monkeypatch.setattr(code_store, "fingerprint", lambda: "another-warpstage")
    rw.rewrite(_import(kernel_file, "kern_src_e").count_up)
    assert len(built) == 2


def test_a_corrupt_entry_is_rebuilt(kernel_file, built):
    fn = _import(kernel_file, "kern_src_f").count_up
    rw.rewrite(fn)
    key = code_store._key(rewrite_store.rewrite_key(fn))
    files.put_fact(key, {"code": b"not marshal data"})
    again = rw.rewrite(_import(kernel_file, "kern_src_g").count_up)
    assert len(built) == 2 and again(7, 5) == fn(7, 5)


def test_nothing_is_kept_with_the_disk_cache_off(kernel_file, built, monkeypatch, tmp_path):
    monkeypatch.setenv("WARPSTAGE_CACHE_DIR", "")
    rw.rewrite(_import(kernel_file, "kern_src_h").count_up)
    rw.rewrite(_import(kernel_file, "kern_src_i").count_up)
    assert len(built) == 2
