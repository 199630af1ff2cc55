"""cp.async (copies land when a wait or an mbarrier makes them visible) and atomics in the
simulator."""
import numpy as np
import pytest

from warpstage.errors import OutOfBoundsError, SimulatorError
from warpstage.ir import f32, i32, u32, u64

from simkit import KernelBuilder, gptr, launch


def copy_module(size=16, groups=1, wait=("group", 0), line=5):
    """Lane t copies ``size`` bytes from src + t*size (+ g*32*size for group g) into smem, then
    waits as ``wait`` says and copies smem to out (4-byte words)."""
    k = KernelBuilder("cp", [gptr(u32), gptr(u32)])
    src, out = k.args
    b = k.b
    c = k.const
    lane = b.sreg("laneid", i32)
    words = size // 4
    smem = b.ptr_cast(b.smem_base(), u32)
    for g in range(groups):
        off = b.binary("add", b.binary("mul", lane, c(i32, words)), c(i32, g * 32 * words))
        k.line(line)
        b.op("cp_async.copy", (b.ptr_offset(smem, off), b.ptr_offset(src, off)), (),
             {"cache": "cg" if size == 16 else "ca", "size": size})
        b.op("cp_async.commit_group")
    kind, n = wait
    if kind == "group":
        b.op("cp_async.wait_group", (), (), {"n": n})
    elif kind == "all":
        b.op("cp_async.wait_all")
    total = groups * 32 * words

    def body(i):
        k.store_at(out, i, k.load_at(smem, i))
    k.for_(lane, c(i32, total), c(i32, 32), [], body)
    return k.finish(), total * 4


def run_copy(**kw):
    m, smem = copy_module(**kw)
    n = smem // 4
    src = np.arange(1, n + 1, dtype=np.uint32)
    out = np.zeros(n, np.uint32)
    launch(m, (1,), (32,), [src, out], smem_bytes=smem)
    return src, out


@pytest.mark.parametrize("size", [4, 8, 16])
def test_copies_land_at_wait_group_zero(size):
    src, out = run_copy(size=size)
    assert out.tolist() == src.tolist()


def test_without_a_wait_the_copies_have_not_landed():
    src, out = run_copy(wait=("none", 0))
    assert out.tolist() == [0] * len(src)


def test_wait_group_one_leaves_the_newest_group_in_flight():
    src, out = run_copy(groups=3, wait=("group", 1))
    third = len(src) // 3
    assert out[:2 * third].tolist() == src[:2 * third].tolist()
    assert out[2 * third:].tolist() == [0] * third


def test_wait_all_lands_everything():
    src, out = run_copy(groups=2, wait=("all", 0))
    assert out.tolist() == src.tolist()


def test_cp_async_completes_on_an_mbarrier():
    # warp 0 copies 32 x 16 bytes and arrives through cp.async.mbarrier.arrive.noinc (init 32);
    # warp 1 waits on the mbarrier and reads.
    k = KernelBuilder("cpbar", [gptr(u32), gptr(u32)])
    src, out = k.args
    b = k.b
    c = k.const
    tid = b.sreg("tid.x", i32)
    lane = b.sreg("laneid", i32)
    bar = b.ptr_cast(b.ptr_offset(b.smem_base(), c(i32, 2048)), u64)
    smem = b.ptr_cast(b.smem_base(), u32)
    k.if_(b.cmp("eq", tid, c(i32, 0)), then=lambda: b.mbarrier("init", bar, c(i32, 32)))
    b.barrier()

    def producer():
        off = b.binary("mul", lane, c(i32, 4))
        b.op("cp_async.copy", (b.ptr_offset(smem, off), b.ptr_offset(src, off)), (),
             {"cache": "cg", "size": 16})
        b.op("cp_async.mbarrier_arrive", (bar,), (), {"noinc": True})

    def consumer():
        b.mbarrier("wait_parity", bar, c(i32, 0))
        k.for_(lane, c(i32, 128), c(i32, 32), [],
               lambda i: k.store_at(out, i, k.load_at(smem, i)))
    warp = b.binary("div", tid, c(i32, 32))
    k.if_(b.cmp("eq", warp, c(i32, 0)), then=producer, else_=consumer)
    data = np.arange(128, dtype=np.uint32) * 3
    res = np.zeros(128, np.uint32)
    launch(k.finish(), (1,), (64,), [data, res], smem_bytes=2056)
    assert res.tolist() == data.tolist()


def test_misaligned_copy_is_reported():
    k = KernelBuilder("mis", [gptr(u32)])
    (src,) = k.args
    b = k.b
    k.line(4)
    b.op("cp_async.copy", (b.ptr_cast(b.smem_base(), u32), b.ptr_offset(src, k.const(i32, 1))),
         (), {"cache": "cg", "size": 16})
    with pytest.raises(SimulatorError, match="cp.async at kern.py:4: the global source address "
                                             "0x[0-9a-f]+ is not 16-byte aligned"):
        launch(k.finish(), (1,), (32,), [np.zeros(64, np.uint32)], smem_bytes=64)


def test_copy_past_shared_memory_is_out_of_bounds():
    m, _ = copy_module()
    with pytest.raises(OutOfBoundsError, match="cp.async shared destination"):
        launch(m, (1,), (32,), [np.zeros(128, np.uint32), np.zeros(128, np.uint32)],
               smem_bytes=256)


# -- atomics ----------------------------------------------------------------------------------
def atomic_module(kind, t=i32, shared=False):
    """old[tid] = atomic(kind, counter[0] (global, or smem copied back), value[tid])."""
    k = KernelBuilder("atom", [gptr(t), gptr(t), gptr(t)])
    counter, values, old = k.args
    b = k.b
    tid = b.sreg("tid.x", i32)
    p = counter
    if shared:
        p = b.ptr_cast(b.smem_base(), t)
        k.if_(b.cmp("eq", tid, k.const(i32, 0)), then=lambda: b.store(p, b.load(counter)))
        b.barrier()
    v = k.load_at(values, tid)
    r = b.atomic_cas(p, v, b.binary("add", v, k.const(t, 1))) if kind == "cas" \
        else b.atomic(kind, p, v)
    k.store_at(old, tid, r)
    if shared:
        b.barrier()
        k.if_(b.cmp("eq", tid, k.const(i32, 0)), then=lambda: b.store(counter, b.load(p)))
    return k.finish()


def run_atomic(kind, values, start, t=i32, dtype=np.int32, shared=False):
    counter = np.array([start], dtype)
    old = np.zeros(len(values), dtype)
    launch(atomic_module(kind, t, shared), (1,), (len(values),),
           [counter, np.asarray(values, dtype), old], smem_bytes=16)
    return counter[0], old


@pytest.mark.parametrize("shared", [False, True])
def test_atomic_add_counts_every_thread(shared):
    total, old = run_atomic("add", np.ones(64), 5, shared=shared)
    assert total == 69
    assert sorted(old.tolist()) == list(range(5, 69))    # each thread saw a distinct value


def test_atomic_min_max_exch_and_bitwise():
    vals = np.array([7, -3, 12, 4] * 8)
    assert run_atomic("max", vals, 0)[0] == 12
    assert run_atomic("min", vals, 0)[0] == -3
    assert run_atomic("min", np.array([7, 3] * 16), 5, u32, np.uint32)[0] == 3
    assert run_atomic("exch", np.arange(32), -1)[0] == 31      # the last lane in lane order
    assert run_atomic("or", 1 << (np.arange(32) % 31), 0)[0] == (1 << 31) - 1
    assert run_atomic("xor", np.ones(32), 0)[0] == 0
    assert run_atomic("and", np.full(32, 6), 7)[0] == 6


def test_atomic_cas_increments_once_per_matching_value():
    total, old = run_atomic("cas", np.arange(32), 0)
    assert total == 32 and old.tolist() == list(range(32))


def test_atomic_float_add_and_u64():
    total, _ = run_atomic("add", np.full(32, 0.25), 1.0, f32, np.float32)
    assert total == 9.0
    total, _ = run_atomic("add", np.full(32, 1 << 40), 0, u64, np.uint64)
    assert total == 32 << 40


def scattered_atomic_module(kind, slots):
    """old[tid] = atomic(kind, counters[index[tid]], values[tid]): lanes on distinct counters,
    or some sharing one, in one warp."""
    k = KernelBuilder("atoms", [gptr(i32), gptr(i32), gptr(i32), gptr(i32)])
    counters, index, values, old = k.args
    b = k.b
    tid = b.sreg("tid.x", i32)
    p = b.ptr_offset(counters, k.load_at(index, tid))
    v = k.load_at(values, tid)
    r = b.atomic_cas(p, v, b.binary("add", v, k.const(i32, 1))) if kind == "cas" \
        else b.atomic(kind, p, v)
    k.store_at(old, tid, r)
    return k.finish()


@pytest.mark.parametrize("kind", ["add", "exch", "max", "cas"])
@pytest.mark.parametrize("layout", ["distinct", "reversed", "shared by some", "masked"])
def test_atomics_on_many_addresses_act_one_lane_after_another(kind, layout):
    """Each lane's old value is the counter after the lanes before it (in lane order) updated
    it: the same whether the lanes' counters are distinct (updated together) or shared."""
    lanes = 24 if layout == "masked" else 32          # a partial warp: 8 lanes inactive
    index = {"distinct": np.arange(lanes), "reversed": np.arange(lanes)[::-1],
             "shared by some": np.arange(lanes) % 5, "masked": (np.arange(lanes) * 7) % 32}[layout]
    values = (np.arange(lanes) * 3 - 20).astype(np.int32)
    start = (np.arange(32) * 11 % 7).astype(np.int32)
    counters, old = start.copy(), np.zeros(lanes, np.int32)
    launch(scattered_atomic_module(kind, 32), (1,), (lanes,),
           [counters, index.astype(np.int32), values, old])
    want, want_old = start.copy(), np.zeros(lanes, np.int32)
    for lane in range(lanes):
        c, v = want[index[lane]], values[lane]
        want_old[lane] = c
        want[index[lane]] = {"add": c + v, "exch": v, "max": max(c, v),
                             "cas": v + 1 if c == v else c}[kind]
    assert old.tolist() == want_old.tolist()
    assert counters.tolist() == want.tolist()


def test_atomic_out_of_bounds_names_the_lane():
    k = KernelBuilder("atomoob", [gptr(i32)])
    (p,) = k.args
    b = k.b
    tid = b.sreg("tid.x", i32)
    k.line(6)
    b.atomic("add", b.ptr_offset(p, tid), tid)
    with pytest.raises(OutOfBoundsError, match="atomic add on i32 at kern.py:6.*lane 4"):
        launch(k.finish(), (1,), (32,), [np.zeros(4, np.int32)])
