"""Kernel objects end to end in the simulator: the specialization cache, guards on globals,
recompile reasons, explain, compile from types, and user-facing errors."""
import traceback
import typing
import warnings

import numpy as np
import pytest

import warpstage as ws

pytestmark = pytest.mark.usefixtures("sim_target")
SCALE = 2.0


@ws.kernel
def scale_copy(x: ws.Tensor, out: ws.Tensor, n: ws.Int32, factor):
    i = ws.arch.block_idx()[0] * ws.arch.block_dim()[0] + ws.arch.thread_idx()[0]
    if i < n:
        out[i] = x[i] * factor * SCALE


def run(factor, n=100, dtype=np.float32):
    x = np.arange(n).astype(dtype)
    out = np.zeros_like(x)
    scale_copy[(n + 63) // 64, 64](x, out, n, factor)
    return x, out


def test_same_types_do_not_retrace_and_new_dynamic_value_is_used():
    run(1.0)
    before = scale_copy.trace_count
    x, out = run(3.0)                 # a new dynamic value: same specialization
    assert scale_copy.trace_count == before
    np.testing.assert_allclose(out, x * 3.0 * SCALE)


def test_static_change_recompiles():
    class Cfg:
        def __init__(self, k):
            self.k = k

    @ws.kernel
    def k(cfg, out: ws.Tensor):
        out[0] = ws.Float32(cfg.k)

    out = np.zeros(1, np.float32)
    cfg = Cfg(1)
    k[1, 32](cfg, out)
    assert out[0] == 1 and k.trace_count == 1
    k[1, 32](cfg, out)
    assert k.trace_count == 1
    cfg.k = 5                         # mutating a static config object recompiles
    k[1, 32](cfg, out)
    assert out[0] == 5 and k.trace_count == 2


def test_changed_global_recompiles():
    global SCALE
    run(1.0)
    before = scale_copy.trace_count
    SCALE = 10.0
    try:
        x, out = run(1.0)
        assert scale_copy.trace_count == before + 1
        np.testing.assert_allclose(out, x * 10.0)
    finally:
        SCALE = 2.0


def test_recompile_warning_names_the_changing_parameter():
    @ws.kernel(max_specializations=2)
    def k(out: ws.Tensor, v: ws.Static[int]):
        out[0] = ws.Int32(v)

    out = np.zeros(1, np.int32)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        for v in range(4):
            k[1, 32](out, v)
    hits = [w for w in rec if issubclass(w.category, ws.RecompileWarning)]
    msgs = [str(w.message) for w in hits]
    assert len(msgs) == 1
    assert hits[0].filename == __file__           # points at the launch in user code
    assert "specialized 3 times" in msgs[0] and "#2 vs #1: v: 0 -> 1" in msgs[0]


def test_recompile_reasons_compare_with_the_closest_specialization_and_say_what_changed():
    """The review's reproducer: each new specialization is compared with the earlier one that
    differs in the fewest parameters (not the last one compiled), and each changed parameter
    says what changed (a dtype, a static value, a tensor's alignment or strides)."""
    @ws.kernel(max_specializations=4)
    def k(x: ws.Tensor, alpha, steps: ws.Static[int]):
        i = ws.arch.thread_idx()[0]
        v = x[i]
        for _ in ws.static_range(steps):
            v = v * alpha
        x[i] = v

    a = np.ones(64, np.float32)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        k[1, 32](a, 2.0, 1)           # #1
        k[1, 32](a, 2, 1)             # #2: alpha Float32 -> Int32
        k[1, 32](a, 2.0, 1)           # a hit of #1
        k[1, 32](a, 2.0, 2)           # #3: only steps changed (vs #1; #2 differs in two)
        k[1, 32](a[1:], 2.0, 2)       # #4: base 4-byte aligned
        k[1, 32](a[::2], 2.0, 2)      # #5: stride 2
    hits = [w for w in rec if issubclass(w.category, ws.RecompileWarning)]
    assert len(hits) == 1 and hits[0].filename == __file__
    lines = str(hits[0].message).splitlines()
    assert "  #2 vs #1: alpha: Float32 -> Int32" in lines
    assert "  #3 vs #1: steps: 1 -> 2" in lines
    assert "  #4 vs #3: x: base alignment 16 -> 4 bytes" in lines
    assert "  #5 vs #3: x: dim 0 stride 1 -> 2 elements (no longer contiguous)" in lines


def test_recompile_reasons_name_a_descriptors_changed_field():
    from example_loader import load_example
    example = load_example("tma_copy")
    Transpose, transpose = example.Transpose, ws.kernel(example.transpose.fn)   # a fresh cache
    T = ws.tma.TensorDescriptor
    x = np.arange(64 * 64, dtype=np.float32).reshape(64, 64)
    out = np.zeros((64, 64), np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ws.RecompileWarning)
        for kw in ({}, {"oob_fill": "nan"}, {"l2_promotion": 256}):
            transpose[(2, 2), 256](Transpose(), T(x, (32, 32), **kw), T(out, (32, 32)))
    assert transpose._cache.reasons == ["vs #1: src: oob_fill 'zero' -> 'nan'",
                                            "vs #1: src: l2_promotion 128 -> 256"]


class NamedKey:
    """A static object whose __static_key__ is (name, value) pairs."""
    def __init__(self, scale, tile):
        self.scale, self.tile = scale, tile

    def __static_key__(self):
        return (("scale", self.scale), ("tile", self.tile))


class FlatKey(NamedKey):
    def __static_key__(self):
        return (self.scale, self.tile)

    def __repr__(self):
        return "FlatKey()"


class Box:
    """A value-protocol object (a dynamic leaf) with a (name, value) pairs static key."""
    def __init__(self, v, scale):
        self.v, self.scale = v, scale

    def __extract_values__(self):
        return [self.v]

    def __new_from_values__(self, values):
        return Box(values[0], self.scale)

    def __static_key__(self):
        return (("scale", self.scale),)


def test_recompile_reasons_name_the_fields_of_named_static_keys():
    """A __static_key__ of (name, value) pairs (static or in a value-protocol composite) and an
    object's attributes (its structural key) name the changed fields; any other key falls back
    to the object's repr."""
    @ws.kernel
    def k(cfg, out: ws.Tensor):
        out[0] = ws.Float32(cfg.scale * cfg.tile)

    @ws.kernel
    def kb(b, out: ws.Tensor):
        out[0] = ws.Float32(b.v) * b.scale

    class Plain:
        def __init__(self, scale, tile):
            self.scale, self.tile = scale, tile

    out = np.zeros(1, np.float32)
    for kern, cls in ((k, NamedKey), (ws.kernel(k.fn), Plain)):
        for scale, tile in ((0.125, 64), (0.2, 64), (0.2, 128), (0.5, 32)):
            kern[1, 32](cls(scale, tile), out)
            assert out[0] == np.float32(scale * tile)
        assert kern._cache.reasons == ["vs #1: cfg: scale 0.125 -> 0.2",
                                           "vs #2: cfg: tile 64 -> 128",
                                           "vs #3: cfg: scale 0.2 -> 0.5, tile 128 -> 32"]
    flat = ws.kernel(k.fn)
    flat[1, 32](FlatKey(0.125, 64), out)
    flat[1, 32](FlatKey(0.2, 64), out)
    assert flat._cache.reasons == ["vs #1: cfg: a static field of FlatKey FlatKey() changed"]
    kb[1, 32](Box(3.0, 0.5), out)
    kb[1, 32](Box(3.0, 2.0), out)
    assert out[0] == 6.0
    assert kb._cache.reasons == ["vs #1: b: scale 0.5 -> 2.0"]


@ws.kernel
def fails_in_an_if(out: ws.Tensor):
    if ws.arch.thread_idx()[0] == 0:
        out[0] = {}["missing"]


def test_an_error_inside_an_if_shows_only_the_users_frame():
    """The control-flow rewrite runs an `if` body as a nested function: its frame is named like
    the kernel and the frame of its call site (the `if` statement) is not shown."""
    with pytest.raises(KeyError) as ei:
        fails_in_an_if[1, 32](np.zeros(1, np.float32))
    frames = traceback.extract_tb(ei.value.__traceback__)
    user = [f for f in frames if f.filename == __file__]
    assert [f.name for f in user] == ["test_an_error_inside_an_if_shows_only_the_users_frame",
                                      "fails_in_an_if"]
    assert user[-1].line == 'out[0] = {}["missing"]'
    assert user[-1].lineno == fails_in_an_if.fn.__code__.co_firstlineno + 3
    assert not any(f.name.startswith("__ws_") for f in frames)


def test_explain_and_compile_from_types():
    text = ws.explain(scale_copy, ws.Tensor[ws.Float16, 1], ws.Tensor[ws.Float16, 1], ws.Int32,
                      ws.Float32, print_table=False)
    assert "Tensor[Float16, 1]" in text and "x.data:" not in text and "data:!ptr<f16, global>" in text
    ck = ws.compile(scale_copy, ws.Tensor[ws.Float16, 1], ws.Tensor[ws.Float16, 1], ws.Int32, 1.5)
    assert ".target sm_90a" in ck.ptx and ".entry scale_copy" in ck.ptx
    assert "scf.if" in ck.ir and "f16" in ck.llvm_ir.replace("half", "f16")
    if ck.cubin is not None:
        assert ck.cubin[:4] == b"\x7fELF" and ck.registers > 0


def test_binding_time_error_points_at_user_line():
    @ws.kernel
    def bad(out: ws.Tensor, n: ws.Int32):
        ws.arch.barrier_sync(1, n)      # the thread count must be static

    with pytest.raises(ws.BindingTimeError) as ei:
        bad[1, 32](np.zeros(1, np.float32), 32)
    msg = str(ei.value)
    assert "static (compile-time) value is needed" in msg
    assert "parameter 'n'" in msg and "ws.Static" in msg
    assert "ws.arch.barrier_sync(1, n)" in msg and "^" in msg
    frames = traceback.extract_tb(ei.value.__traceback__)
    assert not any("/warpstage/frontend/" in f.filename or "/warpstage/lang/" in f.filename
                   for f in frames), [f.filename for f in frames]


def test_argument_errors():
    x = np.zeros(10, np.float32)
    with pytest.raises(ws.ArgumentError, match=r"(?s)'n' is annotated Int32 but the int 4294967296"):
        scale_copy[1, 32](x, x, 2 ** 32, 1.0)
    with pytest.raises(ws.LaunchError, match="block"):
        scale_copy[1, (32, 0)](x, x, 10, 1.0)
    with pytest.raises(ws.ArgumentError, match=r"(?s)scale_copy\(x: ws.Tensor, out: ws.Tensor, "
                       r"n: ws.Int32, factor\) was called with no value for 'n', 'factor'.*"
                       r"Fix: scale_copy\[grid, block\]\(x, out, n, factor\)"):
        scale_copy[1, 32](x, x)


def test_device_function_from_host_is_an_error():
    @ws.jit
    def helper(x):
        return x + 1

    with pytest.raises(ws.CompilationError, match="called from host code"):
        helper(1)


def test_composite_arguments_launch_twice():
    @ws.kernel
    def k(t, pair, out: ws.Tensor):
        out[0] = t[0] * 1.0 + t[1]
        out[1] = ws.Float32(pair["b"])

    out = np.zeros(2, np.float32)
    k[1, 32]((1.5, 2), {"b": 3}, out)
    k[1, 32]((2.5, 4), {"b": 5}, out)            # same skeleton: a cache hit, new leaves
    np.testing.assert_array_equal(out, [6.5, 5.0])
    assert k.trace_count == 1


def test_numpy_scalars_are_dynamic_with_their_dtype():
    @ws.kernel
    def k(out: ws.Tensor, v):
        out[0] = ws.Float32(v)

    out = np.zeros(1, np.float32)
    for v in (np.int64(3), np.int64(4)):
        k[1, 32](out, v)
    assert out[0] == 4 and k.trace_count == 1
    assert "Int64" in ws.explain(k, out, np.int64(1), print_table=False)
    k[1, 32](out, np.float16(1.5))
    assert out[0] == 1.5


def test_float_errors():
    x = np.zeros(4, np.float32)
    with pytest.raises(ws.ArgumentError, match=r"(?s)the float 1e\+40 overflows Float32.*ws.Float64"):
        scale_copy[1, 32](x, x, 4, 1e40)

    @ws.kernel
    def k(out: ws.Tensor):
        out[1.5] = 0.0

    with pytest.raises(ws.OperandError, match=r"(?s)tensor index 0: expected an integer, got float "
                       r"1.5.*Fix: convert it with int"):
        k[1, 32](x)


def test_recursive_device_function_with_static_argument():
    @ws.jit
    def fact(n):
        if n <= 1:
            return 1
        return n * fact(n - 1)

    @ws.kernel
    def k(out: ws.Tensor):
        out[0] = ws.Int32(fact(5))

    out = np.zeros(1, np.int32)
    k[1, 32](out)
    assert out[0] == 120


def test_same_named_storage_classes_with_different_layouts_do_not_share_a_kernel():
    class Cfg:
        def __init__(self, n):
            self.Storage = ws.smem.make_storage("S", a=ws.smem.Array[ws.Int32, (n,)])

    @ws.kernel
    def k(cfg, out: ws.Tensor):
        s = ws.smem.allocate(cfg.Storage)
        out[0] = len(s.a)

    out = np.zeros(1, np.int32)
    k[1, 32](Cfg(4), out)
    assert out[0] == 4
    k[1, 32](Cfg(9), out)
    assert out[0] == 9


def test_device_functions_inline_unless_asked_not_to():
    @ws.jit
    def inlined(x):
        return x + 1

    @ws.jit(inline=False)
    def outlined(x):
        return x + 2

    @ws.kernel
    def k(out: ws.Tensor, v: ws.Int32):
        out[0] = inlined(v) + outlined(v)

    ptx = ws.compile(k, ws.Tensor[ws.Int32, 1], ws.Int32).ptx
    assert ".func" in ptx and "outlined" in ptx and "inlined" not in ptx


def test_cluster_must_divide_the_grid():
    x = np.zeros(4, np.float32)
    with pytest.raises(ws.LaunchError, match=r"grid \(3, 1, 1\) is not a whole number of clusters \(2, 1, 1\)"):
        scale_copy(x, x, 4, 1.0, grid=3, block=32, cluster=2)


def test_overflow_is_checked_on_cache_hits_too():
    x = np.zeros(4, np.float32)
    scale_copy[1, 32](x, x, 4, 1.0)
    with pytest.raises(ws.ArgumentError, match="overflows Float32"):
        scale_copy[1, 32](x, x, 4, 1e40)
    with pytest.raises(ws.ArgumentError, match=r"(?s)overflows it.*Fix"):
        scale_copy[1, 32](x, x, 2 ** 40, 1.0)


def test_attribute_names_are_not_guarded_as_globals():
    @ws.struct
    class S:
        n: ws.Int32

    @ws.kernel
    def k(a, o: ws.Tensor):
        o[0] = ws.Float32(a.n)

    o = np.zeros(1, np.float32)
    g = globals()
    try:
        for i in range(3):
            g["n"] = i                    # an unrelated global that shares the attribute's name
            k[1, 32](S(5), o)
    finally:
        g.pop("n", None)
    assert k.trace_count == 1 and o[0] == 5


def test_device_function_changes_arguments_in_place():
    @ws.struct
    class St:
        stages: ws.Static[int]
        index: ws.Int32
        phase: ws.Int32

    @ws.jit
    def adv(s):
        s.index += 1
        if s.index == s.stages:
            s.index = 0
            s.phase ^= 1

    @ws.jit
    def bump(acc, v):
        acc[0] = acc[0] + v

    @ws.kernel
    def k(out: ws.Tensor, n: ws.Int32):
        s = St(3, 2, 1)
        adv(s)
        out[0] = s.index
        out[1] = s.phase
        acc = [n]
        bump(acc, 5)
        out[2] = acc[0]
        t = St(3, 0, 0)
        for _ in range(n):
            adv(t)
        out[3] = t.index
        out[4] = t.phase

    out = np.zeros(5, np.int32)
    k[1, 32](out, 7)
    np.testing.assert_array_equal(out, [0, 0, 12, 1, 0])


class _TensorAndCount(typing.NamedTuple):
    x: ws.Tensor
    n: ws.Int32


@ws.struct
class _StructTensorAndCount:
    x: ws.Tensor
    n: ws.Int32


@ws.kernel
def _fill_first(a):
    if ws.arch.thread_idx()[0] < a.n:
        a.x[0] = 1.0


@pytest.mark.parametrize("make", [_TensorAndCount, _StructTensorAndCount], ids=["namedtuple", "struct"])
def test_compile_from_types_inside_composites(make):
    ck = ws.compile(_fill_first, make(ws.Tensor[ws.Float32, 1], ws.Int32))
    example = ws.compile(_fill_first, make(np.zeros(4, np.float32), 3))
    assert ck.ptx == example.ptx


def test_compile_refuses_a_block_no_launch_could_use():
    @ws.kernel
    def one(x: ws.Tensor):
        x[ws.arch.thread_idx()[0]] = 1.0
    for block in (2048, (64, 64, 1), (1, 1, 128)):
        with pytest.raises(ws.LaunchError, match=r"ws.compile: block .* allows at most 1024"):
            ws.compile(one, ws.Tensor[ws.Float32, 1], block=block)
    assert ws.compile(one, ws.Tensor[ws.Float32, 1], block=(1024, 1, 1)).ptx


@ws.kernel
def _tensor_count_static(x: ws.Tensor, n: ws.Int32, s: ws.Static[int]):
    pass


@pytest.mark.parametrize("args, param, got", [
    ((ws.Int32, ws.Int32, 3), "x", "the type ws.Int32"),
    ((ws.Tensor[ws.Float32, 1], ws.Tensor[ws.Float32, 1], 3), "n", "the type ws.Tensor[Float32, 1]"),
    ((ws.Tensor[ws.Float32, 1], ws.Float32, 3), "n", "the type ws.Float32"),
    ((ws.Tensor[ws.Float32, 1], ws.Int32, ws.Int32), "s", "the type ws.Int32"),
    ((ws.Tensor[ws.Float32, 1], ws.Int64, 3), "n", "the type ws.Int64")])
def test_compile_from_types_names_the_type_it_got(args, param, got):
    """A placeholder stands for a type: errors show the type, not the stand-in's value (Int32(0),
    a _FakeTensor address, the float 0.0)."""
    with pytest.raises(ws.ArgumentError) as info:
        ws.compile(_tensor_count_static, *args)
    msg = str(info.value)
    assert f"parameter '{param}'" in msg and f"got {got}." in msg, msg
    assert "0x" not in msg and "(0)" not in msg and "0.0" not in msg and "Fix:" in msg, msg
