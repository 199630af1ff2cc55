import pytest

import warpstage as ws


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """A private disk cache (kernels and tuning records) and a fresh count of the tuner's
    stages; the simulator target."""
    monkeypatch.setenv("WARPSTAGE_CACHE_DIR", str(tmp_path / "cache"))
    for k in ws.tune.COUNTS:
        monkeypatch.setitem(ws.tune.COUNTS, k, 0)
    ws.set_target("sim")
    yield tmp_path / "cache"
    ws.set_target(None)
