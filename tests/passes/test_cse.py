"""passes/cse.py: repeated pure ops merge within their scope; state reads, distinct constants
and ops out of scope stay apart."""
from warpstage.ir import Builder, Function, Module, f32, i32, i64, print_module, verify
from warpstage.passes.cse import common_subexpressions


def _kernel(*arg_types):
    m = Module()
    fn = m.add(Function("k", list(arg_types) or [i32], is_kernel=True))
    return m, fn, Builder(fn.body.block)


def _count(m, name):
    return sum(1 for f in m.functions for top in f.body.block.ops for op in top.walk()
               if op.name == name)


def test_repeated_arithmetic_and_constants_merge_and_uses_are_rewired():
    m, fn, b = _kernel()
    p = b.smem_base(i32)
    x = fn.args[0]
    first = b.binary("mul", x, b.constant(i32, 136))
    again = b.binary("mul", x, b.constant(i32, 136))        # same op, its own constant
    b.store(p, b.binary("add", first, again))
    b.return_()
    assert common_subexpressions(m) == 2                    # the second constant and mul
    verify(m)
    assert _count(m, "arith.mul") == 1 and _count(m, "arith.constant") == 1
    add = [op for op in fn.body.block.ops if op.name == "arith.add"][0]
    assert add.operands[0] is add.operands[1] is first


def test_different_attributes_operands_or_types_stay_apart():
    m, fn, b = _kernel(f32)
    p = b.smem_base(f32)
    zeros = [b.constant(f32, 0.0), b.constant(f32, -0.0)]   # equal in Python, not in bits
    ints = [b.constant(i32, 1), b.constant(i64, 1)]         # one value, two types
    for v in zeros + [b.cast(v, f32) for v in ints]:
        b.store(p, v)
    b.store(p, b.binary("add", fn.args[0], zeros[0]))
    b.store(p, b.binary("sub", fn.args[0], zeros[0]))       # another op on the same operands
    b.return_()
    assert common_subexpressions(m) == 0
    assert _count(m, "arith.constant") == 4


def test_state_reads_without_operands_never_merge():
    m, fn, b = _kernel()
    p = b.smem_base(i64)
    t0 = b.sreg("clock64", i64)
    t1 = b.sreg("clock64", i64)                             # a later time, not the same value
    b.store(p, b.binary("sub", t1, t0))
    b.return_()
    assert common_subexpressions(m) == 0
    assert _count(m, "nvvm.sreg") == 2


def test_an_outer_op_serves_a_nested_region_but_not_the_other_way():
    m, fn, b = _kernel()
    p = b.smem_base(i32)
    x = fn.args[0]
    outer = b.binary("add", x, x)
    if_op = b.if_(b.cmp("lt", x, outer), [i32])
    with b.at(if_op.regions[0].block):
        inner_same = b.binary("add", x, x)                  # merges with `outer`
        inner_new = b.binary("mul", x, x)                   # only in this region
        b.yield_([b.binary("add", inner_same, inner_new)])
    with b.at(if_op.regions[1].block):
        b.yield_([b.binary("mul", x, x)])                   # not the then-region's mul
    after = b.binary("mul", x, x)                           # nor after the if
    b.store(p, b.binary("add", if_op.results[0], after))
    b.return_()
    assert common_subexpressions(m) == 1
    verify(m)
    assert _count(m, "arith.mul") == 3
    then_add = if_op.regions[0].block.ops[-2]
    assert then_add.operands[0] is outer


def test_the_loop_body_sees_what_precedes_the_loop():
    m, fn, b = _kernel()
    p = b.smem_base(i32)
    x = fn.args[0]
    stride = b.binary("mul", x, b.constant(i32, 8))
    loop = b.for_(b.constant(i32, 0), x, b.constant(i32, 1))
    with b.at(loop.regions[0].block):
        i = loop.regions[0].block.args[0]
        again = b.binary("mul", x, b.constant(i32, 8))      # loop-invariant, already computed
        b.store(b.ptr_offset(p, b.binary("add", again, i)), i)
        b.yield_()
    b.return_()
    removed = common_subexpressions(m)
    verify(m)
    assert removed == 2                     # the body's constant 8 and its mul
    body = loop.regions[0].block
    assert not any(op.name == "arith.mul" for op in body.ops)
    add = [op for op in body.ops if op.name == "arith.add"][0]
    assert add.operands[0] is stride


def test_unused_results_are_left_to_dce_and_the_module_prints_the_same_twice():
    m, fn, b = _kernel()
    p = b.smem_base(i32)
    x = fn.args[0]
    for _ in range(3):
        b.store(p, b.binary("add", x, b.constant(i32, 4)))
    b.return_()
    assert common_subexpressions(m) == 4
    once = print_module(m)
    assert common_subexpressions(m) == 0                   # nothing left to merge
    assert print_module(m) == once
