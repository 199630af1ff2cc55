"""Device placement on the launch path (issue 17): a launch runs on the GPU of its tensors,
whichever device is current, with that device's module and torch stream; tensors on two GPUs
are an error naming both; one compile serves every device.

On two pretend GPUs (tests/fake_gpu.py): a tensor with ``_test_device = 1`` is on cuda:1, each
device has its own Launcher per compiled kernel and its own current stream (RAW_STREAM + index),
``CURRENT`` is the thread's current device and a launch of another device's function fails as
the driver's does, unless the Launcher pushes its device's context (``PUSHES``).
"""
import numpy as np
import pytest

import warpstage as ws
from warpstage.jit import kernel as api
from warpstage.jit.compiled import _runs_on
from fake_gpu import CURRENT, DRIVER_LAUNCHES, PUSHES, RAW_STREAM, FakeCudaArray, install

torch = pytest.importorskip("torch")


@pytest.fixture
def fake_gpu(monkeypatch):
    return install(monkeypatch, torch)


def _add(x: ws.Tensor, y, n: ws.Int32):
    pass                                      # only the ABI matters here


def _on(device, *shape):
    t = torch.zeros(*shape or (16,))
    t._test_device = device
    return t


def _twin(fn):
    k = ws.kernel(fn)
    k._launch_type = api._Launch              # the full path on every call
    return k


def test_a_launch_runs_on_the_device_of_its_tensors_whichever_is_current(fake_gpu):
    for kern in (ws.kernel(_add), _twin(_add)):
        for current in (0, 1):
            CURRENT[0] = current
            for device in (0, 1, 1, 0):
                del PUSHES[:]
                kern[1, 32](_on(device), _on(device), 4)
                *_, stream, _, launched_on = DRIVER_LAUNCHES[-1]
                assert (launched_on, stream) == (device, RAW_STREAM + device)
                assert PUSHES == ([] if device == current else [device])
                assert CURRENT[0] == current          # the thread's context is left as it was
        assert kern.trace_count == 1                  # one compile for both devices
    CURRENT[0] = 0


def test_one_module_per_device_one_memo_entry_per_device(fake_gpu):
    k = ws.kernel(_add)
    for device in (0, 1, 0, 1):
        k[1, 32](_on(device), 3, 4)
    ck, = k._cache.values()
    assert sorted(ck._devices) == [0, 1]
    assert ck._devices[0][2] is not ck._devices[1][2]
    assert [entry[0].device for entry in k._fast.memo.values()] == [0, 1]


@pytest.mark.filterwarnings("ignore::warpstage.jit.kernel.RecompileWarning")
@pytest.mark.parametrize("seed", range(3))
def test_random_devices_launch_what_the_full_path_launches(fake_gpu, seed):
    rng = np.random.default_rng(seed)
    fast, full = ws.kernel(_add), _twin(_add)
    for _ in range(30):
        device = int(rng.integers(2))
        y = [_on(device), 7, 1.5, None][rng.integers(4)]
        args = (_on(device), y, int(rng.integers(100)))
        got = []
        for kern in (fast, full):
            kern[1, 32](*args)
            got.append(DRIVER_LAUNCHES[-1][1:])
        assert got[0] == got[1], args
    assert fast._fast.memo, "the generated path never took a call"


@pytest.mark.parametrize("make", ["fast", "full", "prepare"])
def test_tensors_on_two_devices_raise_naming_both(fake_gpu, make):
    k = _twin(_add) if make == "full" else ws.kernel(_add)
    x, y = _on(0), _on(1)
    k[1, 32](x, x, 4)                                 # a memo entry for cuda:0
    n = len(DRIVER_LAUNCHES)
    with pytest.raises(ws.ArgumentError) as info:
        if make == "prepare":
            k[1, 32].prepare(x, y, 4)
        else:
            k[1, 32](x, y, 4)
    text = str(info.value)
    assert "'x'" in text and "'y'" in text and "cuda:0" in text and "cuda:1" in text
    assert "Fix:" in text
    assert not any(str(e.path).endswith(("launch.py", "fast_call.py", "specialize.py"))
                   for e in info.traceback)                # the compiler's frames are hidden
    assert len(DRIVER_LAUNCHES) == n                  # nothing launched


def _tma(d, y, n: ws.Int32):
    pass


def test_descriptors_follow_their_tensors_device(fake_gpu):
    D = ws.tma.TensorDescriptor
    for kern in (ws.kernel(_tma), _twin(_tma)):
        d1 = D(_on(1, 32, 64), (8, 32))
        kern[1, 128](d1, 2, 3)
        kern[1, 128](d1, 2, 3)
        assert DRIVER_LAUNCHES[-1][3] == RAW_STREAM + 1 and DRIVER_LAUNCHES[-1][5] == 1
        with pytest.raises(ws.ArgumentError, match="cuda:0.*cuda:1|cuda:1.*cuda:0"):
            kern[1, 128](D(_on(0, 32, 64), (8, 32)), d1, 3)


def test_torch_free_arrays_on_device_one(fake_gpu):
    k = ws.kernel(_add)
    x = FakeCudaArray(np.zeros(16, np.float32), device=1)
    for _ in range(2):
        k[1, 32](x, 5, 6)
        assert DRIVER_LAUNCHES[-1][5] == 1 and DRIVER_LAUNCHES[-1][3] == 0   # no torch stream
    assert len(k._fast.memo) == 1
    with pytest.raises(ws.ArgumentError, match="cuda:1"):
        k[1, 32](x, FakeCudaArray(np.zeros(16, np.float32)), 6)


def test_a_prepared_launch_on_device_one(fake_gpu):
    k = ws.kernel(_add)
    x = _on(1)
    p = k[1, 32].prepare(x, 3, 4)
    p()
    assert DRIVER_LAUNCHES[-1][3] == RAW_STREAM + 1 and DRIVER_LAUNCHES[-1][5] == 1
    p(_on(1), 3, 4)
    assert DRIVER_LAUNCHES[-1][5] == 1
    p(_on(0), 3, 4)                                   # another device: prepared anew
    assert DRIVER_LAUNCHES[-1][3] == RAW_STREAM and DRIVER_LAUNCHES[-1][5] == 0


def test_a_kernel_without_tensors_runs_on_device_zero(fake_gpu):
    def scalars(n: ws.Int32):
        pass
    k = ws.kernel(scalars)
    CURRENT[0] = 1
    k[1, 32](3)
    assert DRIVER_LAUNCHES[-1][5] == 0 and CURRENT[0] == 1
    CURRENT[0] = 0


def test_a_device_that_does_not_exist_is_a_device_error(fake_gpu):
    k = ws.kernel(_add)
    with pytest.raises(ws.DeviceError, match="device 2"):
        k[1, 32](_on(2), 3, 4)


@pytest.mark.parametrize("arch, cc, runs", [("sm_90a", (9, 0), True), ("sm_90a", (10, 0), False),
                                            ("sm_80", (8, 6), True), ("sm_86", (8, 0), False),
                                            ("sm_80", (9, 0), False)])
def test_which_architectures_run_a_cubin(arch, cc, runs):
    assert _runs_on(arch, *cc) is runs
