"""Shared fixtures: GPU tests skip themselves where no usable CUDA device is present."""
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
