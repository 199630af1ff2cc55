"""ws.arch warp collectives, named-barrier arrival, setmaxnreg and fences from kernel code: results
in the simulator, the PTX they become, and the error messages for bad operands."""
import tempfile
import traceback

import numpy as np
import pytest

import warpstage as ws
from warpstage.backend.ptxas import find_cuda_tool

LOG2E = 1.4426950408889634


def run(kernel, *args, block=32, grid=1, smem=0):
    kernel[grid, block, smem](*args)


def no_compiler_frames(exc):
    frames = traceback.extract_tb(exc.__traceback__)
    return not any("/warpstage/frontend/" in f.filename or "/warpstage/lang/" in f.filename
                   for f in frames)


# -- thread hierarchy -------------------------------------------------------------------------
@ws.kernel
def indices(out: ws.Tensor):
    t = ws.arch.thread_idx()[0]
    out[t, 0] = ws.arch.lane_idx()
    out[t, 1] = ws.arch.warp_idx()
    out[t, 2] = ws.arch.warpgroup_idx()
    out[t, 3] = ws.arch.make_warp_uniform(t)          # lane 0's value
    out[t, 4] = ws.Int32(ws.arch.elect_one())


def test_lane_warp_warpgroup_uniform_and_elect():
    out = np.full((384, 5), -1, np.int32)
    run(indices, out, block=384)
    t = np.arange(384)
    assert out[:, 0].tolist() == (t % 32).tolist()
    assert out[:, 1].tolist() == (t // 32).tolist()
    assert out[:, 2].tolist() == (t // 128).tolist()
    assert out[:, 3].tolist() == (t // 32 * 32).tolist()
    assert out[:, 4].tolist() == (t % 32 == 0).astype(int).tolist()


def test_make_warp_uniform_of_a_static_value_is_that_value():
    @ws.kernel
    def k(out: ws.Tensor):
        v = ws.arch.make_warp_uniform(7)
        assert isinstance(v, int)
        out[ws.arch.thread_idx()[0]] = v

    out = np.zeros(32, np.int32)
    run(k, out)
    assert set(out.tolist()) == {7}


# -- shuffles: a warp-per-row softmax ----------------------------------------------------------
@ws.kernel
def warp_softmax(x: ws.Tensor, out: ws.Tensor, n_cols: ws.Int32):
    """One warp per row; each lane strides over the columns; shuffle-xor reductions."""
    row = ws.arch.block_idx()[0]
    lane = ws.arch.lane_idx()
    m = ws.Float32(-float("inf"))
    for j in range(lane, n_cols, 32):
        m = ws.math.max(m, x[row, j])
    for k in ws.static_range(5):
        m = ws.math.max(m, ws.arch.shfl_xor_sync(m, 16 >> k))
    s = ws.Float32(0.0)
    for j in range(lane, n_cols, 32):
        s = s + ws.math.exp2((x[row, j] - m) * LOG2E)
    for k in ws.static_range(5):
        s = s + ws.arch.shfl_xor_sync(s, 1 << k)
    for j in range(lane, n_cols, 32):
        out[row, j] = ws.math.exp2((x[row, j] - m) * LOG2E) / s


def test_warp_softmax_with_shuffle_reductions():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((5, 77)).astype(np.float32)
    out = np.zeros_like(x)
    run(warp_softmax, x, out, 77, grid=5)
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)


@ws.kernel
def butterfly_sum(x: ws.Tensor, out: ws.Tensor, steps: ws.Int32):
    """out[t] = the sum over a warp's lanes, by shuffle-xor in a dynamic loop: one shfl op runs
    ``steps`` times, with a new offset register (16, 8, 4, ...) each time."""
    t = ws.arch.thread_idx()[0]
    s = x[t]
    for k in range(steps):
        s = s + ws.arch.shfl_xor_sync(s, 16 >> k)
    out[t] = s


def test_one_shuffle_with_a_changing_offset_register():
    # the simulator keeps the source lanes of a shfl's last offset register (by identity): an
    # offset computed anew in each iteration must be read anew
    x = np.arange(64, dtype=np.int32) * 3 + 1
    for steps, want in ((5, [x[:32].sum()] * 32 + [x[32:].sum()] * 32),
                        (1, list(x + x.reshape(2, 2, 16)[:, ::-1].ravel()))):
        out = np.zeros_like(x)
        run(butterfly_sum, x, out, steps, block=64)
        assert out.tolist() == [int(v) for v in want]


@ws.kernel
def shuffle_types(i64v: ws.Tensor, f64v: ws.Tensor, u16v: ws.Tensor, i8v: ws.Tensor,
                  f16v: ws.Tensor, flags: ws.Tensor):
    t = ws.arch.thread_idx()[0]
    src = 31 - t
    i64v[t] = ws.arch.shfl_sync(i64v[t], src)
    f64v[t] = ws.arch.shfl_down_sync(f64v[t], 1)
    u16v[t] = ws.arch.shfl_up_sync(u16v[t], 2, width=16)
    i8v[t] = ws.arch.shfl_xor_sync(i8v[t], 3)
    f16v[t] = ws.arch.shfl_sync(f16v[t], 5)
    flags[t] = ws.Int32(ws.arch.shfl_sync(t > 20, src))


def test_shuffles_of_every_width():
    lanes = np.arange(32)
    i64v = (lanes.astype(np.int64) - 7) * (1 << 40)
    f64v = lanes / 3.0
    u16v = (lanes * 1000).astype(np.uint16)
    i8v = (lanes - 16).astype(np.int8)
    f16v = (lanes * 0.5).astype(np.float16)
    flags = np.zeros(32, np.int32)
    want = (i64v[31 - lanes], f64v[np.minimum(lanes + 1, 31)],
            u16v[np.where(lanes % 16 >= 2, lanes - 2, lanes)], i8v[lanes ^ 3], f16v[np.full(32, 5)])
    run(shuffle_types, i64v, f64v, u16v, i8v, f16v, flags)
    for got, exp in zip((i64v, f64v, u16v, i8v, f16v), want):
        assert got.tolist() == exp.tolist()
    assert flags.tolist() == ((31 - lanes) > 20).astype(int).tolist()


@ws.kernel
def votes(pred_in: ws.Tensor, out: ws.Tensor):
    t = ws.arch.thread_idx()[0]
    p = pred_in[t] != 0
    out[t, 0] = ws.Int32(ws.arch.vote_all_sync(p))
    out[t, 1] = ws.Int32(ws.arch.vote_any_sync(p))
    out[t, 2] = ws.Int32(ws.arch.vote_uni_sync(p))
    out[t, 3] = ws.Int32(ws.arch.vote_ballot_sync(p))
    out[t, 4] = ws.Int32(ws.arch.vote_any(pred_in[t]))       # a number is tested != 0


def test_votes():
    pred = np.zeros(64, np.int32)
    pred[[1, 33, 34]] = 1
    pred[32:] = 1 - pred[32:]                 # warp 1: all but lanes 1 and 2
    out = np.zeros((64, 5), np.int32)
    run(votes, pred, out, block=64)
    assert out[:32].tolist() == [[0, 1, 0, 2, 1]] * 32
    assert out[32:].tolist() == [[0, 1, 0, np.int32(np.uint32(0xFFFFFFF9)), 1]] * 32


def test_collective_in_divergent_code_names_the_user_line():
    @ws.kernel
    def bad(out: ws.Tensor):
        t = ws.arch.thread_idx()[0]
        if t < 8:
            out[t] = ws.arch.shfl_sync(t, 0)     # only 8 lanes execute a full-mask shuffle

    with pytest.raises(ws.BarrierError) as ei:
        run(bad, np.zeros(32, np.int32))
    msg = str(ei.value)
    assert "shfl.sync.idx at" in msg and "test_arch_sync.py" in msg and "divergent code" in msg


def test_shuffle_operand_errors():
    @ws.kernel
    def bad_width(out: ws.Tensor):
        out[0] = ws.arch.shfl_xor_sync(ws.Int32(1), 1, width=12)

    with pytest.raises(ws.OperandError) as ei:
        run(bad_width, np.zeros(1, np.int32))
    msg = str(ei.value)
    assert "ws.arch.shfl_xor_sync()'s width: expected a static power of two in [1, 32], got 12" \
        in msg and "width=12" in msg and "Fix:" in msg


# -- named barriers ----------------------------------------------------------------------------
@ws.kernel
def arrive_then_sync(out: ws.Tensor, rounds: ws.Int32):
    """Warps 0-1 produce a value per round; warps 2-3 consume it: barrier 1 'full' (producers
    arrive, consumers sync), barrier 2 'empty' (consumers arrive, producers sync)."""
    t = ws.arch.thread_idx()[0]
    storage = ws.smem.allocate(ws.smem.Array[ws.Int32, (64,)])
    warp = ws.arch.make_warp_uniform(ws.arch.warp_idx())
    total = ws.Int32(0)
    for r in range(rounds):
        if warp < 2:
            storage[t] = r * 100 + t
            ws.arch.barrier_arrive(1, 128)
            ws.arch.barrier_sync(2, 128)
        else:
            ws.arch.barrier_sync(1, 128)
            total = total + storage[t - 64]
            ws.arch.barrier_arrive(2, 128)
    out[t] = total


def test_barrier_arrive_and_sync_between_producer_and_consumer_warps():
    out = np.zeros(128, np.int32)
    run(arrive_then_sync, out, 6, block=128, smem=256)
    t = np.arange(64)
    assert out[64:].tolist() == (sum(r * 100 for r in range(6)) + 6 * t).tolist()


@pytest.mark.parametrize("call, message", [
    ("ws.arch.barrier_arrive(1, 48)", "ws.arch.barrier_arrive()'s thread count: expected a static "
                                      "positive multiple of 32, at most 1024, got 48"),
    ("ws.arch.barrier_arrive(16, 64)", "ws.arch.barrier_arrive()'s barrier id: expected an int "
                                       "in [0, 16) or a warp-uniform dynamic integer, got 16"),
    ("ws.arch.barrier_sync(0, 100)", "ws.arch.barrier_sync()'s thread count"),
    ("ws.arch.fence_acq_rel('block')", "ws.arch.fence_acq_rel()'s scope: expected one of 'cta', "
                                       "'cluster', 'gpu', 'sys', got 'block'"),
    ("ws.arch.fence_proxy_async('local')", "ws.arch.fence_proxy_async()'s space"),
    ("ws.arch.elect_one(mask=0)", "ws.arch.elect_one()'s membermask"),
])
def test_operand_errors_name_the_call_and_the_fix(call, message):
    src = f"def k(out: ws.Tensor):\n    {call}\n"
    namespace = {"ws": ws}
    path = tempfile.NamedTemporaryFile("w", suffix="_kern.py", delete=False)
    path.write(src)
    path.close()
    exec(compile(src, path.name, "exec"), namespace)
    kern = ws.kernel(namespace["k"])
    with pytest.raises(ws.OperandError) as ei:
        run(kern, np.zeros(1, np.int32))
    msg = str(ei.value)
    assert message in msg and "Fix:" in msg
    assert f'File "{path.name}", line 2' in msg and call in msg and "^" in msg
    assert isinstance(ei.value, ValueError) and no_compiler_frames(ei.value)


def test_barrier_arrive_needs_a_count():
    with pytest.raises(TypeError):
        ws.arch.barrier_arrive(1)


# -- setmaxnreg --------------------------------------------------------------------------------
@ws.kernel
def warp_specialized(out: ws.Tensor):
    t = ws.arch.thread_idx()[0]
    wg = ws.arch.make_warp_uniform(ws.arch.warpgroup_idx())
    if wg == 0:
        ws.arch.setmaxnreg_decrease(40)
        out[t] = 1
    else:
        ws.arch.setmaxregister_increase(232)
        out[t] = 2


def test_setmaxnreg_runs_in_the_simulator():
    out = np.zeros(384, np.int32)
    run(warp_specialized, out, block=384)
    assert out.tolist() == [1] * 128 + [2] * 256


def test_setmaxnreg_sets_minnctapersm_and_ptxas_honours_it(ptxas_path):
    ck = ws.compile(warp_specialized, ws.Tensor[ws.Int32, 1], block=(384, 1, 1))
    assert "minctasm = 1" in ck.ir and "maxntid = [384, 1, 1]" in ck.ir
    ptx = ck.ptx
    assert ".maxntid 384, 1, 1" in ptx and ".minnctapersm 1" in ptx
    assert "setmaxnreg.dec.sync.aligned.u32" in ptx and "setmaxnreg.inc.sync.aligned.u32" in ptx
    assert ck.cubin is not None
    assert "C7508" not in ck.ptxas_log and "ignored" not in ck.ptxas_log
    assert ck.registers == 168          # 65536 / 384 threads, rounded down to a multiple of 8
    sass = ck.sass if (find_cuda_tool("nvdisasm") or find_cuda_tool("cuobjdump")) else None
    if sass is None:
        pytest.skip("SASS check needs nvdisasm or cuobjdump on PATH")
    assert sass.count("USETMAXREG") == 2 and "USETMAXREG.DEALLOC" in sass   # .TRY_ALLOC: the inc


@pytest.mark.parametrize("call, error, message", [
    ("ws.arch.setmaxnreg_increase(100)", ws.OperandError,
     "ws.arch.setmaxnreg_increase()'s register count: expected a static multiple of 8 in "
     "[24, 256], got 100.\n"), ("ws.arch.setmaxnreg_increase(100)", ws.OperandError,
                                  "Fix: use 96 or 104; pass a register count"),
    ("ws.arch.setmaxnreg_decrease(16)", ws.OperandError, "got 16"),
    ("ws.arch.setmaxnreg_increase(264)", ws.OperandError, "got 264"),
    ("ws.arch.setmaxnreg_decrease(40.0)", ws.OperandError, "got 40.0"),
    ("ws.arch.setmaxnreg_increase(n)", ws.BindingTimeError,
     "ws.arch.setmaxnreg_increase()'s register count: this value is dynamic"),
])
def test_setmaxnreg_register_count_must_be_static_and_valid(call, error, message):
    src = f"def k(out: ws.Tensor, n: ws.Int32):\n    {call}\n"
    path = tempfile.NamedTemporaryFile("w", suffix="_regs.py", delete=False)
    path.write(src)
    path.close()
    namespace = {"ws": ws}
    exec(compile(src, path.name, "exec"), namespace)
    kern = ws.kernel(namespace["k"])
    with pytest.raises(error) as ei:
        run(kern, np.zeros(1, np.int32), 232)
    msg = str(ei.value)
    assert message in msg and call in msg and f'line 2' in msg
    if error is ws.OperandError:
        assert "pass a register count rounded to a multiple of 8" in msg
    else:
        assert "parameter 'n'" in msg and "ws.Static" in msg
    assert no_compiler_frames(ei.value)


# -- fences ------------------------------------------------------------------------------------
@ws.kernel
def fences(out: ws.Tensor):
    ws.arch.fence_proxy_async()
    ws.arch.fence_proxy_async("global")
    ws.arch.fence_proxy_async(None)
    ws.arch.fence_acq_rel("cta")
    ws.arch.fence_acq_rel()
    ws.arch.fence_sc("sys")
    ws.arch.fence_mbarrier_init()
    out[ws.arch.thread_idx()[0]] = 1


def test_fences_lower_to_their_instructions(ptxas_path):
    out = np.zeros(32, np.int32)
    run(fences, out)
    assert set(out.tolist()) == {1}
    ck = ws.compile(fences, ws.Tensor[ws.Int32, 1], block=(32, 1, 1))
    ptx = " ".join(ck.ptx.split())
    for kind in ("proxy.async.shared::cta", "proxy.async.global", "proxy.async", "acq_rel.cta",
                 "acq_rel.gpu", "sc.sys", "mbarrier_init.release.cluster"):
        assert f"fence.{kind};" in ptx
    assert ck.cubin is not None
