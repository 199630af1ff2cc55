"""The generated call path (jit/fast_call.py) with tensors that are not plain torch tensors:
``__cuda_array_interface__`` producers (cupy), DLPack capsules, torch subclasses. They are read
through the tensor adapter (``_adapt``) instead of inline, and take the memo like torch tensors.

Torch-free (tests/fake_gpu.py without torch): the tensors are FakeCudaArray, numpy memory posing
as cuda:0 behind ``__cuda_array_interface__``, and the driver call is the fake C entry that
decodes the ``void*[]`` it receives. Each call is compared with a twin kernel whose generated path
is switched off (the full path), as in test_fast_call.py.
"""
import numpy as np
import pytest

import warpstage as ws
from warpstage.jit import kernel as api
from fake_gpu import DRIVER_LAUNCHES, FakeCudaArray, fake_dlpack_capsule, install


@pytest.fixture
def fake_gpu(monkeypatch):
    return install(monkeypatch, None)


def _twin(fn):
    k = ws.kernel(fn)
    k._launch_type = api._Launch
    return k


def _key_of(kern, ck):
    return next(key for key, entry in kern._cache.items() if entry is ck)


def _run(kern, launches, config, args):
    n, d = len(launches), len(DRIVER_LAUNCHES)
    kern[config](*args)
    assert len(launches) == n + 1 and len(DRIVER_LAUNCHES) == d + 1
    ck, *rest = launches[-1]
    return (_key_of(kern, ck), *rest), DRIVER_LAUNCHES[-1]


def _four(a: ws.Tensor, b: ws.Tensor, c: ws.Tensor, out: ws.Tensor, n: ws.Int32):
    pass


def _four_bare(a, b, c, out, n):
    pass


def _count_misses(kern):
    misses = []
    ns = kern._fast.namespace
    real = kern._fast.miss
    ns["_miss"] = lambda *a: misses.append(a[2]) or real(*a)
    return misses


@pytest.mark.parametrize("fn", [_four, _four_bare], ids=["annotated", "bare"])
def test_four_cuda_array_interface_tensors_hit_the_memo(fake_gpu, fn):
    k = ws.kernel(fn)
    ts = [FakeCudaArray(np.zeros(1000, np.float32)) for _ in range(4)]
    k[8, 128](*ts, 1000)
    misses = _count_misses(k)
    for _ in range(3):
        k[8, 128](*ts, 1000)
    assert misses == [] and len(k._fast.memo) == 1 and k.trace_count == 1
    assert fake_gpu[-1][4] == 0                  # not torch: the legacy default stream
    ptrs = [t.array.ctypes.data for t in ts]
    assert DRIVER_LAUNCHES[-1][:3] == ((8, 1, 1), (128, 1, 1), 0)
    assert [v for v in DRIVER_LAUNCHES[-1][4] if v in ptrs] == ptrs


def _mixed(x: ws.Tensor, y, n: ws.Int32):
    pass


def _pool(keep):
    base = np.arange(64, dtype=np.float32)
    grid2 = np.zeros((6, 8), np.float32)
    return {
        "x": [FakeCudaArray(base), FakeCudaArray(base[1:]), FakeCudaArray(base[::2]),
              FakeCudaArray(np.arange(64, dtype=np.float16)), FakeCudaArray(grid2),
              FakeCudaArray(grid2.T), fake_dlpack_capsule(base[:32], keep)],
        "y": [3, 2 ** 40, 1.5, None, FakeCudaArray(base[4:]), FakeCudaArray(grid2.T),
              fake_dlpack_capsule(grid2, keep)],
        "n": [5, 0, 2 ** 31 - 1],
    }


@pytest.mark.filterwarnings("ignore::warpstage.jit.kernel.RecompileWarning")
@pytest.mark.parametrize("seed", range(4))
def test_every_call_launches_what_the_full_path_launches(fake_gpu, seed):
    rng = np.random.default_rng(seed)
    fast, full = ws.kernel(_mixed), _twin(_mixed)
    keep = []
    pool = _pool(keep)
    for _ in range(30):
        args = tuple(pool[p][rng.integers(len(pool[p]))] for p in ("x", "y", "n"))
        config = ((2, 1, 1), (32, 1, 1)) if rng.integers(2) else (3, 64)
        assert _run(fast, fake_gpu, config, args) == _run(full, fake_gpu, config, args), args
    assert fast.trace_count == full.trace_count
    assert fast._fast.memo, "the generated path never took a call"


def test_a_tensor_on_another_gpu_launches_there_after_a_hit(fake_gpu):
    k = ws.kernel(_mixed)
    x = np.zeros(8, np.float32)
    k[1, 32](FakeCudaArray(x), 1, 2)
    k[1, 32](FakeCudaArray(x), 1, 2)
    k[1, 32](FakeCudaArray(x, device=1), 1, 2)
    assert DRIVER_LAUNCHES[-1][5] == 1 and k.trace_count == 1


def test_a_changed_layout_recompiles(fake_gpu):
    k = ws.kernel(_mixed)
    x = np.zeros((8, 8), np.float32)
    k[1, 32](FakeCudaArray(x), 1, 2)
    k[1, 32](FakeCudaArray(x), 1, 2)
    k[1, 32](FakeCudaArray(x.T), 1, 2)
    assert k.trace_count == 2
    assert DRIVER_LAUNCHES[-1][4][:1] == (x.ctypes.data,)


def test_a_torch_subclass_takes_the_generated_path(monkeypatch):
    torch = pytest.importorskip("torch")
    install(monkeypatch, torch)
    k = ws.kernel(_four)
    ts = [torch.nn.Parameter(torch.zeros(1000), requires_grad=False) for _ in range(4)]
    k[8, 128](*ts, 1000)
    misses = _count_misses(k)
    k[8, 128](*ts, 1000)
    assert misses == [] and k.trace_count == 1
    assert DRIVER_LAUNCHES[-1][3] != 0           # torch's current stream (the fake's)


class _Mode(__import__("enum").IntEnum):
    A = 1
    B = 2


def _by_mode(m, x: ws.Tensor, n: ws.Int32):
    if m is _Mode.A:
        x[0] = 1.0


def test_int_enum_members_are_static_on_the_fast_and_the_full_path(fake_gpu):
    """An IntEnum member is rule 7 (static) whichever path reads it: each member is its own
    specialization on both, the generated path never takes it for the int it equals."""
    fast, full = ws.kernel(_by_mode), _twin(_by_mode)
    x = FakeCudaArray(np.zeros(8, np.float32))
    for m in (_Mode.A, _Mode.B, _Mode.A, _Mode.B, 1):
        assert _run(fast, fake_gpu, (1, 32), (m, x, 3)) == _run(full, fake_gpu, (1, 32), (m, x, 3))
    assert fast.trace_count == full.trace_count == 3     # A, B, and the int 1 (dynamic)
    assert len(fast._cache) == len(full._cache) == 3
