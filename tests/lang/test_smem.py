"""ws.smem storage classes and views, mbarriers, cp.async and atomics from kernel code, run in the
simulator: layouts, the dynamic shared memory size, indexing, the value protocol, a multi-stage
producer/consumer pipeline, deadlock reports and operand errors."""
import inspect

import numpy as np
import pytest

import warpstage as ws

from example_loader import load_example

pipeline = load_example("mbarrier_pipeline")


def line_of(marker: str) -> int:
    """The line of this file that contains ``marker`` (after the marker's own definition)."""
    lines = inspect.getsource(inspect.getmodule(line_of)).splitlines()
    return next(i + 1 for i, ln in enumerate(lines) if marker in ln and "line_of(" not in ln)


# -- layouts -----------------------------------------------------------------------------------
class Inner:
    x: ws.smem.Array[ws.Float16, (3,)]            # 6 bytes, 16-aligned
    bars: ws.smem.MbarrierArray[2]                # 16 bytes at 8


class Outer:
    a: ws.smem.Array[ws.Int8, (5,), 1]            # 0..5
    inner: Inner                                  # 16..48 (Inner: 32 bytes, align 16)
    b: ws.smem.Array[ws.Float32, (2, 3), 128]     # 128..152


def test_layout_offsets_sizes_and_alignment():
    inner = ws.smem.layout_of(Inner)
    assert [(n, o) for n, _, o in inner.fields] == [("x", 0), ("bars", 8)]
    assert (inner.size, inner.align) == (32, 16)
    outer = ws.smem.layout_of(Outer)
    assert [(n, o) for n, _, o in outer.fields] == [("a", 0), ("inner", 16), ("b", 128)]
    assert (outer.size, outer.align) == (256, 128)
    assert ws.smem.size_of(Outer) == 256
    assert ws.smem.size_of(ws.smem.MbarrierArray[3]) == 24
    assert ws.smem.Array[ws.Float32, 8].align == 16 and ws.smem.Array[ws.Float64, 2, 1].align == 8


def test_make_storage_and_decorator():
    S = ws.smem.make_storage("S", q=ws.smem.Array[ws.BFloat16, (64, 64), 128],
                             bars=ws.smem.MbarrierArray[4])
    assert ws.smem.size_of(S) == 64 * 64 * 2 + 128   # 32 bytes of mbarriers, padded to 128
    assert [n for n, _, _ in ws.smem.layout_of(S).fields] == ["q", "bars"]

    @ws.smem.storage
    class T:
        v: ws.smem.Array[ws.Int32, 4]
    assert T.__ws_smem_layout__.size == 16


@pytest.mark.parametrize("make, message", [
    (lambda: ws.smem.make_storage("Bad", x=int), "shared storage field Bad.x: expected "
                                                 "ws.smem.Array[dtype, shape(, align)]"),
    (lambda: ws.smem.make_storage("Bad", x=ws.Float32), "got <class 'warpstage.lang.scalars.Float32'>"),
    (lambda: ws.smem.make_storage("Empty"), "shared storage class Empty: expected at least one field"),
    (lambda: ws.smem.Array[ws.Float32, (0, 4)], "ws.smem.Array's shape: expected positive ints"),
    (lambda: ws.smem.Array[float, 4], "ws.smem.Array's dtype: expected a warpstage dtype"),
    (lambda: ws.smem.Array[ws.Float32, 4, 24], "ws.smem.Array's alignment: expected a static power "
                                               "of two in [1, 1024] (bytes), got 24"),
    (lambda: ws.smem.Array[ws.Float32], "ws.smem.Array[...]: expected [dtype, shape] or"),
    (lambda: ws.smem.MbarrierArray[0], "ws.smem.MbarrierArray's count: expected a positive int"),
])
def test_storage_definition_errors(make, message):
    with pytest.raises(ws.OperandError) as ei:
        make()
    assert message in str(ei.value) and "Fix:" in str(ei.value)


# -- allocation --------------------------------------------------------------------------------
@ws.kernel
def two_allocations(out: ws.Tensor):
    a = ws.smem.allocate(ws.smem.Array[ws.Int8, (100,)])
    b = ws.smem.allocate(ws.smem.Array[ws.Float32, (4,)])
    t = ws.arch.thread_idx()[0]
    if t < 4:
        b[t] = ws.Float32(t) * 1.5
        a[t] = t
    ws.arch.sync_threads()
    if t < 4:
        out[t] = b[3 - t] + ws.Float32(a[t])


def test_allocations_are_placed_one_after_another_and_recorded():
    ck = ws.compile(two_allocations, ws.Tensor[ws.Float32, 1], block=(32, 1, 1))
    assert ck.module.kernels[0].attrs["dynamic_smem"] == 128      # 100 bytes, then 16 at 112
    assert "dynamic_smem = 128" in ck.ir
    out = np.zeros(4, np.float32)
    two_allocations[1, 32, 128](out)
    assert out.tolist() == [4.5, 4.0, 3.5, 3.0]


def test_too_much_shared_memory_is_an_error():
    @ws.kernel
    def big(out: ws.Tensor):
        ws.smem.allocate(ws.smem.Array[ws.Float32, (60000,)])   # TOO-BIG

    with pytest.raises(ws.OperandError) as ei:
        big[1, 32](np.zeros(1, np.float32))
    msg = str(ei.value)
    assert "a total of at most 232448 bytes (227 KiB) per CTA" in msg and "ending at 240000" in msg
    assert f"line {line_of('# TOO-BIG')}" in msg


def test_dynamic_shape_needs_static():
    @ws.kernel
    def dyn(out: ws.Tensor, n: ws.Int32):
        ws.smem.allocate(ws.smem.Array[ws.Float32, (n,)])

    with pytest.raises(ws.BindingTimeError, match="ws.smem.Array's shape: this value is dynamic"):
        dyn[1, 32](np.zeros(1, np.float32), 4)


# -- views -------------------------------------------------------------------------------------
class Tile:
    tile: ws.smem.Array[ws.Float32, (16, 17)]     # padded row: no bank conflicts on transpose


@ws.kernel
def transpose16(x: ws.Tensor, out: ws.Tensor):
    s = ws.smem.allocate(Tile)
    tx, ty, _ = ws.arch.thread_idx()
    s.tile[ty, tx] = x[ty, tx]
    ws.arch.sync_threads()
    row = s.tile[tx]                   # a 1-D view of row tx
    out[ty, tx] = row[ty]
    if tx == 0 and ty == 0:
        out[0, 0] = s.tile[len(s.tile) - 1, 0] + s.tile.shape[1] + len(s.tile)   # static index


def test_two_dimensional_views_and_sub_views():
    x = np.arange(256, dtype=np.float32).reshape(16, 16)
    out = np.zeros_like(x)
    transpose16[1, (16, 16), ws.smem.size_of(Tile)](x, out)
    want = x.T.copy()
    want[0, 0] = x[15, 0] + 17 + 16
    assert out.tolist() == want.tolist()


def test_static_negative_index_is_an_error_as_for_tensors():
    @ws.kernel
    def neg(out: ws.Tensor):
        s = ws.smem.allocate(Tile)
        out[0] = s.tile[-1, 0]

    @ws.kernel
    def neg_tensor(out: ws.Tensor):
        out[-1] = 1.0

    for k in (neg, neg_tensor):
        with pytest.raises(ws.OperandError, match=r"(?s)(-1.*never wrapped|never wrapped.*-1)"):
            k[1, 32](np.zeros(4, np.float32))


def test_static_index_out_of_range_is_reported():
    @ws.kernel
    def oob(out: ws.Tensor):
        s = ws.smem.allocate(Tile)
        out[0] = s.tile[16, 0]            # OOB-INDEX

    with pytest.raises(ws.OperandError) as ei:
        oob[1, 32](np.zeros(1, np.float32))
    msg = str(ei.value)
    assert "shared array index 0: expected an index in [0, 16), got 16" in msg
    assert f"line {line_of('# OOB-INDEX')}" in msg


class Pair:
    vals: ws.smem.Array[ws.Int32, (32,)]
    bars: ws.smem.MbarrierArray[1]


@ws.jit
def fill(storage, lane, v):
    storage.vals[lane] = v
    return storage


@ws.kernel
def views_through_jit_and_if(out: ws.Tensor, flag: ws.Int32):
    lane = ws.arch.lane_idx()
    s = ws.smem.allocate(Pair)
    s2 = fill(s, lane, lane * 3)       # a view is an argument and a result of a device function
    if flag > 0:
        view = s2.vals
    else:
        view = s.vals                  # merged after the dynamic if: same skeleton, one leaf
    out[lane] = view[31 - lane]
    assert isinstance(s2.bars, ws.smem.MbarrierArray) and len(s2.bars) == 1


def test_views_follow_the_value_protocol():
    out = np.zeros(32, np.int32)
    views_through_jit_and_if[1, 32, ws.smem.size_of(Pair)](out, 1)
    assert out.tolist() == [3 * (31 - t) for t in range(32)]


# -- the producer/consumer pipeline (examples/mbarrier_pipeline.py) ---------------------------
@pytest.mark.filterwarnings("ignore::warpstage.RecompileWarning")    # one kernel, 8 configs
@pytest.mark.parametrize("copy", ["cp.async", "ld/st"])
@pytest.mark.parametrize("stages", [1, 2, 3, 4])
def test_pipeline_matches_numpy(stages, copy):
    cfg = pipeline.Pipeline(stages=stages, copy=copy)
    ctas, tiles = 2, 7
    x = np.random.default_rng(stages).standard_normal(ctas * tiles * cfg.tile).astype(np.float32)
    out = np.full_like(x, np.nan)
    pipeline.launch(cfg, x, out, ctas)
    assert np.array_equal(out, x * 2 + 1)


@pytest.mark.filterwarnings("ignore::warpstage.RecompileWarning")
def test_pipeline_ir_and_ptx(ptxas_path):
    cfg = pipeline.Pipeline(stages=3)
    ck = ws.compile(pipeline.pipeline, cfg, ws.Tensor[ws.Float32, 1], ws.Tensor[ws.Float32, 1],
                    ws.Int32, block=(256, 1, 1))
    attrs = ck.module.kernels[0].attrs
    assert attrs["dynamic_smem"] == pipeline.smem_bytes(cfg) == 6272   # 3 * 2048 + 48, to 128
    assert attrs["minctasm"] == 1
    ptx = " ".join(ck.ptx.split())
    for needle in ("mbarrier.init.shared::cta.b64", "mbarrier.try_wait.parity.shared::cta.b64",
                   "mbarrier.arrive.shared::cta.b64", "cp.async.cg.shared.global",
                   "cp.async.mbarrier.arrive.noinc.shared.b64", "fence.mbarrier_init.release.cluster",
                   "shfl.sync.idx.b32", "setmaxnreg.dec.sync.aligned.u32 40",
                   "setmaxnreg.inc.sync.aligned.u32 232", ".minnctapersm 1"):
        assert needle in ptx, needle
    assert ck.cubin is not None and "C7508" not in ck.ptxas_log


@ws.kernel
def elected_arrivals(out: ws.Tensor, n: ws.Int32):
    """One mbarrier (init 1) alternates between "full" (even phases, completed by the producer
    warp) and "empty" (odd phases, completed by the consumer warp). Each side writes or reads,
    syncs its warp, and one elected lane arrives. Round i: the consumer waits for phase 2i
    (always parity 0), the producer for phase 2i - 1 (always parity 1; on a fresh mbarrier the
    "previous" phase counts as complete)."""
    s = ws.smem.allocate(Pair)
    lane = ws.arch.lane_idx()
    if ws.arch.thread_idx()[0] == 0:
        s.bars[0].init(1)
        ws.arch.fence_mbarrier_init()
    ws.arch.sync_threads()
    if ws.arch.make_warp_uniform(ws.arch.warp_idx()) == 0:
        for i in range(n):
            s.bars[0].wait(1)
            s.vals[lane] = i * 32 + lane
            ws.arch.sync_warp()
            if ws.arch.elect_one():
                s.bars[0].arrive()
    else:
        for i in range(n):
            s.bars[0].wait(0)
            out[i * 32 + lane] = s.vals[lane]
            ws.arch.sync_warp()
            if ws.arch.elect_one():
                s.bars[0].arrive()


def test_one_mbarrier_ping_pong_with_elected_arrivals():
    n = 9
    out = np.zeros(n * 32, np.int32)
    elected_arrivals[1, 64, ws.smem.size_of(Pair)](out, n)
    assert out.tolist() == list(range(n * 32))


# -- deadlock reports ---------------------------------------------------------------------------
@ws.kernel
def wrong_parity(out: ws.Tensor, n: ws.Int32):
    s = ws.smem.allocate(Pair)
    lane = ws.arch.lane_idx()
    if ws.arch.thread_idx()[0] == 0:
        s.bars[0].init(32)
    ws.arch.sync_threads()
    if ws.arch.make_warp_uniform(ws.arch.warp_idx()) == 0:
        for i in range(n):
            s.vals[lane] = i
            s.bars[0].arrive()
    else:
        for i in range(n):
            s.bars[0].wait((i + 1) & 1)        # WRONG-PARITY: should be i & 1
            out[lane] = s.vals[lane]


def test_deadlock_on_an_mbarrier_names_the_wait_in_user_code():
    with pytest.raises(ws.DeadlockError) as ei:
        wrong_parity[1, 64, ws.smem.size_of(Pair)](np.zeros(32, np.int32), 3)
    msg = str(ei.value)
    # the wrong parity lets the consumer pass the first wait on a phase that has not completed,
    # so the producer runs ahead, its arrivals complete phases nobody waits for, and the
    # consumer ends up waiting for a phase no arrival will complete
    assert "warp 0: exited" in msg
    assert f"warp 1: waiting at mbarrier.wait_parity at {__file__}:{line_of('# WRONG-PARITY')}" \
        in msg
    assert "Check each mbarrier wait's parity" in msg
    assert ei.value.where.endswith(f":{line_of('# WRONG-PARITY')}")


# -- mbarrier, cp.async and atomic operand errors -----------------------------------------------
@pytest.mark.parametrize("stmt, message", [
    ("s.bars[1].init(1)", "MbarrierArray index: expected an index in [0, 1), got 1"),
    ("s.bars[0].wait(2)", "Mbarrier.wait()'s parity: expected 0 or 1, got 2"),
    ("s.bars[0].init(0)", "Mbarrier.init()'s count: expected an int in [1, 1048575], got 0"),
    ("s.bars[0].arrive_expect_tx(1 << 20)", "Mbarrier.arrive_expect_tx()'s byte count"),
    ("ws.copy.cp_async(s.vals.ptr, out.ptr, 12)", "ws.copy.cp_async()'s nbytes: expected 4, 8 or "
                                                  "16 (bytes), got 12"),
    ("ws.copy.cp_async(s.vals.ptr, out.ptr, 8, cache='cg')", "ws.copy.cp_async()'s cache"),
    ("ws.copy.cp_async(out.ptr, out.ptr)", "ws.copy.cp_async()'s destination: expected a shared "
                                           "pointer, got 'a global pointer'"),
    ("ws.copy.wait_group(-1)", "ws.copy.wait_group()'s group count"),
    ("ws.copy.cp_async_mbarrier_arrive(s.bars)", "ws.copy.cp_async_mbarrier_arrive(): expected an "
                                                 "Mbarrier"),
    ("ws.atomic_max(fout.ptr, 1.0)", "ws.atomic_max(): expected an integer pointer"),
    ("ws.atomic_add(out, 1)", "ws.atomic_add(): expected a ws.Pointer into global or shared memory"),
    ("ws.atomic_cas(fout.ptr, 1.0, 2.0)", "ws.atomic_cas(): expected an integer pointer"),
])
def test_operand_errors(stmt, message, tmp_path):
    src = ("def k(out: ws.Tensor, fout: ws.Tensor):\n"
           "    s = ws.smem.allocate(Pair)\n"
           f"    {stmt}\n")
    path = tmp_path / "kern_operands.py"
    path.write_text(src)
    namespace = {"ws": ws, "Pair": Pair}
    exec(compile(src, str(path), "exec"), namespace)
    kern = ws.kernel(namespace["k"])
    with pytest.raises(ws.OperandError) as ei:
        kern[1, 32, 256](np.zeros(4, np.int32), np.zeros(4, np.float32))
    msg = str(ei.value)
    assert message in msg and "Fix:" in msg and f'{path}", line 3' in msg and stmt in msg


# -- cp.async and atomics from kernel code ----------------------------------------------------
class Staging:
    buf: ws.smem.Array[ws.Float32, (128,), 128]
    bar: ws.smem.MbarrierArray[1]


@ws.kernel
def reverse_via_cp_async(x: ws.Tensor, out: ws.Tensor, use_mbarrier: ws.Static[bool]):
    s = ws.smem.allocate(Staging)
    base = ws.arch.block_idx()[0] * 128   # each CTA reverses its own 128 floats
    t = ws.arch.thread_idx()[0]
    if t == 0:
        s.bar[0].init(32)
        ws.arch.fence_mbarrier_init()
    ws.arch.sync_threads()
    ws.copy.cp_async(s.buf.ptr + t * 4, x.ptr + (base + t * 4), 16)
    if ws.static(use_mbarrier):
        ws.copy.cp_async_mbarrier_arrive(s.bar[0])
        s.bar[0].wait(0)
    else:
        ws.copy.commit_group()
        ws.copy.wait_group(0)
        ws.arch.sync_threads()
    for j in ws.static_range(4):
        out[base + j * 32 + t] = s.buf[127 - (j * 32 + t)]


@pytest.mark.parametrize("use_mbarrier", [False, True])
def test_cp_async_from_kernel_code(use_mbarrier):
    x = np.arange(128, dtype=np.float32)
    out = np.zeros_like(x)
    reverse_via_cp_async[1, 32, ws.smem.size_of(Staging)](x, out, use_mbarrier)
    assert out.tolist() == x[::-1].tolist()


@ws.kernel
def histogram(x: ws.Tensor, hist: ws.Tensor, n: ws.Int32):
    s = ws.smem.allocate(ws.smem.Array[ws.Int32, (8,)])
    t = ws.arch.thread_idx()[0]
    if t < 8:
        s[t] = 0
    ws.arch.sync_threads()
    i = ws.arch.block_idx()[0] * ws.arch.block_dim()[0] + t
    if i < n:
        ws.atomic_add(s.ptr + x[i], 1)
    ws.arch.sync_threads()
    if t < 8:
        ws.atomic_add(hist.ptr + t, s[t])


def test_histogram_with_shared_and_global_atomics():
    x = np.random.default_rng(5).integers(0, 8, 1000).astype(np.int32)
    hist = np.zeros(8, np.int32)
    histogram[8, 128, 32](x, hist, 1000)
    assert hist.tolist() == np.bincount(x, minlength=8).tolist()


@ws.kernel
def atomics_return_old(counter: ws.Tensor, fsum: ws.Tensor, old: ws.Tensor):
    t = ws.arch.thread_idx()[0]
    old[t] = ws.atomic_add(counter.ptr, 2)
    ws.atomic_max(counter.ptr + 1, t)
    ws.atomic_min(counter.ptr + 2, t - 5)
    ws.atomic_cas(counter.ptr + 3, t, t + 1)
    ws.atomic_exch(counter.ptr + 4, 99)
    ws.atomic_or(counter.ptr + 5, ws.Int32(1) << (t % 4))
    ws.atomic_add(fsum.ptr, 0.5)


def test_atomics_return_the_old_value():
    counter = np.zeros(6, np.int32)
    fsum = np.zeros(1, np.float32)
    old = np.zeros(32, np.int32)
    atomics_return_old[1, 32](counter, fsum, old)
    assert sorted(old.tolist()) == list(range(0, 64, 2))
    assert counter.tolist() == [64, 31, -5, 32, 99, 15]
    assert fsum[0] == 16.0


def test_iterating_a_shared_array_is_a_static_loop_over_its_shape():
    class Small:
        v: ws.smem.Array[ws.Float32, (4,)]

    @ws.kernel
    def k(out: ws.Tensor):
        s = ws.smem.allocate(Small)
        if ws.arch.thread_idx()[0] == 0:
            for i in ws.static_range(4):
                s.v[i] = ws.Float32(i + 1)
            total = ws.Float32(0.0)
            for e in s.v:
                total = total + e
            out[0] = total

    o = np.zeros(1, np.float32)
    k[1, 32, ws.smem.size_of(Small)](o)
    assert o[0] == 10
