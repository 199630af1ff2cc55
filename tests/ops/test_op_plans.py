"""The op plans (warpstage/ops/op_plans.py) on the pretend GPU of tests/fake_gpu.py: a call that
runs a plan launches exactly what the op's own code launches for it (compared call by call,
with addresses named by the tensor they point into), a changed shape, stride, dtype, device,
alignment, ``out`` or argument never reuses another call's plan, errors stay the op's, and a
repeated call does no per-call work (no specialization, trace, policy, descriptor encode or
repack)."""
import numpy as np
import pytest

import warpstage as ws
from fake_gpu import ENCODED, REPLACED, fake_encode, install
from warpstage.ops import attention, matmul_host, op_plans

torch = pytest.importorskip("torch")

_KERNELS = {}                   # fresh kernels shared by this module's tests (traced once)


@pytest.fixture
def fake_gpu(monkeypatch):
    launches = install(monkeypatch, torch)          # H200s: 132 SMs, sm_90
    for module, name in ((matmul_host, "matmul_kernel"), (matmul_host, "splitk_reduce"),
                         (attention, "flash_attention_wgmma_kernel"),
                         (attention, "flash_attention_kernel")):
        if name not in _KERNELS:
            _KERNELS[name] = ws.kernel(getattr(module, name).fn)
        monkeypatch.setattr(module, name, _KERNELS[name])
    return launches


def _named(launch, tensors: dict):
    """A recorded launch with each address replaced by the name of the tensor in ``tensors``
    (name -> tensor) it points into, and each descriptor's map by (that name, its geometry)."""
    names = {t.data_ptr(): name for name, t in tensors.items()}
    maps = {_digest(d): d for d in list(ENCODED)}
    ck, grid, block, smem, stream, values = launch
    out = []
    for v in values:
        if isinstance(v, bytes) and v in maps:
            d = maps[v]
            out.append(("map", names.get(d.tensor_arg.data_ptr, d.tensor_arg.data_ptr), d.shape,
                        d.strides, d.box, d.swizzle))
        elif type(v) is int and v in names:
            out.append(("ptr", names[v]))
        else:
            out.append(v)
    return ck, grid, block, smem, stream, tuple(out)


def _digest(d) -> bytes:
    n = len(ENCODED)
    digest = fake_encode(d)
    del ENCODED[n:]                     # fake_encode records what it encodes
    return digest


def _made(monkeypatch) -> list:
    """Every tensor ``torch.zeros`` / ``torch.empty`` returns from here on (the scratch an op
    call makes, such as a ``dynamic_tiles`` launch's tile counters: on the pretend GPU's CPU
    tensors a fresh pair per call, made by the op's own code or by its plan)."""
    made = []
    for name in ("zeros", "empty"):
        def make(*args, _real=getattr(torch, name), **kwargs):
            t = _real(*args, **kwargs)
            made.append(t)
            return t
        monkeypatch.setattr(torch, name, make)
    return made


def _scratch(made: list, start: int, tensors: dict) -> dict:
    """The tensors made since ``made[start]`` that no name in ``tensors`` holds, named by their
    shape and dtype: a launch into a new scratch tensor of the right kind matches."""
    known = {id(t) for t in tensors.values()}
    return {f"scratch{tuple(t.shape)}{t.dtype}#{i}": t
            for i, t in enumerate(t for t in made[start:] if id(t) not in known)}


def _compare(launches, call, tensors: dict, made: list = None):
    """Run ``call()`` without plans, then twice with them (records, then runs the plan); the
    named launches must be equal each time (with ``made``, from :func:`_made`, the scratch
    tensors each call made are named by their order, shape and dtype). Returns the plan run's
    result."""
    made = [] if made is None else made

    def run():
        n, m = len(launches), len(made)
        result = call()
        named = dict(tensors, **_results(result))
        named.update(_scratch(made, m, named))
        return result, [_named(x, named) for x in launches[n:]]
    op_plans.ENABLED = False
    try:
        result, expected = run()
    finally:
        op_plans.ENABLED = True
    for _ in range(2):
        result, got = run()
        assert got == expected
    return result


def _results(result) -> dict:
    return {f"result{i}": r for i, r in enumerate(result if isinstance(result, tuple) else
                                                    (result,))}


def _bf16(*shape, dtype=torch.bfloat16):
    return torch.zeros(shape, dtype=dtype)


def test_plan_launches_equal_the_ops_own_launches_call_by_call(fake_gpu):
    rng = np.random.default_rng(13)
    a, a2, w = _bf16(256, 128), _bf16(384, 128), _bf16(256, 128)
    c, c2, c32 = _bf16(256, 256), _bf16(384, 256), _bf16(256, 256, dtype=torch.float32)
    wide = _bf16(256, 512)[:, :256]                 # out with padded rows: a strided out
    bias, x16 = torch.zeros(256), _bf16(16, 128)
    calls = [
        lambda: ws.ops.matmul(a, w.T, out=c),
        lambda: ws.ops.matmul(a2, w.T, out=c2),                 # another M, same policy
        lambda: ws.ops.matmul(a, w.T),                          # a new output
        lambda: ws.ops.matmul(a, w.T, out=wide),
        lambda: ws.ops.matmul(a, w.T, out=c32, out_dtype=torch.float32),
        lambda: ws.ops.matmul(x16, w.T),                        # split-K: two launches
        lambda: ws.ops.matmul(a, w.T, out=c, epilogue=ws.ops.BiasGelu(bias)),
    ]
    before = op_plans.STATS["plans"]
    for i in rng.permutation(len(calls)):
        _compare(fake_gpu, calls[i], {"a": a, "a2": a2, "w": w, "c": c, "c2": c2, "c32": c32,
                                      "wide": wide, "bias": bias, "x16": x16})
    assert op_plans.STATS["plans"] - before == len(calls)       # one plan per distinct call


def test_scaled_matmul_plans_follow_new_scales_and_one_scale_passed_twice(fake_gpu):
    a = torch.zeros(256, 128, dtype=torch.float8_e4m3fn)
    w = torch.zeros(256, 128, dtype=torch.float8_e4m3fn)
    c = _bf16(256, 256)
    s, s2 = torch.tensor(1.0), torch.tensor(2.0)
    names = {"a": a, "w": w, "c": c, "s": s, "s2": s2}
    _compare(fake_gpu, lambda: ws.ops.scaled_matmul(a, w.T, s, s, out=c), names)
    # the plan recorded with scale_a is scale_b must not run for two different scales
    n = len(fake_gpu)
    ws.ops.scaled_matmul(a, w.T, s, s2, out=c)
    assert _named(fake_gpu[n], names)[5].count(("ptr", "s2")) == 1
    _compare(fake_gpu, lambda: ws.ops.scaled_matmul(a, w.T, s2, s, out=c), names)


def test_attention_plans_equal_the_ops_own_launches(fake_gpu, monkeypatch):
    made = _made(monkeypatch)           # D=64's short default claims tiles: fresh counters
    q, k, v = (_bf16(1, 2, 256, 64) for _ in range(3))
    kv = _bf16(1, 1, 256, 64)
    t = _bf16(1, 256, 2, 64).transpose(1, 2)        # a (B, S, H, D) tensor's view
    names = {"q": q, "k": k, "v": v, "kv": kv, "t": t}
    for call in (lambda: ws.ops.flash_attention(q, k, v, causal=True),
                 lambda: ws.ops.flash_attention(q, k, v, mma="wgmma"),
                 lambda: ws.ops.flash_attention(q, kv, kv, return_lse=True),
                 lambda: ws.ops.flash_attention(t, k, v)):
        _compare(fake_gpu, call, names, made)


def test_a_changed_fact_never_reuses_a_plan(fake_gpu):
    a, w, c, b = _bf16(256, 128), _bf16(256, 128), _bf16(256, 256), _bf16(128, 256)
    ws.ops.matmul(a, w.T, out=c)
    plans = op_plans.STATS["plans"]
    base = bytearray(256 * 256 * 2 + 64)
    odd = torch.frombuffer(base, dtype=torch.bfloat16)[1:1 + 256 * 256].view(256, 256)
    others = [lambda: ws.ops.matmul(a, b, out=c),                  # b's strides
              lambda: ws.ops.matmul(a, b[:, :128], out=c[:, :128]),    # shapes
              lambda: ws.ops.matmul(a.half(), w.T.half(), out=c.half()),   # dtypes
              lambda: ws.ops.matmul(a, w.T, out=c, tile_n=128),    # an argument
              lambda: ws.ops.matmul(a, w.T)]                       # no out
    for call in others:
        call()
    assert op_plans.STATS["plans"] == plans + len(others)
    n = len(fake_gpu)
    for _ in range(2):                              # alignment: the output is copied into
        ws.ops.matmul(a, w.T, out=odd)              # out, which no plan can do
    assert op_plans.STATS["plans"] == plans + len(others) and len(fake_gpu) == n + 2
    assert op_plans.NOT_PLANNED in op_plans._PLANS.values()


def test_a_plan_on_another_device_is_another_plan(fake_gpu):
    a, wt, c = _bf16(256, 128), _bf16(128, 256), _bf16(256, 256)   # wt: no view (the pretend
    # device is an attribute of the tensor object)
    ws.ops.matmul(a, wt, out=c)
    n = len(fake_gpu)
    for t in (a, wt, c):
        t._test_device = 1
    ws.ops.matmul(a, wt, out=c)
    ws.ops.matmul(a, wt, out=c)
    assert [x[0]._devices[1][2] is not None for x in fake_gpu[n:]] == [True, True]
    from fake_gpu import DRIVER_LAUNCHES
    assert DRIVER_LAUNCHES[-1][5] == 1 and DRIVER_LAUNCHES[-2][5] == 1   # on cuda:1
    a._test_device = 0
    with pytest.raises(ws.ArgumentError, match="expected one device"):
        ws.ops.matmul(a, wt, out=c)


def test_errors_stay_the_ops_after_a_plan_exists(fake_gpu):
    a, w, c = _bf16(256, 128), _bf16(256, 128), _bf16(256, 256)
    ws.ops.matmul(a, w.T, out=c)
    with pytest.raises(ws.ArgumentError, match=r"out is \(256, 128\)"):
        ws.ops.matmul(a, w.T, out=c[:, :128])
    with pytest.raises(ws.OperandError, match="tile_n"):
        ws.ops.matmul(a, w.T, out=c, tile_n=True)     # True == 1 in Python: another key
    q = _bf16(1, 2, 256, 64)
    ws.ops.flash_attention(q, q, q, causal=True)
    with pytest.raises(ws.ArgumentError, match="causal=1"):
        ws.ops.flash_attention(q, q, q, causal=1)


def test_a_repeated_call_does_no_per_call_work(fake_gpu, monkeypatch):
    a, w = _bf16(512, 256), _bf16(512, 256)
    outs = [_bf16(512, 512) for _ in range(2)]
    for c in outs:
        ws.ops.matmul(a, w.T, out=c)
        ws.ops.matmul(a, w.T, out=c)
    q = _bf16(1, 2, 256, 64)
    ws.ops.flash_attention(q, q, q, causal=True)
    ws.ops.flash_attention(q, q, q, causal=True)
    for kernel in _KERNELS.values():
        monkeypatch.setattr(kernel, "specialize", lambda *args, **kw: pytest.fail(
            "a repeated call took the op's own path"))
    init = matmul_host.Matmul.__init__
    monkeypatch.setattr(matmul_host.Matmul, "__init__", lambda *a, **k: pytest.fail(
        "a repeated call built a policy") or init(*a, **k))
    encoded, stats, n = len(ENCODED), dict(op_plans.STATS), len(fake_gpu)
    for _ in range(3):
        ws.ops.matmul(a, w.T, out=outs[1])
    assert op_plans.STATS == stats and len(ENCODED) == encoded          # nothing repacked
    for c in outs:              # addresses seen before: their own buffers, not repacked
        ws.ops.matmul(a, w.T, out=c)
    assert op_plans.STATS == stats and len(ENCODED) == encoded
    ws.ops.flash_attention(q, q, q, causal=True)    # a new output: its TMA-store map at most
    assert len(ENCODED) <= encoded + 1
    assert len(fake_gpu) == n + 6


def test_rotating_more_address_sets_than_kept_launches_each_at_its_own_addresses(fake_gpu):
    """Inputs and outputs in turn, as a model's activations: 3 inputs x 8 outputs (24 address
    sets, more than the 16 a plan keeps, so kept buffers are repacked for new sets) over two
    rounds. Every launch names exactly its call's tensors (compared with the op's own code), and
    a map at a new address is the recorded map with the address replaced, not a full encode."""
    xs, w = [_bf16(128, 256) for _ in range(3)], _bf16(256, 256)
    outs = [_bf16(128, 256) for _ in range(8)]
    ws.ops.matmul(xs[0], w.T, out=outs[0])
    ws.ops.matmul(xs[0], w.T, out=outs[0])              # the plan
    encoded = len(ENCODED)
    for _ in range(2):
        for i in range(24):
            x, c = xs[i % 3], outs[i % 8]
            n = len(fake_gpu)
            ws.ops.matmul(x, w.T, out=c)
            got = _named(fake_gpu[n], {"x": x, "w": w, "c": c})
            op_plans.ENABLED = False
            try:
                ws.ops.matmul(x, w.T, out=c)            # the op's own code
            finally:
                op_plans.ENABLED = True
            assert got == _named(fake_gpu[n + 1], {"x": x, "w": w, "c": c})
    made = ENCODED[encoded:]
    assert REPLACED and all(d in made for d in REPLACED)
    # the op's own code encodes its maps in full (descriptors.descriptor); the plan's new maps
    # are all replacements of the recorded ones (x's and c's; w's never changes)
    assert {d.tensor_arg.data_ptr for d in REPLACED} <= {t.data_ptr() for t in xs + outs}


def test_plan_launches_wait_for_no_stub_load_and_take_the_stub_once_loaded(fake_gpu, monkeypatch):
    """A fresh process's plan runs before the C stub is loaded (a disk hit): its launches go from
    Python meanwhile, and once the load (started in the background, not waited for) is done the
    next call makes the C stubs and launches through them; every launch stays the op's own."""
    from fake_gpu import C_LAUNCHES
    from warpstage.jit import c_env
    a, w, c = _bf16(256, 128), _bf16(256, 128), _bf16(256, 256)
    names = {"a": a, "w": w, "c": c}
    ws.ops.matmul(a, w.T, out=c)                        # the op's code, recorded
    expected = _named(fake_gpu[-1], names)
    loading = [True]
    ready, started = c_env.stub_ready, []
    monkeypatch.setattr(c_env, "stub_ready", lambda start=True: started.append(start) or (
        False if loading[0] else ready(start)))
    monkeypatch.setattr(c_env, "_thread", object())     # "the load's thread runs"
    del C_LAUNCHES[:]
    for _ in range(2):                                  # the plan, stub not loaded: Python
        ws.ops.matmul(a, w.T, out=c)
        assert _named(fake_gpu[-1], names) == expected
    assert not C_LAUNCHES and True in started           # the load was started, not waited for
    loading[0] = False                                  # the load finished
    for _ in range(2):
        ws.ops.matmul(a, w.T, out=c)
        assert _named(fake_gpu[-1], names) == expected
    assert len(C_LAUNCHES) == 2                         # through the C stubs now
    plan = next(p for p in op_plans._PLANS.values() if p.bound)
    assert not plan.pending


def test_a_failing_guard_drops_the_plan(fake_gpu):
    a, w, c = _bf16(256, 128), _bf16(256, 128), _bf16(256, 256)
    ws.ops.matmul(a, w.T, out=c)
    ws.ops.matmul(a, w.T, out=c)
    (plan,) = [p for p in op_plans._PLANS.values() if p is not op_plans.NOT_PLANNED]
    from warpstage.frontend import guards
    # as if a global the trace read had been deleted since
    plan.guards = (((guards.__dict__, "_no_such_global", 1, 1, guards.GLOBAL),),)
    plan.checks = tuple(map(guards.guard_checker, plan.guards))
    n = op_plans.STATS["plans"]
    ws.ops.matmul(a, w.T, out=c)                     # the op's code, recorded anew
    assert op_plans.STATS["plans"] == n + 1 and plan not in op_plans._PLANS.values()


def test_stream_k_plans_launch_into_the_kept_workspace(fake_gpu):
    """A stream-K call is planned: its workspace and counters are the op's cached tensors
    (``op_plans.kept``), the same memory in the op's own launch and in the plan's."""
    a, w, c = _bf16(256, 128), _bf16(8448, 128), _bf16(256, 8448)     # 66 tiles of 128 x 256
    before = op_plans.STATS["plans"]
    _compare(fake_gpu, lambda: ws.ops.matmul(a, w.T, out=c, stream_k=True),
             {"a": a, "w": w, "c": c})
    assert op_plans.STATS["plans"] - before == 1
    ((_, _, ctas, tile), (workspace, counters)), = [
        (key, v) for key, v in matmul_host._FIXUP.items() if key[0] == "torch" and key[2] == 132]
    values = fake_gpu[-1][-1]
    assert workspace.data_ptr() in values and counters.data_ptr() in values
    assert tile in (128 * 128, 128 * 192, 128 * 256)   # the plan's tile (tile_m x tile_n)
    assert workspace.numel() == 2 * ctas * tile and not counters.any()


def test_an_out_over_an_input_is_the_ops_error_after_a_plan_exists(fake_gpu):
    """A plan is kept for one layout of ``out`` against the inputs: a later call with the same
    facts whose ``out`` is ``a`` itself, or a view over part of ``a``'s memory, runs the op's
    checks (an error), never the plan; out beside a in one buffer (interleaved columns) does
    not share an element, and keeps its plan."""
    a, w, c = _bf16(256, 256), _bf16(256, 256), _bf16(256, 256)
    ws.ops.matmul(a, w.T, out=c)
    ws.ops.matmul(a, w.T, out=c)                        # the plan runs
    with pytest.raises(ws.ArgumentError, match="out shares memory with a"):
        ws.ops.matmul(a, w.T, out=a)
    buf = _bf16(512, 256)
    with pytest.raises(ws.ArgumentError, match="out shares memory with b"):
        ws.ops.matmul(a, buf[:256].T, out=buf[128:384])
    wide = _bf16(256, 512)
    plans = op_plans.STATS["plans"]
    for _ in range(3):
        ws.ops.matmul(wide[:, :256], w.T, out=wide[:, 256:])
    assert op_plans.STATS["plans"] == plans + 1
