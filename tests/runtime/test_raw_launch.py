"""The Launcher's two driver calls (runtime/raw_launch.py, runtime/launcher.py): libcuda's
cuLaunchKernel through ctypes and cuda-bindings' wrapper, with fakes of both that decode the
``void*[]`` they receive the way the driver does. No GPU needed."""
import contextlib
import ctypes

import pytest

from warpstage.errors import ArgumentError, LaunchError
from warpstage.ir import types as ir
from warpstage.runtime import driver, raw_launch
from warpstage.runtime.launcher import Launcher, LaunchLimits

LIMITS = LaunchLimits(1024, (1024, 1024, 64), (2 ** 31 - 1, 65535, 65535), 232448, 1024, 32)
TYPES = [ir.PointerType(ir.f32), ir.i32, ir.f32, ir.i64, ctypes.c_ubyte * 16]


def _decode(launcher, params_address):
    slots = ctypes.cast(params_address, ctypes.POINTER(ctypes.c_void_p))
    base = slots[0] - launcher.param_offsets[0]
    for i, off in enumerate(launcher.param_offsets):
        assert slots[i] == base + off
    return launcher._struct.unpack(ctypes.string_at(base, launcher._struct.size))


class _Bindings:
    """cuda-bindings' cuLaunchKernel, as the Launcher calls it."""

    def __init__(self):
        self.calls = []
        self.launcher = None

    def CUstream(self, handle):
        return ("stream", handle)

    def cuLaunchKernel(self, f, gx, gy, gz, bx, by, bz, smem, stream, params, extra):
        self.calls.append(("bindings", f, (gx, gy, gz), (bx, by, bz), smem, stream[1],
                           _decode(self.launcher, params)))
        return (0,)


@pytest.fixture
def fake_driver(monkeypatch):
    bindings = _Bindings()
    raw_calls = []

    def raw(f, gx, gy, gz, bx, by, bz, smem, stream, params, extra):
        assert isinstance(f, ctypes.c_void_p) and extra is None
        assert stream is None or isinstance(stream, ctypes.c_void_p)
        raw_calls.append(("ctypes", f.value, (gx, gy, gz), (bx, by, bz), smem,
                          stream.value if stream else 0, _decode(bindings.launcher, params)))
        return raw.result
    raw.result = 0
    monkeypatch.setattr(driver, "cuda", lambda: bindings)
    monkeypatch.setattr(driver, "context", lambda: None)
    monkeypatch.setattr(driver, "ensure_context", lambda ordinal=0: None)
    monkeypatch.setattr(raw_launch, "_fn", raw)
    return bindings, raw_calls, raw


VALUES = [0xDEAD0000, -5, 1.5, 2 ** 40, bytes(range(16))]


@pytest.mark.parametrize("path", ["ctypes", "bindings"])
def test_both_paths_pass_the_same_parameters(fake_driver, path):
    bindings, raw_calls, _ = fake_driver
    launcher = bindings.launcher = Launcher(0xF00, TYPES, limits=LIMITS, path=path)
    launcher.launch((3, 2), 64, 100, 0x1234, VALUES)
    launcher.launch((3, 2), 64, 100, 0, VALUES)
    calls = raw_calls if path == "ctypes" else bindings.calls
    assert launcher.path_used == path and len(calls) == 2
    expected = tuple(VALUES)
    assert calls[0][2:] == ((3, 2, 1), (64, 1, 1), 100, 0x1234, expected)
    assert calls[1][5] == 0                               # NULL: the legacy default stream


def test_ctypes_falls_back_to_bindings_without_libcuda(fake_driver, monkeypatch):
    bindings, raw_calls, _ = fake_driver
    monkeypatch.setattr(raw_launch, "_fn", False)         # loading libcuda failed
    launcher = bindings.launcher = Launcher(0xF00, TYPES, limits=LIMITS, path="ctypes")
    launcher.launch(1, 32, 0, 0, VALUES)
    assert launcher.path_used == "bindings" and len(bindings.calls) == 1 and not raw_calls


def test_a_driver_error_raises_launch_error(fake_driver, monkeypatch):
    bindings, _, raw = fake_driver
    raw.result = 1                                        # CUDA_ERROR_INVALID_VALUE
    monkeypatch.setattr(driver, "_error_text", lambda result: f"error {int(result)}")
    launcher = bindings.launcher = Launcher(0xF00, TYPES, limits=LIMITS, path="ctypes")
    with pytest.raises(LaunchError, match=r"cuLaunchKernel\): error 1"):
        launcher.launch(1, 32, 0, 0, VALUES)


def test_bad_path_and_bad_stream(fake_driver):
    with pytest.raises(LaunchError, match="launch path"):
        Launcher(0xF00, TYPES, limits=LIMITS, path="cffi")
    bindings, _, _ = fake_driver
    launcher = bindings.launcher = Launcher(0xF00, TYPES, limits=LIMITS, path="ctypes")
    with pytest.raises(LaunchError, match="stream must be an int"):
        launcher.launch(1, 32, 0, "s", VALUES)


def test_a_bound_launch_keeps_its_own_buffer(fake_driver):
    bindings, raw_calls, _ = fake_driver
    launcher = bindings.launcher = Launcher(0xF00, TYPES, limits=LIMITS, path="ctypes")
    bound = launcher.bind(2, 32, 0, VALUES)
    other = [1, 2, 3.0, 4, bytes(16)]
    launcher.launch(5, 64, 0, 0, other)                   # the thread's buffer and dims change
    bound.launch(0x99)
    assert raw_calls[-1][2:] == ((2, 1, 1), (32, 1, 1), 0, 0x99, tuple(VALUES))
    bound.rebind(other)
    bound.launch(0)
    assert raw_calls[-1][-1] == tuple(other)
    with pytest.raises(ArgumentError, match="#1"):
        bound.rebind([1, 2 ** 40, 3.0, 4, bytes(16)])     # i32 cannot hold it


@pytest.mark.parametrize("error", [201, 400])   # CUDA_ERROR_INVALID_CONTEXT, _INVALID_HANDLE
def test_a_thread_with_another_context_pushes_the_launchers_and_retries(fake_driver, monkeypatch,
                                                                        error):
    bindings, raw_calls, raw = fake_driver
    launcher = bindings.launcher = Launcher(0xF00, TYPES, limits=LIMITS, path="ctypes", device=1)
    bound = launcher.bind(1, 32, 0, VALUES)
    made_current = []

    @contextlib.contextmanager
    def on_device(ordinal):
        made_current.append(ordinal)
        yield
    monkeypatch.setattr(driver, "on_device", on_device)
    results = iter([error, 0])                            # the wrong context, then OK
    real = raw_launch._fn
    monkeypatch.setattr(raw_launch, "_fn", None)
    launcher._raw = lambda *a: real(*a) * 0 + next(results)
    bound.launch(0)
    assert made_current == [1] and len(raw_calls) == 2    # device 1's context, pushed
