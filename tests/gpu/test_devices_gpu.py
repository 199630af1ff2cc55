"""Device placement on real GPUs (issue 17 item 1): a launch runs on the device of its tensors
with that device's module and torch's current stream there, leaves the thread's current context
(torch's current device) as it was, and compiles once for every device of one architecture.

One GPU: device 0, a foreign context current during the launch, modules per device. Two GPUs
(skipped unless ``torch.cuda.device_count() >= 2``): cuda:1 while cuda:0 is current and the
reverse, tensors on two devices (the error naming both), the module loaded once on device 1,
a launch on cuda:1 queued on device 1's current stream while cuda:0 is current, a prepared
launch and a side stream on cuda:1.
"""
import pytest

torch = pytest.importorskip("torch")

import warpstage as ws  # noqa: E402
from example_loader import load_example  # noqa: E402
from warpstage.runtime import driver  # noqa: E402

pytestmark = pytest.mark.gpu

vadd = load_example("vector_add")
two_gpus = pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.device_count() < 2,
                              reason="needs 2 GPUs")


def _inputs(device, n=1000):
    a, b = (torch.randn(n, device=device) for _ in range(2))
    out = torch.full((n,), float("nan"), device=device)
    return a, b, out


def _run(k, a, b, out):
    n = out.shape[0]
    k[(n + 255) // 256, 256](a, b, out, n)


def test_device_zero_one_module_one_compile():
    k = ws.kernel(vadd.vector_add.fn)
    for _ in range(3):
        a, b, out = _inputs("cuda:0")
        _run(k, a, b, out)
        torch.cuda.synchronize()
        assert torch.equal(out, a + b)
    ck, = k._cache.values()
    assert sorted(ck._devices) == [0] and k.trace_count == 1
    assert torch.cuda.current_device() == 0


def _create_context():
    cu = driver.cuda()
    dev = driver.device(0)
    try:
        err, ctx = cu.cuCtxCreate(None, 0, dev)       # CUDA 13: (params, flags, device)
    except TypeError:
        err, ctx = cu.cuCtxCreate(0, dev)
    driver.check(err, "creating a context")
    return cu, ctx                                    # created current on this thread


def test_a_foreign_current_context_is_left_current():
    k = ws.kernel(vadd.vector_add.fn)
    a, b, out = _inputs("cuda:0")
    _run(k, a, b, out)                                # loaded and memoized in the primary context
    for call in range(2):                             # a memo hit, then the full path
        out.fill_(float("nan"))
        torch.cuda.synchronize()
        if call:
            k._fast.memo.clear()
        cu, ctx = _create_context()                   # torch's memory is not this context's
        try:
            _run(k, a, b, out)                        # pushes the primary context, pops it
            err, current = cu.cuCtxGetCurrent()
            assert int(current) == int(ctx), call     # still the user's context
        finally:
            cu.cuCtxDestroy(ctx)                      # pops it: the primary context again
        torch.cuda.synchronize()
        assert torch.equal(out, a + b), call


@two_gpus
@pytest.mark.parametrize("current, device", [(0, 1), (1, 0), (1, 1)])
def test_a_launch_runs_on_its_tensors_device(current, device):
    k = ws.kernel(vadd.vector_add.fn)
    with torch.cuda.device(current):
        for _ in range(3):                            # full path, then memo hits
            a, b, out = _inputs(f"cuda:{device}")
            _run(k, a, b, out)
            torch.cuda.synchronize(device)
            assert torch.equal(out, a + b)
            assert torch.cuda.current_device() == current
    ck, = k._cache.values()
    assert sorted(ck._devices) == [device] and k.trace_count == 1


@two_gpus
def test_both_devices_share_one_compile_with_a_module_each():
    k = ws.kernel(vadd.vector_add.fn)
    for device in (0, 1, 0, 1):
        a, b, out = _inputs(f"cuda:{device}")
        _run(k, a, b, out)
        torch.cuda.synchronize(device)
        assert torch.equal(out, a + b)
    ck, = k._cache.values()
    assert sorted(ck._devices) == [0, 1] and k.trace_count == 1
    assert ck._devices[0][0] is not ck._devices[1][0]


@two_gpus
def test_tensors_on_two_devices_raise_naming_both():
    k = ws.kernel(vadd.vector_add.fn)
    a, b, out = _inputs("cuda:0")
    with pytest.raises(ws.ArgumentError, match=r"parameter 'a' is on cuda:0 and parameter 'b' "
                                               r"on cuda:1; .* Fix: .*b.to\('cuda:0'\)"):
        _run(k, a, b.to("cuda:1"), out)
    with pytest.raises(ws.ArgumentError, match="parameter 'a' is on cuda:1 and parameter 'b' "
                                               "on cuda:0"):
        _run(k, a.to("cuda:1"), b, out.to("cuda:1"))


@two_gpus
def test_the_module_is_loaded_on_device_one_once(monkeypatch):
    loads = []
    real = driver.load_module

    def counting(image, is_ptx, device=0):
        loads.append(device)
        return real(image, is_ptx, device=device)
    monkeypatch.setattr(driver, "load_module", counting)
    k = ws.kernel(vadd.vector_add.fn)
    with torch.cuda.device(0):
        for i in range(4):
            if i == 2:
                k._fast.memo.clear()                  # the full path again
            a, b, out = _inputs("cuda:1")
            _run(k, a, b, out)
            torch.cuda.synchronize(1)
            assert torch.equal(out, a + b)
    assert loads == [1] and k.trace_count == 1


@two_gpus
def test_a_launch_on_cuda1_follows_device_ones_current_stream():
    """cuda:0 current, device 1's current stream a side stream busy with a long sleep and then
    writing the inputs: the kernel must queue behind them (a launch on any other stream of
    device 1 would read the inputs before they are written)."""
    k = ws.kernel(vadd.vector_add.fn)
    n = 1 << 20
    a = torch.zeros(n, device="cuda:1")
    b = torch.zeros(n, device="cuda:1")
    out = torch.full((n,), float("nan"), device="cuda:1")
    _run(k, a, b, out)                                # compiled and loaded on device 1
    torch.cuda.synchronize(1)
    side = torch.cuda.Stream(device=1)
    before = torch.cuda.current_stream(1)
    try:
        with torch.cuda.device(1):
            torch.cuda.set_stream(side)
        with torch.cuda.device(0):
            assert torch.cuda.current_stream(1) == side
            with torch.cuda.device(1):
                torch.cuda._sleep(200_000_000)        # ~0.1 s of device 1's side stream
                a.fill_(1.0)
                b.fill_(2.0)
            _run(k, a, b, out)
            assert torch.cuda.current_device() == 0
        side.synchronize()
        assert torch.equal(out, torch.full_like(out, 3.0))
    finally:
        with torch.cuda.device(1):
            torch.cuda.set_stream(before)


@two_gpus
def test_a_prepared_launch_and_a_side_stream_on_device_one():
    k = ws.kernel(vadd.vector_add.fn)
    a, b, out = _inputs("cuda:1")
    n = out.shape[0]
    p = k[(n + 255) // 256, 256].prepare(a, b, out, n)
    p()
    torch.cuda.synchronize(1)
    assert torch.equal(out, a + b)
    side = torch.cuda.Stream(device=1)
    side.wait_stream(torch.cuda.current_stream(1))
    with torch.cuda.stream(side):
        a2, b2 = a * 2, b * 3
        _run(k, a2, b2, out)                          # on the side stream: ordered after a2, b2
    side.synchronize()
    assert torch.equal(out, a2 + b2)
