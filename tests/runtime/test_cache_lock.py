"""The disk cache's per-key lock (jit/cache/files.py ``locked``, runtime/cache_lock.py) across
processes: mutual exclusion, a killed holder releases it at once, a held-too-long lock times out
with a warning, the holder may take it again, the lock file is gone after release, and readers
racing writers in other processes never see a partial entry."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from warpstage.jit.cache import files as cache
from warpstage.runtime import cache_lock

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(cache_lock.fcntl is None, reason="no fcntl.flock on this platform")

HOLDER = """
import glob, json, os, sys, time
from warpstage.jit.cache import files as cache
from warpstage.runtime import cache_lock
key, log, hold = sys.argv[1], sys.argv[2], float(sys.argv[3])
meet = int(sys.argv[4]) if len(sys.argv) > 4 else 0
with cache.locked(key) as held:
    start = time.time()
    with open(log + ".ready." + str(os.getpid()), "w"):
        pass
    if meet:        # hold until `meet` holders are in here at once, at most `hold` s
        while len(glob.glob(log + ".ready.*")) < meet and time.time() < start + hold:
            time.sleep(0.01)
    else:
        time.sleep(hold)
    end = time.time()
with open(log, "a") as f:
    f.write(json.dumps([held, start, end]) + "\\n")
"""


def _spawn(code, *args):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen([sys.executable, "-c", code, *map(str, args)], env=env)


def _wait_for(predicate, seconds=60.0):
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting for the child processes"
        time.sleep(0.01)


def test_processes_holding_one_key_take_turns(tmp_path):
    key, log = cache.disk_key(("turns",)), tmp_path / "log"
    procs = [_spawn(HOLDER, key, log, 0.2) for _ in range(4)]
    assert [p.wait() for p in procs] == [0] * 4
    rows = sorted(json.loads(line) for line in log.read_text().splitlines())
    assert len(rows) == 4 and all(held for held, _, _ in rows)
    for (_, _, end), (_, start, _) in zip(rows, rows[1:]):
        assert start >= end                             # no two bodies overlap
    assert not list(Path(cache.path()).glob("*" + cache.LOCK_SUFFIX))    # removed on release


def test_different_keys_do_not_wait_for_each_other(tmp_path):
    # each holder stays in until all three are in (at most 30 s): they overlap whatever their
    # start-up times if the keys do not exclude each other, and cannot if they do
    log = tmp_path / "log"
    procs = [_spawn(HOLDER, cache.disk_key(("own", i)), log, 30, 3) for i in range(3)]
    assert [p.wait() for p in procs] == [0] * 3
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    assert max(s for _, s, _ in rows) < min(e for _, _, e in rows)       # all held at once


def test_a_killed_holder_releases_the_lock_at_once(tmp_path):
    key, log = cache.disk_key(("killed",)), tmp_path / "log"
    holder = _spawn(HOLDER, key, log, 600)
    _wait_for(lambda: list(tmp_path.glob("log.ready.*")))
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    assert (Path(cache.path()) / (key + cache.LOCK_SUFFIX)).exists()    # left behind, unlocked
    t0 = time.monotonic()
    with cache.locked(key, timeout=30) as held:
        assert held
    assert time.monotonic() - t0 < 5


def test_a_lock_held_past_the_timeout_warns_and_lets_the_caller_build():
    import threading
    key = cache.disk_key(("slow",))
    taken, done = threading.Event(), threading.Event()

    def hold():                     # another thread: its flock conflicts like another process's
        with cache.locked(key):
            taken.set()
            done.wait(30)
    t = threading.Thread(target=hold)
    t.start()
    assert taken.wait(30)
    try:
        with pytest.warns(RuntimeWarning, match="waited 0 s for another process"):
            with cache.locked(key, timeout=0.05) as second:
                assert not second
    finally:
        done.set()
        t.join()


def test_no_lock_without_a_disk_cache(monkeypatch):
    monkeypatch.setenv("WARPSTAGE_CACHE_DIR", "")
    with cache.locked(cache.disk_key(("off",))) as held:
        assert not held


def test_an_unwritable_folder_gives_no_lock_and_no_error(tmp_path, monkeypatch):
    blocked = tmp_path / "file"
    blocked.write_text("")
    monkeypatch.setenv("WARPSTAGE_CACHE_DIR", str(blocked / "sub"))
    with cache.locked(cache.disk_key(("ro",))) as held:
        assert not held


READER = """
import sys, time
from warpstage.jit.cache import files as cache
from warpstage.runtime import cache_lock
key, n = sys.argv[1], int(sys.argv[2])
seen, bad, end = set(), 0, time.monotonic() + 3
while time.monotonic() < end and len(seen) < n:
    e = cache.get(key)
    if e is not None:
        seen.add(e["writer"])
        w = e["writer"]
        bad += e["text"] != str(w) * 50_000 or e["cubin"] != bytes([w]) * 200_000
print(len(seen), bad)
"""

WRITER = """
import sys
from warpstage.jit.cache import files as cache
from warpstage.runtime import cache_lock
key, w = sys.argv[1], int(sys.argv[2])
for _ in range(40):
    cache.put(key, {"writer": w, "text": str(w) * 50_000, "cubin": bytes([w]) * 200_000})
"""


def test_readers_in_other_processes_never_see_a_partial_entry():
    key = cache.disk_key(("cross-process race",))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    readers = [subprocess.Popen([sys.executable, "-c", READER, key, "3"], env=env,
                                stdout=subprocess.PIPE, text=True) for _ in range(2)]
    writers = [_spawn(WRITER, key, w) for w in range(3)]
    assert [p.wait() for p in writers] == [0] * 3
    for r in readers:
        seen, bad = map(int, r.communicate()[0].split())
        assert bad == 0 and seen >= 1
    assert cache.get(key)["writer"] in range(3)
    assert [f.name for f in Path(cache.path()).iterdir()] == [key + cache.SUFFIX]


def test_long_text_values_are_stored_raw_and_read_back_as_str(tmp_path):
    key = cache.disk_key(("text",))
    entry = {"ptx": "// PTX \"quoted\" \\ and unicode \u00e9\n" * 200, "short": "x", "n": 3}
    assert cache.put(key, entry)
    assert cache.get(key) == entry
    data = (Path(cache.path()) / (key + cache.SUFFIX)).read_bytes()
    assert entry["ptx"].encode() in data                # raw UTF-8, not JSON-escaped


def test_the_holder_may_take_its_lock_again_and_other_threads_wait():
    import threading
    key = cache.disk_key(("re-entrant",))
    order = []

    def other():
        with cache.locked(key, timeout=30) as held:
            order.append(("other", held))
    with cache.locked(key) as outer:
        with cache.locked(key, timeout=0.05) as inner:      # no wait, no warning
            assert outer and inner
        t = threading.Thread(target=other)
        t.start()
        time.sleep(0.2)
        order.append(("holder", True))
    t.join()
    assert order == [("holder", True), ("other", True)]     # the thread waited for the release
