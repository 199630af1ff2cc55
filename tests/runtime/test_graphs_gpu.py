"""warpstage launches inside CUDA graphs and on torch streams, on the GPU: capture with
``torch.cuda.graph`` (plain calls, prepared launches, TMA descriptors), replay after the inputs are
updated in place, launches on a side stream ordered by events, ``stream=`` honoured, and the
ctypes and cuda-bindings driver calls alike (docs/launch.md).

A kernel is compiled and loaded before capture (the warm-up torch's docs ask for any op: module
loading is not a stream operation and may not be captured); the launch itself allocates nothing,
synchronizes nothing and only calls cuLaunchKernel on torch's current stream, which inside
``torch.cuda.graph`` is the capturing stream."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import warpstage as ws  # noqa: E402
from example_loader import load_example  # noqa: E402
from warpstage.runtime import launcher as launcher_module  # noqa: E402

import test_tma_launch as tma_kernels  # noqa: E402

pytestmark = pytest.mark.gpu

vadd = load_example("vector_add")
N = 1000


def _inputs():
    return torch.randn(N, device="cuda"), torch.randn(N, device="cuda"), torch.empty(N, device="cuda")


def _warm_up(fn):
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()


def _launcher_of(kern):
    return next(iter(kern._cache.values()))._cuda[2]


@pytest.mark.parametrize("path", ["ctypes", "bindings"])
def test_capture_and_replay_a_call(path):
    kern = ws.kernel(vadd.vector_add.fn)
    a, b, out = _inputs()
    launch = kern[(N + 255) // 256, 256]
    _warm_up(lambda: launch(a, b, out, N))
    _launcher_of(kern).set_path(path)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        launch(a, b, out, N)
    for _ in range(3):
        a.copy_(torch.randn(N, device="cuda"))
        b.fill_(float(_))
        graph.replay()
        torch.cuda.synchronize()
        torch.testing.assert_close(out, a + b)
    assert _launcher_of(kern).path_used == path


def test_capture_and_replay_a_prepared_launch_with_other_torch_work():
    kern = ws.kernel(vadd.vector_add.fn)
    a, b, out = _inputs()
    prepared = kern[(N + 255) // 256, 256].prepare(a, b, out, N)
    _warm_up(prepared)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        b.mul_(2)                                   # torch work before and after the kernel
        prepared()
        out.add_(1)
    a.fill_(3.0)
    b.fill_(0.5)
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(out, torch.full_like(out, 3.0 + 1.0 + 1.0))


def test_capture_a_kernel_taking_tma_descriptors():
    kern = ws.kernel(tma_kernels.tile_copy.fn)
    D = ws.tma.TensorDescriptor
    src = torch.randn(40, 96, device="cuda")
    dst = torch.zeros(8, 32, device="cuda")
    descs = (D(src, (8, 32)), D(dst, (8, 32)))
    _warm_up(lambda: kern[1, 128](*descs, 8, 32))
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        kern[1, 128](*descs, 8, 32)
    src.copy_(torch.randn(40, 96, device="cuda"))     # same memory: the descriptor still holds
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(dst, src[8:16, 32:64])


@pytest.fixture
def streams(monkeypatch):
    """The stream handle of every launch, in order: ``Launcher.launch`` (whose ctypes call is
    inlined, so ``_call`` is not reached once the stream's pointer is known) and ``_call``
    reached from elsewhere (prepared launches), each launch counted once. The C-level call
    path (jit/c_call.py) launches from its stub, below these hooks, so it is off here (the
    tests make their kernels after this fixture): tests/jit/test_c_call_gpu.py covers its
    streams, and tests/jit/test_c_call.py compares its stream with this path's call by call."""
    monkeypatch.setenv("WARPSTAGE_CCALL", "0")
    handles, inside = [], []
    Launcher = launcher_module.Launcher
    real_launch, real_call = Launcher.launch, Launcher._call

    def spy_launch(self, grid, block, smem, stream, values):
        handles.append(stream)
        inside.append(True)
        try:
            return real_launch(self, grid, block, smem, stream, values)
        finally:
            inside.pop()

    def spy_call(self, dims, smem, stream, slot):
        if not inside:
            handles.append(stream)
        return real_call(self, dims, smem, stream, slot)
    monkeypatch.setattr(Launcher, "launch", spy_launch)
    monkeypatch.setattr(Launcher, "_call", spy_call)
    return handles


def test_a_side_stream_and_events_order_the_launch(streams):
    kern = ws.kernel(vadd.vector_add.fn)
    a, b, out = _inputs()
    side = torch.cuda.Stream()
    ready, done = torch.cuda.Event(), torch.cuda.Event()
    big = torch.randn(4096, 4096, device="cuda")
    for _ in range(3):
        a.copy_((big @ big)[0, :N] * 0 + 1)           # slow work on the default stream
        ready.record()
        with torch.cuda.stream(side):
            side.wait_event(ready)
            kern[(N + 255) // 256, 256](a, b, out, N)
            done.record(side)
        torch.cuda.current_stream().wait_event(done)
        torch.testing.assert_close(out, 1 + b)
    assert streams == [side.cuda_stream] * 3


def test_stream_argument_is_honoured(streams):
    kern = ws.kernel(vadd.vector_add.fn)
    a, b, out = _inputs()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    kern[(N + 255) // 256, 256, 0, s](a, b, out, N)
    kern(a, b, out, N, grid=(N + 255) // 256, block=256, stream=s.cuda_stream)
    prepared = kern[(N + 255) // 256, 256, 0, s].prepare(a, b, out, N)
    prepared()
    s.synchronize()
    torch.testing.assert_close(out, a + b)
    assert streams == [s.cuda_stream] * 3


def test_several_launches_in_one_graph():
    kern = ws.kernel(vadd.vector_add.fn)
    a, b, out = _inputs()
    launch = kern[(N + 255) // 256, 256]
    _warm_up(lambda: launch(a, b, out, N))
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(4):                            # 4 launches: out = a + b, four times
            launch(a, b, out, N)
            launch(out, b, out, N)
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(N).astype(np.float32), rng.standard_normal(N).astype(np.float32)
    a.copy_(torch.from_numpy(x))
    b.copy_(torch.from_numpy(y))
    graph.replay()
    np.testing.assert_allclose(out.cpu().numpy(), x + 2 * y, rtol=1e-5, atol=1e-5)
