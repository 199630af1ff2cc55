"""passes/dce.py: dead-code elimination by the PURE trait, mark and sweep."""
from warpstage.ir import Builder, Function, Module, f32, i1, i32, print_module, verify
from warpstage.passes.dce import dead_code_elimination


def _kernel():
    m = Module()
    fn = m.add(Function("k", [i32], is_kernel=True))
    return m, fn, Builder(fn.body.block)


def test_dead_pure_chains_go_and_effects_stay():
    m, fn, b = _kernel()
    p = b.smem_base(i32)
    one = b.constant(i32, 1)
    dead = b.binary("add", b.binary("mul", fn.args[0], one), one)   # a dead chain of two
    b.cmp("lt", dead, one)                                          # and its dead user
    b.store(p, b.binary("add", fn.args[0], one))                    # live: feeds a store
    b.return_()
    assert dead_code_elimination(m) == 3
    verify(m)
    text = print_module(m)
    assert "arith.mul" not in text and "arith.cmp" not in text
    assert "mem.store" in text and text.count("arith.add") == 1


def test_a_structured_op_of_pure_ops_with_unused_results_goes():
    m, fn, b = _kernel()
    c = b.constant(i1, True)
    if_op = b.if_(c, [f32])
    for blk in (if_op.regions[0].block, if_op.regions[1].block):
        with b.at(blk):
            b.yield_([b.constant(f32, 2.0)])
    b.return_()
    dead_code_elimination(m)
    verify(m)
    assert "scf.if" not in print_module(m)


def test_a_structured_op_with_an_effect_inside_stays_with_what_it_uses():
    m, fn, b = _kernel()
    p = b.smem_base(i32)
    v = b.binary("add", fn.args[0], fn.args[0])
    if_op = b.if_(b.cmp("lt", v, fn.args[0]), [])
    with b.at(if_op.regions[0].block):
        b.store(p, v)
        b.yield_()
    with b.at(if_op.regions[1].block):
        b.yield_()
    b.return_()
    before = print_module(m)
    assert dead_code_elimination(m) == 0
    assert print_module(m) == before


def test_a_while_loop_stays_even_when_pure():
    m, fn, b = _kernel()
    loop = b.while_([fn.args[0]])
    before_b, after_b = loop.regions[0].block, loop.regions[1].block
    with b.at(before_b):
        b.condition(b.cmp("lt", before_b.args[0], b.constant(i32, 10)), before_b.args)
    with b.at(after_b):
        b.yield_([b.binary("add", after_b.args[0], b.constant(i32, 1))])
    b.return_()
    assert dead_code_elimination(m) == 0
    assert "scf.while" in print_module(m)
