"""The address split (passes/addresses.py): the same address for every access, before and after,
also where an index wraps; shared bases and constant offsets where ranges prove no wrap."""
import math
import random

import pytest

from warpstage.ir import Builder, Function, Module, PointerType, i32, i64, u32, verify
from warpstage.ir.types import bf16
from warpstage.passes.addresses import split_address_constants, value_range
from warpstage.passes.dce import dead_code_elimination

I32_MAX = 2 ** 31 - 1


def _wrap(v, t):
    m = 1 << t.bits
    v %= m
    return v - m if t.is_signed and v >= m >> 1 else v


def addresses(module, args, tid, iv=0):
    """The element address of each mem.store, in order: the IR evaluated with the kernel's
    arguments ``args``, ``tid.x == tid``, every loop's induction variable ``iv`` and the shared
    base at 0, both branches of an if (ints wrap in their type; ptr.offset adds its index
    extended by signedness, as the backend does)."""
    fn = module.kernels[0]
    env = {id(a): v for a, v in zip(fn.args, args)}
    out = []
    for op in fn.walk():
        for r in op.regions:
            env.update((id(a), iv) for a in r.block.args)
        get = [env.get(id(v)) for v in op.operands]
        t = op.results[0].type if op.results else None
        if op.name == "arith.constant":
            val = op.attrs["value"]
        elif op.name == "nvvm.sreg":
            val = tid
        elif op.name == "nvvm.smem_base":
            val = 0
        elif op.name == "arith.cast":
            val = _wrap(get[0], t)
        elif op.name in ("arith.add", "arith.sub", "arith.mul", "arith.rem", "arith.shr"):
            a, b = get
            val = _wrap({"arith.add": lambda: a + b, "arith.sub": lambda: a - b,
                         "arith.mul": lambda: a * b, "arith.shr": lambda: a >> b,
                         "arith.rem": lambda: int(math.fmod(a, b))}[op.name](), t)
        elif op.name == "ptr.offset":
            val = get[0] + get[1]
        elif op.name == "mem.store":
            out.append(get[0])
            continue
        else:
            continue
        env[id(op.results[0])] = val
    return out


def kernel(build, arg_types=(i32,)):
    m = Module()
    fn = m.add(Function("k", list(arg_types), is_kernel=True))
    b = Builder(fn.body.block)
    base = b.smem_base(bf16)
    tid = b.sreg("tid.x", i32)
    value = b.constant(bf16, 1.0)
    build(b, base, tid, fn.args, lambda p: b.store(p, value))
    b.return_()
    verify(m)
    return m


def split(m):
    n = split_address_constants(m)
    dead_code_elimination(m)
    verify(m)
    return n


def offsets(m):
    return [op for op in m.kernels[0].walk() if op.name == "ptr.offset"]


def unrolled_rows(b, base, tid, args, store, rows=4, cols=3):
    """The unrolled tile: ptr(row(r)) + col(c) with row(r) = (tid * 8 + r * 16) * 136."""
    k = lambda v: b.constant(i32, v)
    for r in range(rows):
        row = b.binary("mul", b.binary("add", b.binary("mul", tid, k(8)), k(16 * r)), k(136))
        p = b.ptr_offset(base, row)
        for c in range(cols):
            store(b.ptr_offset(p, b.binary("add", b.binary("mul", tid, k(2)), k(8 * c))))


def test_unrolled_tile_shares_one_base_and_constant_offsets():
    m = kernel(unrolled_rows)
    before = [addresses(m, (0,), t) for t in (0, 5, 1023)]
    assert split(m) == 14           # all but row 0's and its column 0's, the bases
    assert [addresses(m, (0,), t) for t in (0, 5, 1023)] == before
    ops = offsets(m)
    dynamic = [op for op in ops if op.operands[1].owner.name != "arith.constant"]
    assert len(dynamic) == 2        # base + tid * 1088, then + tid * 2 (rows 1-3: dead)
    constants = sorted(op.operands[1].owner.attrs["value"] for op in ops if op not in dynamic)
    assert constants == sorted(r * 16 * 136 + 8 * c for r in range(4) for c in range(3))[1:]


def test_a_possibly_wrapping_index_is_left_alone():
    def build(b, base, tid, args, store):
        n = args[0]                          # a kernel argument: any i32
        for c in (16, 32):
            store(b.ptr_offset(base, b.binary("add", n, b.constant(i32, c))))
    m = kernel(build)
    before = addresses(m, (I32_MAX - 20,), 0)      # n + 32 wraps to a negative index
    assert before[1] < 0
    assert split(m) == 0
    assert addresses(m, (I32_MAX - 20,), 0) == before


def test_ranges_prove_what_they_can():
    m = Module()
    fn = m.add(Function("k", [i32, u32], is_kernel=True))
    b = Builder(fn.body.block)
    k = lambda v: b.constant(i32, v)
    tid = b.sreg("tid.x", i32)
    lane = b.binary("rem", tid, k(32))
    assert value_range(tid) == (0, 1023)
    assert value_range(lane) == (0, 31)
    assert value_range(b.binary("add", b.binary("mul", lane, k(8)), k(-3))) == (-3, 245)
    assert value_range(b.binary("and", fn.args[0], k(0xF0))) == (0, 0xF0)
    assert value_range(b.binary("shr", tid, k(5))) == (0, 31)
    assert value_range(b.binary("mul", fn.args[0], k(2))) == (-2 ** 31, I32_MAX)   # may wrap
    assert value_range(b.binary("sub", fn.args[1], b.constant(u32, 1))) == (0, 2 ** 32 - 1)


def test_chains_through_loops_and_branches_keep_their_addresses():
    def build(b, base, tid, args, store):
        k = lambda v: b.constant(i32, v)
        row = b.ptr_offset(base, b.binary("mul", tid, k(64)))
        loop = b.for_(k(0), args[0], k(1))
        with b.at(loop.regions[0].block):
            iv = loop.regions[0].block.args[0]
            store(b.ptr_offset(row, b.binary("add", iv, k(4))))   # iv: any i32 here
            store(b.ptr_offset(row, k(4)))
            if_ = b.if_(b.cmp("lt", tid, k(32)))
            with b.at(if_.regions[0].block):
                store(b.ptr_offset(row, b.binary("add", b.binary("mul", tid, k(2)), k(6))))
                b.yield_()
            with b.at(if_.regions[1].block):
                store(b.ptr_offset(row, b.binary("sub", k(6), tid)))
                b.yield_()
            b.yield_()
        store(b.ptr_offset(row, b.binary("add", b.binary("mul", tid, k(2)), k(6))))
    m = kernel(build)
    cases = [(t, iv) for t in (0, 31, 1000) for iv in (0, 9, I32_MAX)]
    before = [addresses(m, (0,), t, iv) for t, iv in cases]
    assert split(m) == 3        # row + 4 was already base + constant; the last is out of scope
    assert [addresses(m, (0,), t, iv) for t, iv in cases] == before
    loop = next(op for op in m.kernels[0].body.block.ops if op.name == "scf.for")
    inner = [op for op in loop.walk() if op.name == "ptr.offset"]
    assert sum(op.operands[1].owner.name == "arith.constant" for op in inner) == 3


@pytest.mark.parametrize("seed", range(20))
def test_random_index_expressions_keep_their_addresses(seed):
    rng = random.Random(seed)

    def build(b, base, tid, args, store):
        k = lambda v: b.constant(i32, v)
        pool = [tid, args[0], b.binary("rem", tid, k(32)), b.binary("shr", tid, k(3))]
        for _ in range(12):
            a, c = rng.choice(pool), rng.choice(pool + [k(rng.randint(-300, 300))])
            pool.append(b.binary(rng.choice(("add", "sub", "mul")), a, c))
        p = base
        for _ in range(8):
            p = b.ptr_offset(p if rng.random() < 0.5 else base, rng.choice(pool[4:]))
            store(p)
    m = kernel(build)
    cases = [((n,), t) for n in (0, 7, -5, I32_MAX, -I32_MAX) for t in (0, 1, 511, 1023)]
    before = [addresses(m, *c) for c in cases]
    split(m)
    assert [addresses(m, *c) for c in cases] == before


def test_unsigned_and_64_bit_indices():
    def build(b, base, tid, args, store):
        t64 = b.cast(tid, i64)
        for c in (0, 3, 2 ** 40):
            store(b.ptr_offset(base, b.binary("add", t64, b.constant(i64, c))))
        tu = b.cast(tid, u32)
        for c in (1, 2):
            store(b.ptr_offset(base, b.binary("add", b.binary("mul", tu, b.constant(u32, 4)),
                                             b.constant(u32, c))))
    m = kernel(build)
    before = [addresses(m, (0,), t) for t in (0, 1023)]
    assert split(m) == 4
    assert [addresses(m, (0,), t) for t in (0, 1023)] == before
