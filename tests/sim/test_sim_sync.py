"""CTA barriers in the simulator: exchange through shared memory, deadlocks, misuse."""
import numpy as np
import pytest

from warpstage.errors import BarrierError, DeadlockError
from warpstage.ir import i32

from simkit import KernelBuilder, gptr, launch, sptr


def exchange_module(with_barrier=True):
    """Thread t writes t*10 to smem[t], syncs, then reads smem[63 - t] into out[t]."""
    k = KernelBuilder("exchange", [sptr(i32), gptr(i32)])
    smem, out = k.args
    b = k.b
    t = b.sreg("tid.x", i32)
    k.store_at(smem, t, b.binary("mul", t, k.const(i32, 10)))
    if with_barrier:
        k.line(7)
        b.barrier(0)
    k.store_at(out, t, k.load_at(smem, b.binary("sub", k.const(i32, 63), t)))
    return k.finish()


def test_two_warps_exchange_through_shared_memory_across_barrier():
    out = np.zeros(64, np.int32)
    r = launch(exchange_module(), (2,), (64,), [0, out], smem_bytes=256)
    assert out.tolist() == [(63 - t) * 10 for t in range(64)]
    assert r.warps == 4


def test_without_the_barrier_the_exchange_reads_stale_shared_memory():
    # proves the test above depends on the barrier: warp 0 runs ahead of warp 1
    out = np.zeros(64, np.int32)
    launch(exchange_module(with_barrier=False), (1,), (64,), [0, out], smem_bytes=256)
    assert out.tolist() != [(63 - t) * 10 for t in range(64)]


def test_shared_memory_is_per_cta():
    # each CTA adds its ctaid to smem[t] (initially zero) and stores the result
    k = KernelBuilder("percta", [sptr(i32), gptr(i32)])
    smem, out = k.args
    b = k.b
    t = b.sreg("tid.x", i32)
    c = b.sreg("ctaid.x", i32)
    k.store_at(smem, t, b.binary("add", k.load_at(smem, t), c))
    b.barrier()
    k.store_at(out, b.binary("add", b.binary("mul", c, k.const(i32, 32)), t), k.load_at(smem, t))
    m = k.finish()
    out = np.zeros(96, np.int32)
    launch(m, (3,), (32,), [0, out], smem_bytes=128)
    assert out.tolist() == [c for c in range(3) for _ in range(32)]


def test_named_barriers_with_thread_counts():
    # warps 0,1 use barrier 1 (64 threads), warps 2,3 barrier 2 (64 threads); each pair exchanges
    k = KernelBuilder("named", [sptr(i32), gptr(i32)])
    smem, out = k.args
    b = k.b
    t = b.sreg("tid.x", i32)
    warp = b.binary("div", t, k.const(i32, 32))
    k.store_at(smem, t, t)
    low = b.cmp("lt", warp, k.const(i32, 2))
    k.if_(low, then=lambda: b.barrier(1, 64), else_=lambda: b.barrier(2, 64))
    partner = b.binary("xor", t, k.const(i32, 32))
    k.store_at(out, t, k.load_at(smem, partner))
    m = k.finish()
    out = np.zeros(128, np.int32)
    launch(m, (1,), (128,), [0, out], smem_bytes=512)
    assert out.tolist() == [t ^ 32 for t in range(128)]


def test_barrier_reused_many_times_in_a_loop():
    # ping-pong: 8 rounds, each round every thread adds its neighbour's value
    k = KernelBuilder("rounds", [sptr(i32), gptr(i32)])
    smem, out = k.args
    b = k.b
    t = b.sreg("tid.x", i32)
    k.store_at(smem, t, t)

    def body(iv, acc):
        b.barrier()
        v = k.load_at(smem, b.binary("mod", b.binary("add", t, k.const(i32, 1)), k.const(i32, 64)))
        b.barrier()
        k.store_at(smem, t, v)
        return [b.binary("add", acc, v)]

    (acc,) = k.for_(k.const(i32, 0), k.const(i32, 8), k.const(i32, 1), [k.const(i32, 0)], body)
    k.store_at(out, t, acc)
    m = k.finish()
    out = np.zeros(64, np.int32)
    launch(m, (1,), (64,), [0, out], smem_bytes=256)
    assert out.tolist() == [sum((t + r) % 64 for r in range(1, 9)) for t in range(64)]


def test_deadlock_lists_each_warps_wait_point():
    k = KernelBuilder("dead", [])
    b = k.b
    warp = b.binary("div", b.sreg("tid.x", i32), k.const(i32, 32))

    def then():
        k.line(11)
        b.barrier(1)

    def else_():
        k.line(22)
        b.barrier(2)

    k.if_(b.cmp("eq", warp, k.const(i32, 0)), then=then, else_=else_)
    m = k.finish()
    with pytest.raises(DeadlockError) as e:
        launch(m, (1,), (64,), [])
    msg = str(e.value)
    assert "block (0,0,0)" in msg
    assert "warp 0: waiting at nvvm.barrier id=1" in msg and "kern.py:11" in msg
    assert "warp 1: waiting at nvvm.barrier id=2" in msg and "kern.py:22" in msg
    assert e.value.where == "kern.py:11"


def test_deadlock_when_a_warp_exits_without_arriving():
    k = KernelBuilder("dead2", [])
    b = k.b
    warp = b.binary("div", b.sreg("tid.x", i32), k.const(i32, 32))

    def then():
        k.line(5)
        b.barrier(0)

    k.if_(b.cmp("ne", warp, k.const(i32, 2)), then=then)
    m = k.finish()
    with pytest.raises(DeadlockError) as e:
        launch(m, (1,), (96,), [])
    msg = str(e.value)
    assert "warp 0: waiting at nvvm.barrier id=0" in msg and "kern.py:5" in msg
    assert "warp 1: waiting" in msg
    assert "warp 2: exited" in msg


def test_barrier_in_divergent_code_is_an_error():
    k = KernelBuilder("divbar", [])
    b = k.b
    t = b.sreg("tid.x", i32)

    def then():
        k.line(12)
        b.barrier()

    k.if_(b.cmp("lt", t, k.const(i32, 12)), then=then)
    m = k.finish()
    with pytest.raises(BarrierError, match=r"bar.sync in divergent code at kern.py:12: "
                                           r"12 of 32 lanes active"):
        launch(m, (1,), (32,), [])


def test_barrier_in_a_partial_warp_is_fine():
    out = np.zeros(40, np.int32)
    k = KernelBuilder("partial", [sptr(i32), gptr(i32)])
    smem, o = k.args
    b = k.b
    t = b.sreg("tid.x", i32)
    k.store_at(smem, t, t)
    b.barrier()
    k.store_at(o, t, k.load_at(smem, b.binary("sub", k.const(i32, 39), t)))
    launch(k.finish(), (1,), (40,), [0, out], smem_bytes=160)
    assert out.tolist() == list(range(39, -1, -1))


def test_barrier_thread_count_mismatch():
    k = KernelBuilder("mismatch", [])
    b = k.b
    warp = b.binary("div", b.sreg("tid.x", i32), k.const(i32, 32))
    k.line(3)
    k.if_(b.cmp("eq", warp, k.const(i32, 0)), then=lambda: b.barrier(1, 64),
          else_=lambda: b.barrier(1, 96))
    m = k.finish()
    with pytest.raises(BarrierError, match="same thread count"):
        launch(m, (1,), (96,), [])


def test_barrier_count_larger_than_cta():
    k = KernelBuilder("toomany", [])
    k.line(9)
    k.b.barrier(3, 128)
    with pytest.raises(BarrierError, match=r"kern.py:9.*128 threads.*only 2 warps"):
        launch(k.finish(), (1,), (64,), [])


def test_barrier_inside_a_device_function_called_from_a_while_loop():
    # rotate(smem, t): every thread publishes its value, syncs, reads its neighbour's, syncs.
    from warpstage import ir
    from warpstage.ir import Builder, Function
    m = ir.Module()
    rot = m.add(Function("rotate", [sptr(i32), i32, i32], [i32]))
    b = Builder(rot.body.block)
    smem, t, v = rot.args
    b.store(b.ptr_offset(smem, t), v)
    b.barrier()
    nxt = b.binary("mod", b.binary("add", t, b.constant(i32, 1)), b.constant(i32, 64))
    got = b.load(b.ptr_offset(smem, nxt))
    b.barrier()
    b.return_([got])

    k = KernelBuilder("spin", [sptr(i32), gptr(i32)], module=m)
    s, out = k.args
    kb = k.b
    t = kb.sreg("tid.x", i32)

    def before(i, v):
        return kb.cmp("lt", i, k.const(i32, 5)), [i, v]

    def after(i, v):
        (r,) = kb.call(rot, [s, t, v])
        return [kb.binary("add", i, k.const(i32, 1)), r]

    _, v = k.while_([k.const(i32, 0), t], before, after)
    k.store_at(out, t, v)
    res = np.zeros(64, np.int32)
    launch(k.finish(), (1,), (64,), [0, res], smem_bytes=256)
    assert res.tolist() == [(t + 5) % 64 for t in range(64)]
