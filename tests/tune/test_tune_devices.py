"""Autotuning on several GPUs (warpstage/tune/devices.py, search.py's timing step) with the
pretend driver's two GPUs (tests/fake_gpu.py): the candidates are compiled once and timed by one
worker process per GPU at once, each worker started with CUDA_VISIBLE_DEVICES naming its GPU;
the winner is the one a one-GPU run picks; GPUs of another model, malformed options and GPUs
that do not exist are refused. The workers have no GPU and need none: the tuned function
launches a kernel on FakeCudaArray tensors, which the compile workers assemble and record
without running (a launch the autotuner requires), and the timer (tune_kernels.DeviceLogTimer)
logs where it ran and fakes the times without running the candidate."""
import sys

import numpy as np
import pytest

import fake_gpu
import tune_kernels as tk
import warpstage as ws
from warpstage.runtime import target as target_module
from warpstage.tune import devices as gpus

autotune_module = sys.modules["warpstage.tune.autotune"]     # the package re-exports the function

VISIBLE = ("GPU-pretend-0", "GPU-pretend-1")      # no such UUIDs: CUDA sees no GPU
SPACE = [tk.Tiles("slow", 32), tk.Tiles("medium", 64), tk.Tiles("fast", 128),
         tk.Tiles("fast", 256)]                        # #2 and #3 tie: the first must win


@pytest.fixture
def two_gpus(tmp_path, monkeypatch):
    """The pretend driver's cuda:0 and cuda:1 (one model), a private cache, fresh counters,
    and the timer's log file (returned). CUDA_VISIBLE_DEVICES names two GPUs that do not
    exist (VISIBLE), so that the workers, which have no pretend driver, see no real GPU on a
    machine that has one; the timing workers are narrowed to one entry each."""
    monkeypatch.setenv("WARPSTAGE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", ",".join(VISIBLE))
    monkeypatch.delenv("WARPSTAGE_TUNE_DEVICES", raising=False)
    for k in ws.tune.COUNTS:
        monkeypatch.setitem(ws.tune.COUNTS, k, 0)
    fake_gpu.install(monkeypatch, None)
    autotune_module._device_name.cache_clear()
    log = tmp_path / "timer.log"
    monkeypatch.setenv("WS_TEST_TIMER_LOG", str(log))
    yield log
    autotune_module._device_name.cache_clear()


def _log(path):
    """[(name, CUDA_VISIBLE_DEVICES, pid, start, end)] in the order written."""
    rows = [line.split() for line in path.read_text().splitlines()]
    return [(n, v, int(p), float(a), float(b)) for n, v, p, a, b in rows]


def _tune(devices, hold_s=0.4, space=SPACE, meet=0, **kw):
    tuned = ws.autotune(space, timer=tk.DeviceLogTimer(hold_s, meet=meet), jobs=1,
                        progress=False,
                        devices=devices, **kw)(tk.placed)
    x, y = (fake_gpu.FakeCudaArray(a) for a in tk.data(64))
    tuned(x, y)
    return tuned.report


def _outcome(report):
    return [(c.index, c.status, c.ms) for c in report.candidates], report.best.index


def test_two_gpus_time_at_once_after_one_compile_each(two_gpus):
    r = _tune("all", meet=2)
    rows = _log(two_gpus)
    assert sorted(n for n, *_ in rows) == sorted(c.name for c in SPACE)
    by_gpu = {v: [n for n, vv, *_ in rows if vv == v] for v in VISIBLE}
    assert by_gpu == {VISIBLE[0]: ["slow", "fast"], VISIBLE[1]: ["medium", "fast"]}  # in turn
    assert len({p for _, _, p, _, _ in rows}) == 2                      # a process per GPU
    first = [next(row for row in rows if row[1] == v) for v in VISIBLE]
    assert max(row[3] for row in first) < min(row[4] for row in first)  # they overlapped
    assert ws.tune.COUNTS["compiles"] == 4 and ws.tune.COUNTS["timings"] == 4
    assert r.devices == (0, 1) and "timed on 2 GPUs" in r.summary()
    assert r.best.index == 2 and r.best.ms == tk.FAKE_MS["fast"]


def test_the_choice_is_the_one_gpu_runs(two_gpus, tmp_path, monkeypatch):
    two = _outcome(_tune([0, 1], hold_s=0))
    monkeypatch.setenv("WARPSTAGE_CACHE_DIR", str(tmp_path / "cache-one"))
    two_gpus.unlink()
    one = _outcome(_tune(None, hold_s=0))
    assert {v for _, v, *_ in _log(two_gpus)} == {VISIBLE[0]}
    assert one == two and one[1] == 2


def test_the_environment_variable_is_the_default(two_gpus, monkeypatch):
    monkeypatch.setenv("WARPSTAGE_TUNE_DEVICES", "all")
    assert _tune(None, hold_s=0).devices == (0, 1)
    monkeypatch.setenv("WARPSTAGE_TUNE_DEVICES", "zero")
    with pytest.raises(ws.ArgumentError, match="the WARPSTAGE_TUNE_DEVICES environment "
                                               "variable='zero'; expected None, 'all'"):
        gpus.from_option(None, 0)


def test_a_worker_started_again_keeps_its_gpu(two_gpus):
    space = [tk.Tiles("slow", 32), tk.Tiles("boom", 64), tk.Tiles("medium", 128),
             tk.Tiles("fast", 256)]
    r = _tune("all", hold_s=0, space=space)
    rows = {n: (v, p) for n, v, p, _, _ in _log(two_gpus)}
    assert r.candidates[1].status == "failed" and "boom" in r.candidates[1].reason
    assert rows["fast"][0] == rows["boom"][0] == VISIBLE[1]   # the same GPU ...
    assert rows["fast"][1] != rows["boom"][1]                 # ... in a new worker
    assert r.best.config.name == "fast"


def test_the_arguments_gpu_is_home_and_comes_first(two_gpus):
    x = fake_gpu.FakeCudaArray(np.zeros(4, np.float32), device=1)
    assert gpus.home_device((3, [x]), {}) == 1
    assert gpus.home_device((np.zeros(2),), {"n": 2}) == 0
    assert gpus.resolve(None, 1) == [1]
    assert gpus.resolve("all", 1) == [1, 0] and gpus.resolve([0], 1) == [1, 0]


def test_gpus_of_another_model_are_left_out_or_refused(two_gpus, monkeypatch):
    monkeypatch.setattr(target_module._properties[1], "name", "other GPU")
    assert gpus.resolve("all", 0) == [0]
    with pytest.raises(ws.ArgumentError, match=r"cuda:1 \(other GPU, sm_90\) is another model "
                                               r"than the arguments' cuda:0 \(pretend GPU"):
        gpus.resolve([0, 1], 0)


def test_malformed_devices_and_missing_gpus_are_refused(two_gpus):
    with pytest.raises(ws.ArgumentError, match="devices='some'; expected None, 'all' or GPU "
                                               "ordinals"):
        ws.autotune(SPACE, devices="some")
    with pytest.raises(ws.ArgumentError, match="runs one worker process per GPU"):
        ws.autotune(SPACE, devices="all", isolation="none")
    with pytest.raises(ws.ArgumentError, match="names a GPU twice"):
        gpus.resolve([0, 0], 0)
    with pytest.raises(ws.ArgumentError, match=r"GPU 5 does not exist; this process sees 2 "
                                               r"\(cuda:0..cuda:1\)"):
        _tune([0, 5])


def test_a_workers_gpu_is_named_through_cuda_visible_devices(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert gpus.worker_env(1) == {"CUDA_VISIBLE_DEVICES": "1"}
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3, GPU-5e1f")
    assert gpus.worker_env(0) == {"CUDA_VISIBLE_DEVICES": "3"}
    assert gpus.worker_env(1) == {"CUDA_VISIBLE_DEVICES": "GPU-5e1f"}
