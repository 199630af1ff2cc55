"""Runs of lanewise ops (sim/compiler._batch_runs): elementwise ops of one signature, regrouped
by depth within a stretch of such ops and none reading another's result, run as one numpy call
over their concatenated registers. The results must be the bits the ops give one by one: a
kernel with runs of every batched kind (binary, unary with and without .approx/.ftz, cast to
bf16 and f16 and int, cmp, select, fma), a dependent chain and interleaved signatures, on inputs
with NaN, infinities, subnormals and signed zeros, is run with runs and with every op alone
(``MIN_RUN`` out of reach)."""
import numpy as np

from warpstage.ir import bf16, f16, f32, i1, i32
from warpstage.sim import compiler

from simkit import KernelBuilder, gptr, launch

N = 8                  # values per thread: each batched kind repeats N times in a row
THREADS = 64


def _build():
    k = KernelBuilder("runs", [gptr(f32), gptr(f32), gptr(f32), gptr(i32), gptr(i32)])
    x, y, out, outi, _ = k.args
    b = k.b
    t = b.sreg("tid.x", i32)
    base = b.binary("mul", t, k.const(i32, N))
    idx = [b.binary("add", base, k.const(i32, j)) for j in range(N)]
    xs = [k.load_at(x, i) for i in idx]
    ys = [k.load_at(y, i) for i in idx]
    prods = [b.binary("mul", a, c) for a, c in zip(xs, ys)]            # a run of mul f32
    sums = [b.binary("add", p, c) for p, c in zip(prods, ys)]          # reads the run before
    exps = [b.unary("math.exp2", s, {"approx": True}) for s in sums]    # .approx.ftz
    logs = [b.unary("math.log2", a) for a in xs]
    halves = [b.cast(e, bf16) for e in exps]                          # f32 -> bf16
    wide = [b.cast(h, f32) for h in halves]
    f16s = [b.cast(s, f16) for s in sums]
    ints = [b.cast(s, i32) for s in sums]                              # cvt.rzi.sat
    less = [b.cmp("lt", a, c) for a, c in zip(xs, ys)]
    unord = [b.cmp("one", a, c) for a, c in zip(xs, ys)]
    picks = [b.select(c, a, d) for c, a, d in zip(less, wide, logs)]
    fmas = [b.fma(a, c, d) for a, c, d in zip(xs, ys, picks)]
    chain = xs[0]
    for c in ys:                                                       # dependent: never a run
        chain = b.binary("max", chain, c)
    mixed = []
    for a, c in zip(xs, ys):                                           # interleaved signatures
        mixed.append(b.binary("sub", a, c))
        mixed.append(b.binary("min", a, c))
    rows = [fmas, [b.cast(h, f32) for h in f16s], mixed[:N], mixed[N:], [chain] * N]
    for r, vals in enumerate(rows):
        for j, v in enumerate(vals):
            k.store_at(out, b.binary("add", b.binary("mul", t, k.const(i32, N * len(rows))),
                                     k.const(i32, r * N + j)), v)
    for j, (v, u) in enumerate(zip(ints, unord)):
        at = b.binary("add", b.binary("mul", t, k.const(i32, 2 * N)), k.const(i32, 2 * j))
        k.store_at(outi, at, v)
        k.store_at(outi, b.binary("add", at, k.const(i32, 1)), b.cast(u, i32))
    return k.finish(), len(rows)


def _inputs():
    rng = np.random.default_rng(7)
    n = N * THREADS
    x = (rng.standard_normal(n) * 40).astype(np.float32)
    y = (rng.standard_normal(n) * 3).astype(np.float32)
    special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-42, -1e-40, 3e38, -3e38, 1.0,
                        -150.0, 2.0 ** -126, 130.0, -0.5, 1e10, -1e10], np.float32)
    x[: special.size] = special
    y[5: 5 + special.size] = special[::-1]
    return x, y


def _run(monkeypatch, min_run):
    made = []
    real = compiler._run_step
    monkeypatch.setattr(compiler, "MIN_RUN", min_run)
    monkeypatch.setattr(compiler, "_run_step", lambda run: made.append(len(run)) or real(run))
    module, rows = _build()
    x, y = _inputs()
    out = np.zeros(THREADS * N * rows, np.float32)
    outi = np.zeros(THREADS * 2 * N, np.int32)
    launch(module, (1,), (THREADS,), [x, y, out, outi, np.zeros(1, np.int32)])
    return out, outi, made


def test_runs_give_the_bits_of_one_op_at_a_time(monkeypatch):
    shortest = compiler.MIN_RUN
    out, outi, made = _run(monkeypatch, shortest)
    alone, alone_i, none = _run(monkeypatch, 10 ** 9)
    assert none == [] and made, made
    # the N-long runs of each batched kind, the interleaved sub / min regrouped into two (the
    # address arithmetic makes runs too); the max chain (each reads the one before) forms none
    assert made.count(N) >= 14 and all(n >= shortest for n in made)
    assert out.view(np.uint32).tobytes() == alone.view(np.uint32).tobytes()
    assert outi.tobytes() == alone_i.tobytes()
    assert np.isnan(out).any() and np.isinf(out).any()      # the specials reached the outputs


def test_a_run_with_operands_of_another_dtype_runs_op_by_op():
    """The compiler groups by IR types; should a register's dtype differ from its run's first
    (never in a well-formed frame), the steps run one by one and give their own results."""
    def step(a, b, r):
        def add(s, w):
            s[r] = np.add(s[a], s[b])
        add.lanewise = (("arith.add", (), (f32, f32, f32)), np.add, (a, b), r)
        return add

    steps = [step(0, 1, 2 + j) for j in range(4)]
    (run,) = compiler._batch_runs(steps)
    frame = [np.arange(32, dtype=np.float32), np.ones(32, np.float32)] + [None] * 4
    run(frame, None)
    assert all(v.dtype == np.float32 and v.shape == (32,) for v in frame[2:])
    frame[1] = np.ones(32, np.float64)
    run(frame, None)
    assert all(v.dtype == np.float64 for v in frame[2:])
    # the second reads the first's result: it moves after the other three, which join the
    # first in a run of 4; the steps give what they give one by one
    five = [step(0, 1, 2), step(2, 1, 3), step(0, 1, 4), step(0, 1, 5), step(0, 1, 6)]
    grouped = compiler._batch_runs(five)
    assert len(grouped) == 2 and grouped[1] is five[1]
    frame = [np.arange(32, dtype=np.float32), np.full(32, 0.5, np.float32)] + [None] * 5
    alone = list(frame)
    for f in grouped:
        f(frame, None)
    for f in five:
        f(alone, None)
    assert all(np.array_equal(a, b) for a, b in zip(frame[2:], alone[2:]))


def test_i1_arithmetic_is_not_lanewise():
    """binary_fn of i1 holds a 32-lane constant (``& one``): its steps are never batched."""
    k = KernelBuilder("b", [gptr(i1)])
    a = k.b.cmp("lt", k.b.sreg("tid.x", i32), k.const(i32, 3))
    v = k.b.binary("xor", a, a)
    k.store_at(k.args[0], k.b.sreg("tid.x", i32), v)
    m = k.finish()
    cx = compiler.FunctionCompiler(compiler.compile_module(m), m.kernels[0],
                                   compiler.CompiledFunction(m.kernels[0]))
    xor = next(op for op in m.kernels[0].walk() if op.name == "arith.xor")
    assert not hasattr(cx.step(xor), "lanewise")
