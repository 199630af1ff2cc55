"""Structured control flow in the simulator: bounds guards, loops, while, divergence, calls."""
import numpy as np
import pytest

from warpstage import ir, sim
from warpstage.errors import SimulatorError
from warpstage.ir import Builder, Function, f32, i1, i32, i64, u32

from simkit import KernelBuilder, gptr, launch


def vector_add_module():
    k = KernelBuilder("vadd", [gptr(f32), gptr(f32), gptr(f32), i32])
    a, b_, c, n = k.args
    i = k.global_tid()
    k.if_(k.b.cmp("lt", i, n),
          then=lambda: k.store_at(c, i, k.b.binary("add", k.load_at(a, i), k.load_at(b_, i))))
    return k.finish()


def test_vector_add_with_bounds_guard_over_partial_last_block():
    n = 1000                                  # 4 blocks of 256, the last one 24 threads short
    rng = np.random.default_rng(0)
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    out = np.full(n + 8, -1.0, np.float32)    # extra tail must stay untouched
    r = launch(vector_add_module(), (4,), (256,), [a, b, out, n])
    np.testing.assert_array_equal(out[:n], a + b)
    assert (out[n:] == -1).all()
    assert r.ctas == 4 and r.warps == 32


def test_vector_add_with_partial_warp_block():
    n = 70                                    # block of 35 threads: warp 1 has only 3 lanes
    a = np.arange(n, dtype=np.float32)
    out = np.zeros(n, np.float32)
    launch(vector_add_module(), (2,), (35,), [a, a, out, n])
    np.testing.assert_array_equal(out, 2 * a)


def test_for_loop_carried_sum_negative_step():
    # sum of i for i in range(hi, 0, -3), hi uniform; plus a product carried alongside
    k = KernelBuilder("neg", [gptr(i32), gptr(i32), i32])
    out, out2, hi = k.args
    b = k.b
    i = k.global_tid()
    s, cnt = k.for_(hi, k.const(i32, 0), k.const(i32, -3), [k.const(i32, 0), k.const(i32, 0)],
                    lambda iv, acc, c: [b.binary("add", acc, iv),
                                        b.binary("add", c, k.const(i32, 1))])
    k.store_at(out, i, s)
    k.store_at(out2, i, cnt)
    m = k.finish()
    out_a, out_b = np.zeros(32, np.int32), np.zeros(32, np.int32)
    r = launch(m, (1,), (32,), [out_a, out_b, 20])
    assert (out_a == sum(range(20, 0, -3))).all()
    assert (out_b == len(range(20, 0, -3))).all()
    assert r.ops_executed > 7 * 4


def test_for_loop_lane_dependent_bounds_and_negative_step():
    # lane l: for j in range(l, -1, -2): acc += j*j   (different trip counts per lane)
    k = KernelBuilder("lanes", [gptr(i64)])
    (out,) = k.args
    b = k.b
    t = b.sreg("tid.x", i32)
    acc = k.for_(t, k.const(i32, -1), k.const(i32, -2), [k.const(i64, 0)],
                 lambda iv, a: [b.binary("add", a, b.cast(b.binary("mul", iv, iv), i64))])[0]
    k.store_at(out, t, acc)
    m = k.finish()
    res = np.zeros(40, np.int64)
    launch(m, (1,), (40,), [res])
    assert res.tolist() == [sum(j * j for j in range(l, -1, -2)) for l in range(40)]


def test_for_loop_unsigned_and_empty_range():
    k = KernelBuilder("uns", [gptr(u32), u32, u32])
    out, lo, hi = k.args
    b = k.b
    t = b.sreg("tid.x", i32)
    acc = k.for_(lo, hi, k.const(u32, 5), [k.const(u32, 7)],
                 lambda iv, a: [b.binary("add", a, iv)])[0]
    k.store_at(out, t, acc)
    m = k.finish()
    res = np.zeros(32, np.uint32)
    launch(m, (1,), (32,), [res, 3, 30])
    assert (res == 7 + sum(range(3, 30, 5))).all()
    launch(m, (1,), (32,), [res, 30, 3])
    assert (res == 7).all()


def test_for_zero_step_is_an_error():
    k = KernelBuilder("z", [i32])
    k.line(42)
    k.for_(k.const(i32, 0), k.args[0], k.const(i32, 0), [], lambda iv: [])
    m = k.finish()
    with pytest.raises(SimulatorError, match=r"kern.py:42.*step 0"):
        launch(m, (1,), (32,), [4])


def test_while_collatz_divergent_trip_counts():
    # steps(n): while n != 1: n = n/2 if even else 3n+1; count steps. Each lane a different n.
    k = KernelBuilder("collatz", [gptr(i32), gptr(i32)])
    inp, out = k.args
    b = k.b
    t = b.sreg("tid.x", i32)
    one, two, three = k.const(i32, 1), k.const(i32, 2), k.const(i32, 3)

    def before(n, steps):
        return b.cmp("ne", n, one), [n, steps]

    def after(n, steps):
        even = b.cmp("eq", b.binary("rem", n, two), k.const(i32, 0))
        odd_next = b.binary("add", b.binary("mul", n, three), one)
        nxt = b.select(even, b.binary("div", n, two), odd_next)
        return [nxt, b.binary("add", steps, one)]

    n_final, steps = k.while_([k.load_at(inp, t), k.const(i32, 0)], before, after)
    k.store_at(out, t, b.binary("add", b.binary("mul", steps, k.const(i32, 1000)), n_final))
    m = k.finish()

    def ref(n):
        s = 0
        while n != 1:
            n = n // 2 if n % 2 == 0 else 3 * n + 1
            s += 1
        return s * 1000 + 1

    ns = np.arange(1, 65, dtype=np.int32)
    res = np.zeros(64, np.int32)
    launch(m, (1,), (64,), [ns, res])
    assert res.tolist() == [ref(int(n)) for n in ns]


def test_while_zero_iterations_keeps_init():
    k = KernelBuilder("w0", [gptr(i32)])
    (out,) = k.args
    b = k.b
    t = b.sreg("tid.x", i32)
    (v,) = k.while_([t], lambda x: (b.cmp("lt", x, k.const(i32, 0)), [x]),
                    lambda x: [b.binary("sub", x, k.const(i32, 1))])
    k.store_at(out, t, v)
    m = k.finish()
    res = np.full(32, -5, np.int32)
    launch(m, (1,), (32,), [res])
    assert res.tolist() == list(range(32))


def test_divergent_if_results_and_nested_divergent_loop():
    # even lanes: x = t * 2, then a loop of t trips adding 1; odd lanes: x = t * 5
    k = KernelBuilder("div", [gptr(i32)])
    (out,) = k.args
    b = k.b
    t = b.sreg("tid.x", i32)
    even = b.cmp("eq", b.binary("and", t, k.const(i32, 1)), k.const(i32, 0))

    def then():
        x = b.binary("mul", t, k.const(i32, 2))
        return k.for_(k.const(i32, 0), t, k.const(i32, 1), [x],
                      lambda iv, a: [b.binary("add", a, k.const(i32, 1))])

    (x,) = k.if_(even, [i32], then=then,
                 else_=lambda: [b.binary("mul", t, k.const(i32, 5))])
    k.store_at(out, t, x)
    m = k.finish()
    res = np.zeros(48, np.int32)
    launch(m, (1,), (48,), [res])
    assert res.tolist() == [3 * l if l % 2 == 0 else 5 * l for l in range(48)]


def test_divergent_stores_only_from_active_lanes():
    k = KernelBuilder("mask", [gptr(i32)])
    (out,) = k.args
    b = k.b
    t = b.sreg("tid.x", i32)
    k.if_(b.cmp("ge", t, k.const(i32, 20)), then=lambda: k.store_at(out, t, t))
    m = k.finish()
    res = np.full(32, -1, np.int32)
    launch(m, (1,), (32,), [res])
    assert res.tolist() == [-1] * 20 + list(range(20, 32))


def _divmod_module():
    m = ir.Module()
    dm = m.add(Function("divmod", [i32, i32], [i32, i32]))
    b = Builder(dm.body.block)
    x, y = dm.args
    b.return_([b.binary("floordiv", x, y), b.binary("mod", x, y)])
    k = KernelBuilder("caller", [gptr(i32), gptr(i32), gptr(i32)], module=m)
    inp, q_out, r_out = k.args
    t = k.b.sreg("tid.x", i32)
    x = k.load_at(inp, t)

    def then():
        q, r = k.b.call(dm, [x, k.const(i32, -7)])
        k.store_at(q_out, t, q)
        k.store_at(r_out, t, r)

    k.if_(k.b.cmp("ne", x, k.const(i32, 0)), then=then)
    return k.finish()


def test_device_function_call_with_two_results_under_divergence():
    m = _divmod_module()
    xs = np.arange(-32, 32, dtype=np.int32)
    q, r = np.full(64, 99, np.int32), np.full(64, 99, np.int32)
    launch(m, (1,), (64,), [xs, q, r])
    for x, qq, rr in zip(xs.tolist(), q.tolist(), r.tolist()):
        if x == 0:
            assert (qq, rr) == (99, 99)
        else:
            assert (qq, rr) == divmod(x, -7)


def test_recursive_device_function():
    m = ir.Module()
    fact = m.add(Function("fact", [i32], [i32]))
    b = Builder(fact.body.block)
    (n,) = fact.args
    op = b.if_(b.cmp("le", n, b.constant(i32, 1)), [i32])
    with b.at(op.regions[0].block):
        b.yield_([b.constant(i32, 1)])
    with b.at(op.regions[1].block):
        (sub,) = b.call(fact, [b.binary("sub", n, b.constant(i32, 1))])
        b.yield_([b.binary("mul", n, sub)])
    b.return_(op.results)
    k = KernelBuilder("k", [gptr(i32)], module=m)
    t = k.b.sreg("tid.x", i32)
    (v,) = k.b.call(fact, [t])
    k.store_at(k.args[0], t, v)
    mod = k.finish()
    res = np.zeros(12, np.int32)
    launch(mod, (1,), (12,), [res])
    import math
    assert res.tolist() == [math.factorial(max(i, 1)) for i in range(12)]


def test_compiled_program_is_cached_and_recompiled_after_change():
    m = vector_add_module()
    p1 = sim.compile_module(m)
    assert sim.compile_module(m) is p1
    extra = ir.Operation("arith.constant", (), (i1,), {"value": True})
    m.kernels[0].body.block.ops.insert(0, extra)
    extra.parent = m.kernels[0].body.block
    assert sim.compile_module(m) is not p1


def test_compiled_program_cache_does_not_keep_the_module_alive():
    import gc
    import weakref
    from warpstage.sim import compiler
    m = vector_add_module()
    sim.compile_module(m)
    ref = weakref.ref(m)
    key = id(m)
    del m
    gc.collect()
    assert ref() is None and key not in compiler._cache
