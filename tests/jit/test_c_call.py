"""The C-level call path (jit/c_call.py): the stub launches exactly what the full path launches,
call by call, for every argument kind it reads; every call it does not launch (each miss reason
of backend/host_stub.MISS) goes to the Python path, which launches, recompiles or raises as
before; tensors torch's DLPack reader would crash on are never handed to it.

On the pretend GPU of tests/fake_gpu.py: the stub reads CPU torch tensors with torch's real C
DLPack reader (``_test_device`` reported as the device), kDLCPU counts as the GPU, and the
launches it makes are recorded with the Python path's (``C_LAUNCHES`` holds the stub's alone).
"""
import numpy as np
import pytest

import warpstage as ws
from warpstage.backend.host_stub import MISS
from warpstage.jit import c_call
from fake_gpu import C_LAUNCHES, RAW_STREAM, FakeCudaArray, fake_dlpack_capsule, install
from fake_gpu import compare_call_by_call, key_of as _key_of, run as _run, twin as _twin

torch = pytest.importorskip("torch")


@pytest.fixture
def fake_gpu(monkeypatch):
    launches = install(monkeypatch, torch)
    monkeypatch.delenv("WARPSTAGE_CCALL", raising=False)
    return launches


def _reason(kern, config):
    return kern[config].cstate.live["last_reason"]


def _all(x: ws.Tensor, y, n: ws.Int32, u: ws.Uint8, s: ws.Static[int], z):
    pass                                        # every kind the stub reads; only the ABI matters


def _pool():
    base = torch.arange(64, dtype=torch.float32)
    grid2 = torch.zeros(6, 8)
    return {
        "x": [base, base[1:], base[::2], torch.arange(64, dtype=torch.float16), grid2,
              grid2.t(), torch.zeros(8, 8, dtype=torch.int32), torch.zeros(0)],
        "y": [3, 2 ** 40, True, None, base[4:], grid2.t(), -7, 1.5],
        "n": [5, 0, 2 ** 31 - 1, -2 ** 31, True],
        "u": [0, 255, 7],
        "s": [1, 2, -3],
        "z": [None, 4, grid2],
    }


@pytest.mark.filterwarnings("ignore::warpstage.jit.kernel.RecompileWarning")
@pytest.mark.parametrize("seed", range(4))
def test_every_call_launches_what_the_full_path_launches(fake_gpu, seed):
    configs = [((2, 1, 1), (32, 1, 1)), (3, 64, 0, 99)]
    c_launches = compare_call_by_call(_all, _pool(), configs, fake_gpu, seed, calls=60)
    assert c_launches > 30, "the C path took few calls"


def _four(a: ws.Tensor, b: ws.Tensor, c: ws.Tensor, d: ws.Tensor, n: ws.Int32):
    pass


def test_a_repeated_call_launches_from_c_with_its_own_values(fake_gpu):
    k = ws.kernel(_four)
    ts = [torch.zeros(64) for _ in range(4)]
    k[2, 32](*ts, 64)
    del C_LAUNCHES[:]
    for n in (64, 3, 2 ** 31 - 1):
        others = [torch.ones(64) for _ in range(4)]
        k[2, 32](*others, n)
        assert C_LAUNCHES[-1][4] == (others[0].data_ptr(), 64, others[1].data_ptr(), 64,
                                     others[2].data_ptr(), 64, others[3].data_ptr(), 64, n)
    assert len(C_LAUNCHES) == 3 and k.trace_count == 1
    assert C_LAUNCHES[-1][3] == RAW_STREAM                # torch's current stream


_KEEP: list = []                                # what the capsules point to


def _miss_cases():
    x = torch.zeros(64)
    sub = torch.nn.Parameter(torch.zeros(64))
    return [
        ("argument", lambda: (sub, x, x, x, 64)),                     # a torch subclass
        ("argument", lambda: (FakeCudaArray(np.zeros(64, np.float32)), x, x, x, 64)),
        ("argument", lambda: (fake_dlpack_capsule(np.zeros(64, np.float32), _KEEP), x, x, x,
                              64)),                          # a bare DLPack capsule
        ("argument", lambda: (x, x, x, x, 2 ** 31)),                  # out of Int32's range
        ("argument", lambda: (x, x, x, x, 2.0)),
        ("argument", lambda: (x, x, x, x, 2 ** 70)),                  # no C long long
        ("no_match", lambda: (torch.zeros(32), x, x, x, 64)),         # a new shape: compiles
        ("no_match", lambda: (x[1:], x[1:], x[1:], x[1:], 64)),       # alignment
        ("arity", lambda: (x, x, x, x)),
    ]


@pytest.mark.filterwarnings("ignore::warpstage.jit.kernel.RecompileWarning")
@pytest.mark.parametrize("case", range(len(_miss_cases())))
def test_every_miss_takes_the_python_path(fake_gpu, case):
    reason, make = _miss_cases()[case]
    k, full = ws.kernel(_four), _twin(_four)
    x = torch.zeros(64)
    k[2, 32](x, x, x, x, 64)
    args = make()
    del C_LAUNCHES[:]
    try:
        expected = _run(full, fake_gpu, (2, 32), args)
    except ws.WarpstageError as e:
        with pytest.raises(type(e), match=str(e).splitlines()[0][:40].replace("(", r"\(")
                           .replace(")", r"\)").replace("[", r"\[").replace("+", r"\+")):
            k[2, 32](*args)
    else:
        assert _run(k, fake_gpu, (2, 32), args) == expected
    assert not C_LAUNCHES and _reason(k, (2, 32)) == MISS[reason]
    if reason == "no_match":                              # registered: the next one is C's
        k[2, 32](*args)
        assert len(C_LAUNCHES) == 1


def test_keywords_and_another_arity_take_the_python_path(fake_gpu):
    k = ws.kernel(_four)
    x = torch.zeros(64)
    k[2, 32](x, x, x, x, 64)
    del C_LAUNCHES[:]
    k[2, 32](x, x, x, x, n=64)
    with pytest.raises(ws.ArgumentError):
        k[2, 32](x, x, x, x, 64, 1)
    assert not C_LAUNCHES


@pytest.mark.parametrize("make", [
    lambda: torch.empty(64, device="meta"),
    lambda: torch.zeros(64).to_sparse(),
    lambda: torch.quantize_per_tensor(torch.zeros(64), 0.1, 0, torch.qint8),
    lambda: torch.nested.nested_tensor([torch.zeros(2), torch.zeros(3)]),
    lambda: torch.zeros(64, dtype=torch.uint8).view(torch.bits8),
], ids=["meta", "sparse", "quantized", "nested", "bits8"])
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_tensors_torchs_reader_cannot_take_raise_as_on_the_python_path(fake_gpu, make):
    k, full = ws.kernel(_four), _twin(_four)
    x = torch.zeros(64)
    k[2, 32](x, x, x, x, 64)
    bad = make()
    errors = []
    for kern in (full, k):
        try:
            kern[2, 32](bad, x, x, x, 64)
        except Exception as e:                  # noqa: BLE001 - compared below
            errors.append((type(e), str(e)))
        else:
            errors.append(None)
    assert errors[0] == errors[1]
    assert _reason(k, (2, 32)) == MISS["argument"]


def test_a_functorch_wrapper_is_not_read(fake_gpu):
    k = ws.kernel(_four)
    x = torch.zeros(64)
    k[2, 32](x, x, x, x, 64)
    state = k[2, 32].cstate

    def probe(row):
        assert state.dry.dry_run((row, x, x, x, 64))[:2] == ("miss", MISS["argument"])
        return row
    torch.func.vmap(probe)(torch.zeros(3, 64))


def test_tensors_on_two_devices_raise_as_on_the_python_path(fake_gpu):
    import fake_gpu as fake
    k = ws.kernel(_four)
    x, y = torch.zeros(64), torch.zeros(64)
    y._test_device = 1
    k[2, 32](x, x, x, x, 64)
    k[2, 32](y, y, y, y, 64)                              # cuda:1, from Python
    k[2, 32](y, y, y, y, 64)                              # cuda:0 current: the driver refuses
    assert not C_LAUNCHES and _reason(k, (2, 32)) == MISS["driver"]
    fake.CURRENT[0] = 1                                   # torch.cuda.device(1)
    k[2, 32](y, y, y, y, 64)
    fake.CURRENT[0] = 0
    assert C_LAUNCHES[-1][5] == 1 and C_LAUNCHES[-1][3] == RAW_STREAM + 1
    with pytest.raises(ws.ArgumentError, match="is on cuda:0 and parameter .b. on cuda:1"):
        k[2, 32](x, y, x, x, 64)
    assert _reason(k, (2, 32)) == MISS["devices"]


def test_stream_argument_and_the_driver_refusing(fake_gpu):
    k = ws.kernel(_four)
    x = torch.zeros(64)
    for _ in range(2):
        k[2, 32, 0, 77](x, x, x, x, 64)
    assert C_LAUNCHES[-1][3] == 77
    import fake_gpu as fake
    fake.CURRENT[0] = 1                                   # another device's context is current
    del C_LAUNCHES[:]
    k[2, 32, 0, 77](x, x, x, x, 64)                        # refused: the Launcher pushes cuda:0
    fake.CURRENT[0] = 0
    assert not C_LAUNCHES and fake.PUSHES[-1] == 0 and fake_gpu[-1][4] == 77
    assert _reason(k, (2, 32, 0, 77)) == MISS["driver"]


def test_off_by_environment(fake_gpu, monkeypatch):
    monkeypatch.setenv("WARPSTAGE_CCALL", "0")
    k = ws.kernel(_four)
    x = torch.zeros(64)
    for _ in range(3):
        k[2, 32](x, x, x, x, 64)
    assert not C_LAUNCHES and not hasattr(type(k[2, 32]), "c_states")


def test_float_scalars_keep_the_python_path(fake_gpu):
    def scaled(x: ws.Tensor, a: ws.Float32):
        pass
    k = ws.kernel(scaled)
    x = torch.zeros(4)
    for _ in range(3):
        k[1, 32](x, 2.0)
    assert not C_LAUNCHES and c_call.stub_kinds(k._fast.kinds) is None


def test_prepared_launches_from_c(fake_gpu):
    k = ws.kernel(_four)
    ts = [torch.zeros(64) for _ in range(4)]
    p = k[2, 32].prepare(*ts, 64)
    del C_LAUNCHES[:]
    p()
    p()
    assert len(C_LAUNCHES) == 2 and C_LAUNCHES[-1][4][0] == ts[0].data_ptr()
    others = [torch.ones(64) for _ in range(4)]
    p(*others, 9)                                         # rebinds the buffer the stub reads
    assert C_LAUNCHES[-1][4] == (others[0].data_ptr(), 64, others[1].data_ptr(), 64,
                                 others[2].data_ptr(), 64, others[3].data_ptr(), 64, 9)
    assert C_LAUNCHES[-1][3] == RAW_STREAM


@pytest.mark.parametrize("bad", [2 ** 31, 2 ** 70, 2.0])
def test_errors_from_the_c_path_show_only_user_frames(fake_gpu, bad):
    """The C call falls back to slow_call through State's fallback frame: that frame, and
    slow_call's, must not show in the user's traceback (tests/gpu/test_tracebacks_gpu.py on
    the H200)."""
    import os
    import traceback
    pkg = os.path.dirname(ws.__file__)
    k = ws.kernel(_four)
    x = torch.zeros(64)
    k[2, 32](x, x, x, x, 64)
    k[2, 32](x, x, x, x, 64)                              # now the C call
    with pytest.raises(ws.ArgumentError) as info:
        k[2, 32](x, x, x, x, bad)
    assert _reason(k, (2, 32)) == MISS["argument"]
    inside = [f"{f.filename}:{f.lineno}" for f in traceback.extract_tb(info.value.__traceback__)
              if os.path.abspath(f.filename).startswith(pkg)]
    assert not inside, inside
