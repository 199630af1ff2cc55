"""Shared fixtures: GPU tests skip themselves where no usable CUDA device is present; every test
has a private disk cache (WARPSTAGE_CACHE_DIR); ``sim_target`` runs a test's kernels in the
simulator (``pytestmark = pytest.mark.usefixtures("sim_target")`` for a whole module);
``ptxas_path`` skips a test where no ptxas is installed. tests/ is on sys.path (this file lives
here), so test files share helpers such as example_loader.py."""
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


@pytest.fixture
def sim_target():
    """Kernels launched during the test run in the CPU simulator; the default target after it."""
    import warpstage as ws
    ws.set_target("sim")
    yield
    ws.set_target(None)


@pytest.fixture
def ptxas_path():
    """ptxas's path; skips the test where no ptxas is installed."""
    from warpstage.backend import find_ptxas
    from warpstage.options import CompileOptions
    path = find_ptxas(CompileOptions())
    if path is None:
        pytest.skip("no ptxas found (nvidia-cuda-nvcc wheel, CUDA_HOME, PATH, WARPSTAGE_PTXAS)")
    return path


@pytest.fixture(autouse=True)
def _race_detector_reset():
    """A test that turns the simulator's race detector on cannot leave it on for the next one."""
    yield
    from warpstage.sim.run import set_races
    set_races(None)
