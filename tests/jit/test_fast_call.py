"""The generated call path (jit/fast_call.py): a cache hit
launches exactly what the full path launches, and every check of the full path still recompiles
or raises.

These run without a GPU (tests/fake_gpu.py): CPU torch tensors pose as tensors on cuda:0, the
target is forced to 'cuda', kernels are traced but not assembled, and each launch is recorded as
(compiled key, grid, block, smem, stream, the packed parameter values). The reference for every
call is a twin kernel with the generated path switched off, i.e. the per-parameter binders and
key lookup that existed before.
"""
import sys

import numpy as np
import pytest

import warpstage as ws
from warpstage.jit import fast_call
from fake_gpu import C_LAUNCHES, ENCODED, RAW_STREAM, fake_encode, install
from fake_gpu import compare_call_by_call, key_of as _key_of, run as _run, twin as _twin

torch = pytest.importorskip("torch")


@pytest.fixture
def fake_gpu(monkeypatch):
    """CPU torch tensors on a pretend cuda:0; returns the list of recorded launches."""
    return install(monkeypatch, torch)


def _mixed(x: ws.Tensor, y, n: ws.Int32, s: ws.Static[int]):
    pass                                                  # tensors of any rank: only the ABI matters


def _pool():
    base = torch.arange(64, dtype=torch.float32)
    half = torch.arange(64, dtype=torch.float16)
    grid2 = torch.zeros(6, 8)
    square = torch.zeros(8, 8)
    return {                          # pairs alike but for one key part: alignment, strides
        "x": [base, base[1:], base[:63], base[::2], base[:32], half, grid2, grid2.t(),
              grid2[:, 1:5], square, square.t()],
        "y": [3, 2 ** 40, 1.5, True, None, base[4:], base[3:63], grid2.t(), -7],
        "n": [5, 0, 2 ** 31 - 1],
        "s": [1, 2],
    }


@pytest.mark.filterwarnings("ignore::warpstage.jit.kernel.RecompileWarning")
@pytest.mark.parametrize("seed", range(6))
def test_every_call_launches_what_the_full_path_launches(fake_gpu, seed):
    configs = [((2, 1, 1), (32, 1, 1)), (3, 64)]
    c_launches = compare_call_by_call(_mixed, _pool(), configs, fake_gpu, seed, calls=40)
    assert c_launches > 10, "the C path (jit/c_call.py) took few calls"


def _sig_count(kern):
    return len(kern._fast.memo)


def test_a_repeated_call_hits_the_memo_and_does_not_retrace(fake_gpu):
    k = ws.kernel(_mixed)
    x = torch.zeros(16)
    for _ in range(3):
        k[1, 32](x, 4, 8, 1)
    assert k.trace_count == 1 and _sig_count(k) == 1
    misses = []
    ns = k._fast.namespace
    ns["_miss"] = lambda *a: misses.append(a) or k._fast.miss(*a)
    k[1, 32](x, 4, 8, 1)
    assert misses == [] and k.trace_count == 1


@pytest.mark.parametrize("change", ["dtype", "alignment", "contiguity", "rank", "index width", "static",
                                    "auto int width", "auto type"])
def test_a_changed_key_recompiles(fake_gpu, change):
    k = ws.kernel(_mixed)
    x = torch.zeros(64)
    args = [x, 4, 8, 1]
    changed = list(args)
    if change == "dtype":
        changed[0] = x.to(torch.float16)
    elif change == "alignment":                           # the same shape and strides
        args[0], changed[0] = x[:63], x[1:]               # base no longer 16-byte aligned
    elif change == "contiguity":                          # the same shape
        args[0], changed[0] = x.view(8, 8), x.view(8, 8).t()
    elif change == "index width":                         # the same strides: only the extent
        wide = torch.empty(2 ** 31 + 8, device="meta")    # no memory behind it
        args[0], changed[0] = wide[:8], wide
    elif change == "rank":
        changed[0] = x.view(8, 8)
    elif change == "static":
        changed[3] = 2
    elif change == "auto int width":
        changed[1] = 2 ** 40
    else:
        changed[1] = 4.0
    k[1, 32](*args)
    k[1, 32](*args)
    k[1, 32](*changed)
    assert k.trace_count == 2
    full = _twin(_mixed)
    assert _run(k, fake_gpu, (1, 32), changed) == _run(full, fake_gpu, (1, 32), changed)


SCALE = 2.0


def _guarded(x: ws.Tensor):
    x[0] = x[0] * SCALE


def test_a_changed_global_recompiles(fake_gpu):
    global SCALE
    k = ws.kernel(_guarded)
    x = torch.zeros(4)
    k[1, 32](x)
    k[1, 32](x)
    first = fake_gpu[-1][0]
    assert k.trace_count == 1 and _sig_count(k) == 1
    assert len(C_LAUNCHES) == 1                          # the second call: the C path's
    try:
        SCALE = 3.0
        k[1, 32](x)                                       # its entry dropped before the stub
        assert k.trace_count == 2 and fake_gpu[-1][0] is not first and len(C_LAUNCHES) == 1
        k[1, 32](x)                                       # the new entry is memoized
        assert k.trace_count == 2
        assert len(C_LAUNCHES) == 2 and fake_gpu[-1][0] is not first
    finally:
        SCALE = 2.0
    k[1, 32](x)
    assert k.trace_count == 3


@pytest.mark.parametrize("device, message", [(-1, "CPU torch tensor")])
def test_a_tensor_in_host_memory_raises_after_a_hit(fake_gpu, device, message):
    k = ws.kernel(_mixed)        # tensors on another GPU: tests/frontend/test_fast_call_devices.py
    x = torch.zeros(16)
    k[1, 32](x, 1, 2, 1)
    other = torch.zeros(16)
    other._test_device = device
    with pytest.raises(ws.ArgumentError, match=message):
        k[1, 32](other, 1, 2, 1)
    with pytest.raises(ws.ArgumentError, match=message):
        k[1, 32](x, other, 2, 1)                          # the auto parameter too
    assert _sig_count(k) == 1


def test_bad_scalars_raise_as_on_the_full_path(fake_gpu):
    k = ws.kernel(_mixed)
    x = torch.zeros(16)
    k[1, 32](x, 1, 2, 1)
    for bad, message in [(2.5, "got the float 2.5"), (2 ** 31, "overflows"), ("2", "got a str")]:
        for kern in (k, _twin(_mixed)):
            with pytest.raises(ws.ArgumentError, match=message):
                kern[1, 32](x, 1, bad, 1)
    with pytest.raises(ws.ArgumentError, match="does not fit in 64 bits"):
        k[1, 32](x, 2 ** 70, 2, 1)


def test_streams(fake_gpu):
    k = ws.kernel(_mixed)
    x = torch.zeros(16)
    k[1, 32](x, 1, 2, 1)
    k[1, 32](x, 1, 2, 1)
    assert fake_gpu[-1][4] == RAW_STREAM                  # torch's current stream on cuda:0
    k[1, 32, 0, 77](x, 1, 2, 1)
    assert fake_gpu[-1][4] == 77
    k[1, 32, 0, type("S", (), {"cuda_stream": 0})()](x, 1, 2, 1)
    assert fake_gpu[-1][4] == 0                           # torch's default stream is 0
    with pytest.raises(ws.ArgumentError, match="stream= must be"):
        k[1, 32, 0, "s"](x, 1, 2, 1)

    def scalars_only(n, m: ws.Float32):
        pass
    s = ws.kernel(scalars_only)
    s[1, 32](3, 1.0)
    s[1, 32](3, 1.0)
    assert fake_gpu[-1][4] == 0 and _sig_count(s) == 1    # no torch tensor: the legacy stream


def test_smem_is_the_larger_of_the_launch_and_the_kernel(fake_gpu):
    k = ws.kernel(_mixed)
    x = torch.zeros(16)
    for smem in (0, 4096, 0):
        k[1, 32, smem](x, 1, 2, 1)
        k[1, 32, smem](x, 1, 2, 1)
        assert fake_gpu[-1][3] == smem


def test_other_calls_take_the_full_path(fake_gpu):
    k = ws.kernel(_mixed)
    x = torch.zeros(16)
    k[1, 32](x, 1, 2, 1)
    k[1, 32](x=x, y=1, n=2, s=1)                          # keywords
    k[1, 32](x, np.int32(1), 2, 1)                        # a numpy scalar
    k[1, 32](x, (1, 2), 2, 1)                             # a composite
    k[1, 32](x, 1, ws.Int32(2), 1)                        # a host scalar
    assert _sig_count(k) == 1
    assert all(launch[5][:2] == (x.data_ptr(), 16) for launch in fake_gpu)


def test_a_memo_entry_is_stored_only_when_the_generated_code_agrees(fake_gpu, monkeypatch):
    monkeypatch.setattr(fast_call, "tensor_tails", lambda kinds, args, t: [(16, 9), None])
    k = ws.kernel(_mixed)
    x = torch.zeros(16)
    for _ in range(3):
        k[1, 32](x, 1, 2, 1)
    assert _sig_count(k) == 0                             # the probe disagreed: nothing stored
    assert all(launch[5] == (x.data_ptr(), 16, 1, 2) for launch in fake_gpu)


def test_torch_imported_after_the_first_call(fake_gpu, monkeypatch):
    k = ws.kernel(_mixed)
    monkeypatch.delitem(sys.modules, "torch")
    k._make_launch_type()
    assert k._fast.torch is None
    monkeypatch.setitem(sys.modules, "torch", torch)
    x = torch.zeros(16)
    k[1, 32](x, 1, 2, 1)                                  # a miss that notices torch
    k[1, 32](x, 1, 2, 1)
    k[1, 32](x, 1, 2, 1)
    assert k._fast.torch is torch and _sig_count(k) == 1


def test_the_simulator_target_never_uses_the_memo():
    def add_one(x: ws.Tensor, n: ws.Int32):
        i = ws.arch.thread_idx()[0]
        if i < n:
            x[i] = x[i] + 1.0
    k = ws.kernel(add_one)
    x = np.zeros(8, np.float32)
    ws.set_target("sim")
    try:
        k[1, 32](x, 8)
        k[1, 32](x, 8)
    finally:
        ws.set_target(None)
    np.testing.assert_array_equal(x, np.full(8, 2.0, np.float32))
    assert k._fast.memo == {}


@pytest.mark.parametrize("kinds", [[], ["tensor"], ["auto"], ["static"], [("scalar", 0, 1, False)],
                                   ["tensor", "auto", "static", ("scalar", -1.0, 1.0, True)] * 3])
def test_generated_source_compiles(kinds):
    source = fast_call.call_source(kinds, "k")
    compile(source, "<test>", "exec")
    assert source.count("def ") == 3            # fast_call, fast_values, fast_lookup


def test_kinds():
    assert fast_call.kind_of(ws.Tensor, False) == "tensor"
    assert fast_call.kind_of(ws.Tensor[ws.Float16, 2], False) == "tensor"
    assert fast_call.kind_of(None, False) == "auto"
    assert fast_call.kind_of(None, True) == "static"
    assert fast_call.kind_of(ws.Static[int], False) == "static"
    assert fast_call.kind_of(ws.Int32, False) == ("scalar", -2 ** 31, 2 ** 31 - 1, False)
    assert fast_call.kind_of(ws.Float16, False)[3] is True
    assert fast_call.kind_of(ws.Pointer[ws.Float32], False) is None


def test_threads_sharing_one_launch_object(fake_gpu, monkeypatch):
    import threading
    monkeypatch.setattr(sys, "getswitchinterval", sys.getswitchinterval)
    sys.setswitchinterval(1e-6)                           # interleave the threads finely
    k = ws.kernel(_mixed)
    launch = k[1, 32]
    tensors = [torch.zeros(64), torch.zeros(8, 8).t(), torch.zeros(65)[1:],
               torch.zeros(64, dtype=torch.float16)]     # four call signatures, four addresses
    for x in tensors:
        launch(x, 1, 2, 1)

    def work(j):                                          # the signature changes every call
        for i in range(300):
            launch(tensors[(i + j) % 4], 1, 2, 1)
    threads = [threading.Thread(target=work, args=(j,)) for j in range(4)]
    del fake_gpu[:], C_LAUNCHES[:]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    got = [(_key_of(k, ck), *rest) for ck, *rest in fake_gpu]
    assert len(got) == 4 * 300 and len(C_LAUNCHES) > 300  # most of them launched by the C stub
    full = _twin(_mixed)
    expected = {x.data_ptr(): _run(full, fake_gpu, (1, 32), (x, 1, 2, 1)) for x in tensors}
    for launched in got:
        assert launched == expected[launched[5][0]]


# -- TMA descriptor arguments (ws.tma.TensorDescriptor) -------------------------------------------

def _tma(d, y, n: ws.Int32):
    pass                                                  # only the ABI matters


def _descriptor_pool():
    """Descriptors alike but for one key part, several on other tensors of the same geometry."""
    D = ws.tma.TensorDescriptor
    a, b = torch.zeros(32, 64), torch.zeros(32, 64)       # two tensors, one geometry
    big = torch.zeros(96, 128)                            # the same key: sizes are dynamic
    half = torch.zeros(32, 64, dtype=torch.float16)
    cube = torch.zeros(4, 8, 64)
    return [D(a, (8, 32)), D(b, (8, 32)), D(big, (8, 32)), D(big[:, 64:], (8, 32)),
            D(a, (16, 32)), D(a, (8, 16), swizzle=64), D(a, (8, 32), swizzle=0),
            D(half, (8, 64)), D(cube, (2, 8, 32)), D(a, (8, 32), element_strides=(2, 1)),
            D(a, (8, 32), oob_fill="nan"), D(a, (8, 32), l2_promotion=256)]


@pytest.mark.filterwarnings("ignore::warpstage.jit.kernel.RecompileWarning")
@pytest.mark.parametrize("seed", range(4))
def test_descriptor_calls_launch_what_the_full_path_launches(fake_gpu, seed):
    rng = np.random.default_rng(seed)
    fast, full = ws.kernel(_tma), _twin(_tma)
    descs = _descriptor_pool()
    others = [torch.zeros(64), 7, 2.5, None, torch.zeros(8, 8).t()]
    for _ in range(60):
        d = descs[rng.integers(len(descs))]
        y = (descs + others)[rng.integers(len(descs) + len(others))]
        if rng.integers(4) == 0:
            d, y = y, d
        args = (d, y, int(rng.integers(100)))
        assert _run(fast, fake_gpu, (2, 128), args) == _run(full, fake_gpu, (2, 128), args), args
    assert fast.trace_count == full.trace_count
    assert fast._fast.memo, "the generated path never took a call"


@pytest.mark.parametrize("change", ["dtype", "box", "swizzle", "rank", "element strides",
                                    "oob fill", "l2 promotion", "a tensor instead"])
def test_a_changed_descriptor_key_recompiles(fake_gpu, change):
    D = ws.tma.TensorDescriptor
    x = torch.zeros(32, 64)
    changed = {"dtype": lambda: D(x.half(), (8, 32)), "box": lambda: D(x, (4, 32)),
               "swizzle": lambda: D(x, (8, 32), swizzle=0),
               "rank": lambda: D(x.view(2, 16, 64), (1, 8, 32)),
               "element strides": lambda: D(x, (8, 32), element_strides=(2, 1)),
               "oob fill": lambda: D(x, (8, 32), oob_fill="nan"),
               "l2 promotion": lambda: D(x, (8, 32), l2_promotion=64),
               "a tensor instead": lambda: x}[change]()
    k = ws.kernel(_tma)
    args = [D(x, (8, 32)), 1, 2]
    k[1, 128](*args)
    k[1, 128](*args)
    assert k.trace_count == 1 and _sig_count(k) == 1
    first = fake_gpu[-1][0]
    k[1, 128](changed, 1, 2)
    assert k.trace_count == 2 and fake_gpu[-1][0] is not first
    full = _twin(_tma)
    args2 = (changed, 1, 2)
    assert _run(k, fake_gpu, (1, 128), args2) == _run(full, fake_gpu, (1, 128), args2)
    k[1, 128](*args)                                      # back to the first: its memo entry
    assert fake_gpu[-1][0] is first and k.trace_count == 2


def test_a_new_tensor_with_the_same_geometry_reuses_the_kernel_with_its_own_map(fake_gpu):
    D = ws.tma.TensorDescriptor
    k = ws.kernel(_tma)
    x, y = torch.zeros(32, 64), torch.zeros(100, 64)      # other sizes: the same key
    dx = D(x, (8, 32))
    k[1, 128](dx, 3, 4)
    k[1, 128](dx, 3, 4)
    misses = []
    ns = k._fast.namespace
    ns["_miss"] = lambda *a: misses.append(a) or k._fast.miss(*a)
    for tensor in (y, x, y[4:]):
        d = D(tensor, (8, 32))
        k[1, 128](d, 3, 4)
        assert fake_gpu[-1][5] == (fake_encode(d), 3, 4)  # this descriptor's map, not dx's
        k[1, 128](d, 3, 4)
        assert fake_gpu[-1][5][0] is d._encoded           # encoded once, kept in the descriptor
    assert misses == [] and k.trace_count == 1 and _sig_count(k) == 1
    assert sum(e is dx for e in ENCODED) == 1


def test_descriptor_keys_of_the_binders_match_classify(fake_gpu):
    from warpstage.jit.kernel import _tensor_adapter
    from warpstage.frontend.kinds import make_binder
    from warpstage.frontend.binding_time import classify
    for d in _descriptor_pool():
        for _ in range(2):                                # the second time from the descriptor
            keys, leaves = [], []
            assert make_binder(None, False, _tensor_adapter)(d, keys, leaves)
            spec = classify(d, None, "d", tensor_adapter=_tensor_adapter)
            full = []
            spec.host_leaves(d, full)
            assert keys == [spec.key] and leaves == full == [d.tensormap]


@pytest.mark.parametrize("device, message", [(-1, "describes a cpu tensor")])
def test_a_descriptor_in_host_memory_raises_after_a_hit(fake_gpu, device, message):
    D = ws.tma.TensorDescriptor
    k = ws.kernel(_tma)
    x = torch.zeros(32, 64)
    k[1, 128](D(x, (8, 32)), 1, 2)
    k[1, 128](D(x, (8, 32)), 1, 2)
    other = torch.zeros(32, 64)
    other._test_device = device
    d = D(other, (8, 32))
    for kern in (k, _twin(_tma)):
        with pytest.raises(ws.ArgumentError, match=message):
            kern[1, 128](d, 1, 2)
        with pytest.raises(ws.ArgumentError, match=message):
            kern[1, 128](D(x, (8, 32)), d, 2)
    assert _sig_count(k) == 1


def test_a_kernel_whose_only_tensors_are_in_descriptors_runs_on_torchs_stream(fake_gpu):
    D = ws.tma.TensorDescriptor
    d = D(torch.zeros(32, 64), (8, 32))
    fast = ws.kernel(_tma)
    for kern in (fast, _twin(_tma)):                      # the generated path, the full path
        for _ in range(3):
            kern[1, 128](d, 5, 6)
            assert fake_gpu[-1][4] == RAW_STREAM          # torch's current stream on cuda:0
        kern[1, 128, 0, 77](d, 5, 6)
        assert fake_gpu[-1][4] == 77
    assert _sig_count(fast) == 1


def test_a_descriptor_annotation_reads_like_no_annotation(fake_gpu):
    def annotated(d: ws.tma.TensorDescriptor, y, n: ws.Int32):
        pass
    assert fast_call.kind_of(ws.tma.TensorDescriptor, False) == "auto"
    k, full = ws.kernel(annotated), _twin(annotated)
    d = ws.tma.TensorDescriptor(torch.zeros(32, 64), (8, 32))
    for args in [(d, d, 1), (d, 3, 1), (d, 3, 1), (torch.zeros(4), 3, 1)]:
        assert _run(k, fake_gpu, (1, 32), args) == _run(full, fake_gpu, (1, 32), args)
    assert _sig_count(k) == 3


def _inner(x: ws.Tensor, y, n: ws.Int32, s: ws.Static[int]):
    pass


_inner_kernel = ws.kernel(_inner)


def _launches_inner(x: ws.Tensor, y, n: ws.Int32, s: ws.Static[int]):
    _inner_kernel[1, 32]                    # the configuration the host launched last


def test_the_cached_launch_object_is_refused_inside_a_trace(fake_gpu):
    x = torch.zeros(16)
    _inner_kernel[1, 32](x, 1, 2, 1)        # kern[1, 32] now returns its cached launch object
    with pytest.raises(ws.CompilationError, match="kernels cannot launch kernels"):
        ws.kernel(_launches_inner)[1, 32](x, 1, 2, 1)
