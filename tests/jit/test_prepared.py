"""``kern[grid, block].prepare(*args)`` (warpstage/jit/prepared.py): a prepared launch launches what
the call it stands for launches, rebinds same-typed arguments without a lookup, and re-prepares
when the arguments' key or a guarded global changes. On the pretend GPU of tests/fake_gpu.py
(torch-free: FakeCudaArray), each launch compared with the plain call's, down to the bytes the
fake driver entry decodes; and in the simulator."""
import numpy as np
import pytest

import warpstage as ws
from fake_gpu import DRIVER_LAUNCHES, FakeCudaArray, install


@pytest.fixture
def fake_gpu(monkeypatch):
    return install(monkeypatch, None)


def _axpy(x: ws.Tensor, y: ws.Tensor, a: ws.Float32, n: ws.Int32):
    i = ws.arch.block_idx()[0] * ws.arch.block_dim()[0] + ws.arch.thread_idx()[0]
    if i < n:
        y[i] = a * x[i] + y[i] * SCALE


SCALE = 1.0


def _arrays(n=100, dtype=np.float32):
    return FakeCudaArray(np.arange(n, dtype=dtype)), FakeCudaArray(np.ones(n, dtype))


def test_prepare_does_not_launch_and_then_launches_what_a_call_launches(fake_gpu):
    k = ws.kernel(_axpy)
    x, y = _arrays()
    p = k[4, 32].prepare(x, y, 2.0, 100)
    assert DRIVER_LAUNCHES == [] and k.trace_count == 1
    p()
    p()
    k[4, 32](x, y, 2.0, 100)
    assert len(DRIVER_LAUNCHES) == 3
    assert DRIVER_LAUNCHES[0] == DRIVER_LAUNCHES[1] == DRIVER_LAUNCHES[2]
    assert p.sig is not None and k.trace_count == 1


def test_rebinding_same_types_repacks_without_tracing(fake_gpu):
    k = ws.kernel(_axpy)
    p = k[4, 32].prepare(*_arrays(), 2.0, 100)
    x2, y2 = _arrays()
    p(x2, y2, 3.0, 50)
    k[4, 32](x2, y2, 3.0, 50)
    assert DRIVER_LAUNCHES[-1] == DRIVER_LAUNCHES[-2] and k.trace_count == 1
    assert DRIVER_LAUNCHES[-1][4][0] == x2.array.ctypes.data


@pytest.mark.parametrize("change", ["dtype", "strides", "scalar range"])
def test_rebinding_other_types_prepares_anew(fake_gpu, change):
    k = ws.kernel(_axpy)
    p = k[4, 32].prepare(*_arrays(), 2.0, 100)
    x, y = _arrays(dtype=np.float16) if change == "dtype" else _arrays()
    n = 100
    if change == "strides":
        x = x[::2]
    if change == "scalar range":
        n = 2 ** 40                                     # an Int32 parameter cannot hold it
        with pytest.raises(ws.ArgumentError, match="'n'"):
            p(x, y, 2.0, n)
        return
    p(x, y, 2.0, n)
    k[4, 32](x, y, 2.0, n)
    assert DRIVER_LAUNCHES[-1] == DRIVER_LAUNCHES[-2] and k.trace_count == 2


def test_a_changed_global_prepares_anew(fake_gpu):
    global SCALE
    k = ws.kernel(_axpy)
    x, y = _arrays()
    p = k[4, 32].prepare(x, y, 2.0, 100)
    try:
        SCALE = 3.0
        p()
        assert k.trace_count == 2
    finally:
        SCALE = 1.0


def test_the_stream_of_the_launch_object_is_used(fake_gpu):
    k = ws.kernel(_axpy)
    p = k[4, 32, 0, 0xAB00].prepare(*_arrays(), 2.0, 100)
    p()
    assert DRIVER_LAUNCHES[-1][3] == 0xAB00
    k[4, 32](*_arrays(), 2.0, 100)
    assert DRIVER_LAUNCHES[-1][3] == 0                  # no torch tensor: the legacy stream


def test_a_kernel_without_a_generated_path_prepares_through_the_full_path(fake_gpu):
    def lists(x: ws.Tensor, pair: ws.Static[tuple], n: int):
        pass
    k = ws.kernel(lists)
    x, _ = _arrays()
    p = k[1, 32].prepare(x, (1, 2), 5)
    p()
    p(x, (1, 2), 6)
    k[1, 32](x, (1, 2), 6)
    assert p.sig is None and DRIVER_LAUNCHES[-1] == DRIVER_LAUNCHES[-2]


def test_prepared_launch_in_the_simulator():
    ws.set_target("sim")
    try:
        k = ws.kernel(_axpy)
        x, y = np.arange(64, dtype=np.float32), np.ones(64, np.float32)
        p = k[2, 32].prepare(x, y, 2.0, 64)
        np.testing.assert_array_equal(y, 1.0)           # preparing does not launch
        p()
        np.testing.assert_array_equal(y, 2.0 * x + 1.0)
        y2 = np.zeros(64, np.float32)
        p(x, y2, 1.0, 64)
        np.testing.assert_array_equal(y2, x)
    finally:
        ws.set_target(None)


def test_preparing_in_the_simulator_checks_the_arguments_and_compiles(sim_target):
    k = ws.kernel(_axpy)
    x, y = np.arange(64, dtype=np.float32), np.ones(64, np.float32)
    with pytest.raises(ws.ArgumentError, match=r"(?s)parameter 'n' is annotated Int32 but got "
                                               r"a str \('a'\).*\.prepare\(x, y, 2.0, \"a\"\)"):
        k[2, 32].prepare(x, y, 2.0, "a")
    assert k.trace_count == 0
    k[2, 32].prepare(x, y, 2.0, 64)
    assert k.trace_count == 1                           # compiled while preparing
    np.testing.assert_array_equal(y, 1.0)               # and not launched


def test_torch_tensors_launch_on_torchs_current_stream_at_each_call(monkeypatch):
    torch = pytest.importorskip("torch")
    install(monkeypatch, torch)
    current = [0x5000]                                      # torch's current stream on cuda:0
    monkeypatch.setattr(torch._C, "_cuda_getCurrentRawStream", lambda index: current[index])
    k = ws.kernel(_axpy)
    x, y = torch.arange(100.0), torch.ones(100)
    p = k[4, 32].prepare(x, y, 2.0, 100)
    p()
    assert DRIVER_LAUNCHES[-1][3] == 0x5000
    current[0] = 0xC0DE                                     # e.g. inside torch.cuda.graph(...)
    p()
    assert DRIVER_LAUNCHES[-1][3] == 0xC0DE
    k[4, 32](x, y, 2.0, 100)
    assert DRIVER_LAUNCHES[-1] == DRIVER_LAUNCHES[-2]
