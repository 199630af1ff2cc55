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


@pytest.fixture(params=["fake gpu", "sim"])
def on(request, monkeypatch):
    """The target a test runs on: the pretend GPU (launches recorded in DRIVER_LAUNCHES) or the
    simulator."""
    if request.param == "sim":
        ws.set_target("sim")
        yield "sim"
        ws.set_target(None)
    else:
        install(monkeypatch, None)
        yield "gpu"


def _pair(on, n, dtype=np.float32):
    x, y = np.arange(n, dtype=dtype) + 1, np.ones(n, dtype)
    return (x, y) if on == "sim" else (FakeCudaArray(x), FakeCudaArray(y))


def _relaunch(on, p, y) -> object:
    """``p()``, and what it launched: its record on the pretend GPU, the output ``y`` in the
    simulator (refilled with ones first)."""
    if on == "sim":
        y[:] = 1.0
    p()
    return DRIVER_LAUNCHES[-1] if on == "gpu" else y.tolist()


@pytest.mark.parametrize("args, kwargs, says", [
    (("8",), {}, r"annotated Int32 but got a str \('8'\)"), ((), {}, "no value for 'n'"),
    ((2 ** 40,), {}, "overflows"), ((), {"n": 8, "m": 1}, "unexpected keyword argument 'm'")],
    ids=["wrong type", "missing", "out of range", "unknown keyword"])
def test_a_failed_call_leaves_the_launch_bound_as_it_was(on, args, kwargs, says):
    """A call that raises leaves the prepared launch bound to its previous arguments: the next
    ``p()`` launches exactly what the one before did, every time, without tracing again."""
    k = ws.kernel(_axpy)
    x, y = _pair(on, 64)
    x2, y2 = _pair(on, 64)
    p = k[2, 32].prepare(x, y, 2.0, 64)
    before = _relaunch(on, p, y)
    for _ in range(2):
        with pytest.raises(ws.ArgumentError, match=says):
            p(x2, y2, 3.0, *args, **kwargs)
        assert _relaunch(on, p, y) == before
    assert k.trace_count == 1 and p.args == (x, y, 2.0, 64)


def _picky(x: ws.Tensor, y: ws.Tensor, m: ws.Static[int]):
    if m > 2:
        raise ValueError("m is too big")          # a trace that fails for some arguments
    y[0] = x[0] * m


def test_a_rebind_whose_compile_fails_leaves_the_launch_bound(on):
    k = ws.kernel(_picky)
    x, y = _pair(on, 4)
    p = k[1, 32].prepare(x, y, 2)
    before = _relaunch(on, p, y)
    with pytest.raises(ValueError, match="m is too big"):
        p(x, y, 3)                                  # a new key: compiled, and it fails
    assert _relaunch(on, p, y) == before and p.args == (x, y, 2)


def test_a_repack_that_fails_restores_the_buffer(fake_gpu, monkeypatch):
    """Packing writes the buffer in place: a pack that raises part-way (here: forced) leaves
    the previous values packed."""
    from warpstage.runtime.launcher import BoundLaunch
    k = ws.kernel(_axpy)
    x, y = _arrays()
    p = k[4, 32].prepare(x, y, 2.0, 100)
    p()
    real = BoundLaunch.rebind
    calls = []

    def failing(self, values):
        calls.append(values)
        if len(calls) == 1:
            self.slot[0][0:8] = b"\xff" * 8              # part of it written, then it fails
            raise ws.ArgumentError("forced")
        real(self, values)
    monkeypatch.setattr(BoundLaunch, "rebind", failing)
    x2, y2 = _arrays()
    with pytest.raises(ws.ArgumentError, match="forced"):
        p(x2, y2, 3.0, 50)
    p()
    assert DRIVER_LAUNCHES[-1] == DRIVER_LAUNCHES[-2] and p.args[0] is x


def test_prepared_launches_take_keywords_and_defaults_as_a_call_does(on):
    def with_default(x: ws.Tensor, y: ws.Tensor, a: ws.Float32, n: ws.Int32 = 64):
        i = ws.arch.block_idx()[0] * ws.arch.block_dim()[0] + ws.arch.thread_idx()[0]
        if i < n:
            y[i] = a * x[i]
    k = ws.kernel(with_default)
    x, y = _pair(on, 64)
    p = k[2, 32].prepare(x, y=y, a=2.0)
    assert p.args == (x, y, 2.0, 64)
    p(x, y, n=32, a=3.0)
    assert p.args == (x, y, 3.0, 32)
    if on == "gpu":
        k[2, 32](x, y, 3.0, 32)
        assert DRIVER_LAUNCHES[-1] == DRIVER_LAUNCHES[-2]
    else:
        np.testing.assert_array_equal(y, np.where(np.arange(64) < 32, 3.0 * x, 1.0))
    with pytest.raises(ws.ArgumentError, match=r"(?s)unexpected keyword argument 'count'.*"
                                               r"Fix: p\(x, y, a, n\) with p = with_default"):
        p(x, y, 2.0, count=8)
    with pytest.raises(ws.ArgumentError, match=r"(?s)no value for 'a'.*Fix: with_default"
                                               r"\[grid, block\]\.prepare\(x, y, a, n\)"):
        k[2, 32].prepare(x, y)
