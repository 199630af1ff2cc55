"""Shared fixtures: GPU tests skip themselves where no usable CUDA device is present; every test
has a private disk cache (WARPSTAGE_CACHE_DIR)."""
import functools

import pytest


@functools.lru_cache(maxsize=None)
def gpu_available() -> bool:
    try:
        from warpstage.runtime.target import cuda_available
    except Exception:
        return False
    return cuda_available()


def pytest_collection_modifyitems(config, items):
    if gpu_available():
        return
    skip = pytest.mark.skip(reason="no usable CUDA GPU on this machine")
    for item in items:
        if item.get_closest_marker("gpu") is not None:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _private_disk_cache(tmp_path, monkeypatch):
    """Each test gets its own empty disk cache (never ~/.cache/warpstage), so one test's
    compiled kernels cannot turn another test's trace into a disk hit. Subprocesses inherit it."""
    monkeypatch.setenv("WARPSTAGE_CACHE_DIR", str(tmp_path / "ws-cache"))
