"""The source stamps of the disk-cache key (warpstage/jit/cache/source_stamps.py): taken in a
thread while warpstage imports, the same as a scan made on the spot, and made on the spot where
that thread left nothing (it failed, or this process is a fork's child it did not follow)."""
import os
import subprocess
import sys
import threading

from warpstage.jit.cache import key_facts, source_stamps

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_the_stamps_taken_at_import_are_a_scan_of_the_package():
    files, digest = source_stamps.scan()
    assert (files, digest) == source_stamps.scan_folder(source_stamps.ROOT)
    assert "jit/cache/source_stamps.py" in dict(files)
    assert key_facts._source_scan() == (files, digest)


def test_a_fresh_process_takes_them_while_importing():
    code = ("import warpstage\nfrom warpstage.jit.cache import source_stamps as s\n"
            "print(s._thread[0].name, s.scan() == s.scan_folder(s.ROOT))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=ROOT), check=True).stdout.split()
    assert out == ["warpstage", "source", "stamps", "True"]


def test_without_the_threads_result_they_are_taken_on_the_spot(monkeypatch, tmp_path):
    ended = threading.Thread(target=lambda: None)
    ended.start()
    ended.join()
    monkeypatch.setattr(source_stamps, "_thread", [ended])     # as in a fork's child
    monkeypatch.setattr(source_stamps, "_taken", [])
    monkeypatch.setattr(source_stamps, "ROOT", str(tmp_path))
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "__pycache__" / "b.py").write_text("")
    files, digest = source_stamps.scan()
    st = os.stat(tmp_path / "a.py")
    assert files == [("a.py", f"{st.st_mtime_ns}:{st.st_size}")] and len(digest) == 64
