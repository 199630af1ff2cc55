"""core/collector.py: the cyclic garbage collector paused for a compile stage, and restored
after it (nested, concurrent, on error, and never turned on when the user had it off)."""
import gc
import threading

import pytest

import warpstage as ws
from warpstage.core.collector import collection_paused


@pytest.fixture(autouse=True)
def _collector_on():
    was = gc.isenabled()
    gc.enable()
    yield
    (gc.enable if was else gc.disable)()


def test_paused_inside_and_back_on_after():
    with collection_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_nested_uses_restore_only_at_the_outermost_end():
    with collection_paused():
        with collection_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_an_error_inside_still_restores():
    with pytest.raises(KeyError):
        with collection_paused():
            raise KeyError("x")
    assert gc.isenabled()


def test_a_collector_the_user_turned_off_stays_off():
    gc.disable()
    with collection_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_overlapping_threads_keep_it_paused_until_the_last_one_ends():
    inside, release = threading.Event(), threading.Event()
    seen = []

    def other():
        with collection_paused():
            inside.set()
            release.wait(10)
            seen.append(gc.isenabled())

    t = threading.Thread(target=other)
    with collection_paused():
        t.start()
        inside.wait(10)
    seen.append(gc.isenabled())          # this one ended first: the other still holds it
    release.set()
    t.join(10)
    assert seen == [False, False]
    assert gc.isenabled()


_SEEN: list = []


def _record_collector():
    _SEEN.append(gc.isenabled())


def _records(n: ws.Int32):
    _record_collector()                  # plain Python: runs while the kernel is traced


def test_the_trace_stage_runs_with_collection_paused(monkeypatch):
    monkeypatch.setenv("WARPSTAGE_CACHE_DIR", "")
    _SEEN.clear()
    ws.compile(ws.kernel(_records), ws.Int32).ir
    assert _SEEN == [False]
    assert gc.isenabled()
