"""The launch glue in C (jit/c_call.py, c_env.make_call / kernel_getitem, prepared.py): once a
configuration has a C context, ``kern[grid, block]`` and the launch object's call run in
compiled code (the keyword, target and guard checks, then the stub), and ``p()`` of a prepared
launch likewise; everything else falls back to the Python path, which launches, recompiles or
raises as before. On the pretend GPU of tests/fake_gpu.py (``C_LAUNCHES``: the stub's launches;
a C call that launched directly leaves the context's ``last_reason`` as it was)."""
import pytest

import warpstage as ws
from warpstage.backend.host_stub import MISS
from warpstage.core import trace
from warpstage.jit.kernel import Kernel
from warpstage.runtime import target as target_module
from fake_gpu import C_LAUNCHES, install, run as _run, twin as _twin

torch = pytest.importorskip("torch")

SCALE = 3
BIG = 10 ** 20
TABLE = [1, 2]


@pytest.fixture
def fake_gpu(monkeypatch):
    launches = install(monkeypatch, torch)
    monkeypatch.delenv("WARPSTAGE_CCALL", raising=False)
    monkeypatch.setitem(globals(), "SCALE", 3)
    monkeypatch.setitem(globals(), "BIG", 10 ** 20)
    monkeypatch.setitem(globals(), "TABLE", [1, 2])
    return launches


def _four(a: ws.Tensor, b: ws.Tensor, c: ws.Tensor, d: ws.Tensor, n: ws.Int32):
    pass


def _scaled(a: ws.Tensor, n: ws.Int32):
    i = ws.arch.thread_idx()[0]
    if i < n:
        a[i] = a[i] * SCALE


def _big(a: ws.Tensor, n: ws.Int32):
    if BIG > 5:
        a[0] = a[1]


def _table(a: ws.Tensor, n: ws.Int32):
    a[0] = a[1] * TABLE[0]


def _c_call(launch) -> bool:
    return type(type(launch).__dict__.get("__call__")).__name__ == "builtin_function_or_method"


def _clear_reason(launch):
    launch.cstate.live.words[_FIELD] = 0


def _reason(launch):
    return launch.cstate.live.reason()


_FIELD = __import__("warpstage.backend.host_stub_ir", fromlist=["CTX_FIELDS"]) \
    .CTX_FIELDS.index("last_reason")


def test_the_call_and_the_lookup_are_c_and_launch_what_python_launches(fake_gpu):
    k, full = ws.kernel(_four), _twin(_four)
    ts = [torch.zeros(64) for _ in range(4)]
    k[2, 32](*ts, 64)
    assert _c_call(k[2, 32])
    assert type(Kernel.__dict__["__getitem__"]).__name__ == "method_descriptor"
    for n in (64, 7):
        others = [torch.ones(64) for _ in range(4)]
        _clear_reason(k[2, 32])
        del C_LAUNCHES[:]
        got = _run(k, fake_gpu, (2, 32), (*others, n))
        assert len(C_LAUNCHES) == 1 and _reason(k[2, 32]) == 0     # launched by the C call
        assert got == _run(full, fake_gpu, (2, 32), (*others, n))
    assert k.trace_count == 1


def test_each_configuration_has_its_own_context(fake_gpu):
    k = ws.kernel(_four)
    ts = [torch.zeros(64) for _ in range(4)]
    for config in ((2, 32), (3, 64), (2, 32), (3, 64)):
        k[config](*ts, 64)
        k[config](*ts, 64)
        assert C_LAUNCHES[-1][:2] == (ws_dims(config[0]), ws_dims(config[1]))
    a, b = k[2, 32], k[3, 64]
    assert type(a) is not type(b) and _c_call(a) and _c_call(b)


def ws_dims(n):
    return (n, 1, 1)


def test_a_changed_global_recompiles_and_then_launches_from_c(fake_gpu):
    k, full = ws.kernel(_scaled), _twin(_scaled)
    x = torch.zeros(64)
    k[1, 32](x, 64)
    k[1, 32](x, 64)
    assert _c_call(k[1, 32]) and k.trace_count == 1
    globals()["SCALE"] = 4
    got = _run(k, fake_gpu, (1, 32), (x, 64))
    assert got == _run(full, fake_gpu, (1, 32), (x, 64)) and k.trace_count == 2
    _clear_reason(k[1, 32])
    del C_LAUNCHES[:]
    k[1, 32](x, 64)
    assert len(C_LAUNCHES) == 1 and _reason(k[1, 32]) == 0 and k.trace_count == 2
    globals()["SCALE"] = 3                    # back: what the full path does, again
    got = _run(k, fake_gpu, (1, 32), (x, 64))
    assert _reason(k[1, 32]) == MISS["guards"]
    assert got == _run(full, fake_gpu, (1, 32), (x, 64))


def test_a_global_rebound_to_an_equal_object_holds_and_the_table_follows(fake_gpu):
    k = ws.kernel(_big)
    x = torch.zeros(64)
    k[1, 32](x, 64)
    k[1, 32](x, 64)
    globals()["BIG"] = int("1" + "0" * 20)     # equal key, another object
    del C_LAUNCHES[:]
    k[1, 32](x, 64)                          # fails in C, holds in Python: launched by the stub
    assert len(C_LAUNCHES) == 1 and _reason(k[1, 32]) == MISS["guards"] and k.trace_count == 1
    _clear_reason(k[1, 32])
    k[1, 32](x, 64)
    assert len(C_LAUNCHES) == 2 and _reason(k[1, 32]) == 0       # the table expects it now


def test_guards_python_must_check_keep_the_python_call(fake_gpu):
    k = ws.kernel(_table)
    x = torch.zeros(64)
    k[1, 32](x, 64)
    k[1, 32](x, 64)
    assert not _c_call(k[1, 32])              # a list: compared by key, in Python
    del C_LAUNCHES[:]
    k[1, 32](x, 64)
    assert len(C_LAUNCHES) == 1               # the stub still launches
    TABLE[0] = 5
    k[1, 32](x, 64)
    assert k.trace_count == 2


def test_another_target_goes_to_the_python_path(fake_gpu, monkeypatch):
    k = ws.kernel(_scaled)
    x = torch.zeros(64)
    k[1, 32](x, 64)
    k[1, 32](x, 64)
    y = torch.ones(64)
    monkeypatch.setattr(target_module, "_override", "sim")   # read by the C call as it is
    del C_LAUNCHES[:]
    k[1, 32](y, 64)                                          # the simulator runs it
    assert not C_LAUNCHES and y[:32].eq(3).all() and y[32:].eq(1).all()
    monkeypatch.setattr(target_module, "_override", "".join(["cu", "da"]))   # equal, not same
    k[1, 32](x, 64)
    assert len(C_LAUNCHES) == 1


def test_lookup_inside_a_trace_and_odd_state_fall_back(fake_gpu):
    k = ws.kernel(_four)
    ts = [torch.zeros(64) for _ in range(4)]
    k[1, 32](*ts, 64)
    k[1, 32](*ts, 64)

    def outer(a: ws.Tensor):
        k[1, 32]

    with pytest.raises(ws.CompilationError, match="from inside traced code"):
        ws.kernel(outer)[1, 32](ts[0])
    assert trace._active == 0
    launch = k[1, 32]
    assert k[1, 32] is launch and k[(1, 32)] is launch
    k._last_launch = "not a pair"
    assert k[1, 32].grid == (1, 1, 1)
    with pytest.raises(ws.LaunchError, match="launch configuration"):
        k[1]


def test_each_configuration_keeps_its_launch_object_looked_up_in_c(fake_gpu, monkeypatch):
    k = ws.kernel(_four)
    ts = [torch.zeros(64) for _ in range(4)]
    for config in ((1, 32), (2, 32), (1, 32), (2, 32)):
        k[config](*ts, 64)
    a, b = k[1, 32], k[2, 32]
    assert type(Kernel.__dict__["__getitem__"]).__name__ == "method_descriptor"
    from warpstage.jit import c_env
    words, calls = c_env._getitem[1], []             # the C lookup's fallback, recorded

    def recording(kern, config):
        calls.append(config)
        return Kernel._getitem_python(kern, config)
    real, words[5] = words[5], id(recording)
    try:
        for _ in range(3):                               # alternating: both found in C
            assert k[1, 32] is a and k[2, 32] is b and k[(1, 32)] is a
        assert calls == []
        c = k[1, 32, 0]                                  # a new configuration: Python makes it
        assert c is not a and calls == [(1, 32, 0)] and k[1, 32, 0] is c and len(calls) == 1
    finally:
        words[5] = real
    assert k._last_launch[1] is c and set(k._launches) == {(1, 32), (2, 32), (1, 32, 0)}
    del C_LAUNCHES[:]
    k[1, 32](*ts, 64)
    k[2, 32](*ts, 64)
    assert [c[0] for c in C_LAUNCHES] == [(1, 1, 1), (2, 1, 1)]
    kept = dict(k._launches)
    assert k[[3], 32].grid == (3, 1, 1) and k[[1], 32].grid == (1, 1, 1)    # unhashable
    assert k._launches == kept                           # not kept (the last one is)


def test_the_kept_launch_objects_are_bounded(fake_gpu):
    from warpstage.jit.kernel import MAX_LAUNCHES
    k = ws.kernel(_four)
    x = torch.zeros(64)
    first = k[1, 32]
    for g in range(2, MAX_LAUNCHES + 1):
        k[g, 32]
    assert len(k._launches) == MAX_LAUNCHES and k[1, 32] is first
    k[MAX_LAUNCHES + 1, 32]                              # the 65th: the set starts anew
    assert len(k._launches) == 1 and k[1, 32] is not first
    k[1, 32](x, x, x, x, 64)


def test_errors_of_the_fallback_propagate(fake_gpu):
    k = ws.kernel(_four)
    x = torch.zeros(64)
    k[2, 32](x, x, x, x, 64)
    k[2, 32](x, x, x, x, 64)
    with pytest.raises(ws.ArgumentError):
        k[2, 32](x, x, x, x, 64, 1)
    with pytest.raises(ws.ArgumentError):
        k[2, 32](x, x, x, x, 64, bogus=1)
    del C_LAUNCHES[:]
    k[2, 32](x, x, x, x, n=64)                    # keywords: the Python path launches
    assert not C_LAUNCHES and _reason(k[2, 32]) == MISS["keywords"]


def test_prepared_call_is_c_and_follows_guards_and_rebinds(fake_gpu):
    k = ws.kernel(_scaled)
    x, y = torch.zeros(64), torch.ones(64)
    p = k[1, 32].prepare(x, 64)
    assert _c_call(p) and isinstance(p, type(p).__mro__[1])
    del C_LAUNCHES[:]
    p()
    p()
    assert len(C_LAUNCHES) == 2 and C_LAUNCHES[-1][4][0] == x.data_ptr()
    p(y, 9)                                      # rebinds (the fallback), then C again
    p()
    assert C_LAUNCHES[-1][4][0] == y.data_ptr() and C_LAUNCHES[-1][4][-1] == 9
    globals()["SCALE"] = 5
    p()                                          # re-prepared: traced again
    assert k.trace_count == 2 and _c_call(p)
    with pytest.raises(TypeError):
        p(stream=1)
    q = k[1, 32].prepare(x, 64)
    assert type(q) is not type(p)                # each its own class, its own stub


@ws.jit
def _helper(x):
    return x + 1


@ws.jit
def _other_helper(x):
    return x + 2


def _calls_helper(a: ws.Tensor, n: ws.Int32):
    a[0] = _helper(a[1])


def test_a_jit_helper_is_guarded_in_c_with_its_defaults(fake_gpu, monkeypatch):
    k = ws.kernel(_calls_helper)
    x = torch.zeros(64)
    k[1, 32](x, 64)
    k[1, 32](x, 64)
    assert _c_call(k[1, 32])
    _clear_reason(k[1, 32])
    del C_LAUNCHES[:]
    k[1, 32](x, 64)
    assert len(C_LAUNCHES) == 1 and _reason(k[1, 32]) == 0
    monkeypatch.setattr(_helper.fn, "__defaults__", (5,))     # its key changes: recompiles
    k[1, 32](x, 64)
    assert k.trace_count == 2 and _reason(k[1, 32]) == MISS["guards"]
    assert not _c_call(k[1, 32])              # a helper with defaults: checked in Python
    monkeypatch.undo()
    install(monkeypatch, torch)
    monkeypatch.setitem(globals(), "_helper", _other_helper)   # another function: recompiles
    k[1, 32](x, 64)
    assert k.trace_count == 3
