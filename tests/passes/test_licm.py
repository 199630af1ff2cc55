"""passes/licm.py: pure ops whose operands come from outside a loop move before it; ops on the
induction variable or a body value, memory reads, ops inside an ``if`` of the body, state reads
and trapping divisions stay; the pass runs with the light LLVM pipeline only, and the kernels
it changes compute the same results."""
import numpy as np

import warpstage as ws
from warpstage.ir import parse, print_module, verify
from warpstage.passes.licm import loop_invariant_code_motion
from warpstage.passes.pipeline import pipeline_for


def _licm(text):
    m = parse(text)
    n = loop_invariant_code_motion(m)
    verify(m)
    return m, n


def _top(m):
    return [op.name for op in m.functions[0].body.block.ops]


def _loop(ops, name="scf.for"):
    return [op for op in ops if op.name == name][0]


LOOP = """kernel @k(%0: i32, %1: !ptr<i32, global>) {{
  %2 = arith.constant {{value = 0}} : i32
  %3 = arith.constant {{value = 1}} : i32
  scf.for %2, %0, %3 {{
  ^(%4: i32):
{body}
    scf.yield
  }}
  func.return
}}
"""


def test_an_invariant_chain_moves_before_the_loop_in_order():
    m, n = _licm(LOOP.format(body="""    %5 = arith.constant {value = 136} : i32
    %6 = arith.mul %0, %5 : i32
    %7 = arith.add %6, %0 : i32
    %8 = ptr.offset %1, %7 : !ptr<i32, global>
    mem.store %8, %0 : !ptr<i32, global>, i32"""))
    assert n == 4
    assert _top(m) == ["arith.constant"] * 3 + ["arith.mul", "arith.add", "ptr.offset",
                                                "scf.for", "func.return"]
    body = _loop(m.functions[0].body.block.ops).regions[0].block
    assert [op.name for op in body.ops] == ["mem.store", "scf.yield"]
    assert all(op.parent is m.functions[0].body.block for op in m.functions[0].body.block.ops)


def test_what_depends_on_the_loop_reads_memory_or_is_conditional_stays():
    m, n = _licm(LOOP.format(body="""    %5 = arith.mul %4, %0 : i32
    %6 = arith.add %5, %0 : i32
    %7 = mem.load %1 : i32
    %8 = arith.add %7, %0 : i32
    %9 = arith.cmp %0, %4 {pred = "lt"} : i1
    scf.if %9 {
      %10 = arith.mul %0, %0 : i32
      mem.store %1, %10 : !ptr<i32, global>, i32
      scf.yield
    } {
      scf.yield
    }
    %11 = nvvm.sreg {reg = "clock64"} : i64
    %12 = arith.div %0, %0 : i32
    %13 = arith.rem %0, %3 : i32
    %14 = arith.add %6, %8 : i32
    mem.store %1, %14 : !ptr<i32, global>, i32"""))
    # only the remainder by the constant 1 moves: the rest reads the induction variable (%4),
    # a body value, memory or the clock, or sits in the if, or divides by a dynamic value
    assert n == 1
    body = _loop(m.functions[0].body.block.ops).regions[0].block
    names = [op.name for op in body.ops]
    assert names == ["arith.mul", "arith.add", "mem.load", "arith.add", "arith.cmp", "scf.if",
                     "nvvm.sreg", "arith.div", "arith.add", "mem.store", "scf.yield"]
    assert _top(m).count("arith.rem") == 1
    inner = body.ops[names.index("scf.if")].regions[0].block
    assert [op.name for op in inner.ops] == ["arith.mul", "mem.store", "scf.yield"]


def test_division_by_zero_or_minus_one_stays_float_division_moves():
    m, n = _licm("""kernel @k(%0: i32, %1: f32, %2: !ptr<i32, global>, %3: !ptr<f32, global>) {
  %4 = arith.constant {value = 0} : i32
  %5 = arith.constant {value = 1} : i32
  %6 = arith.constant {value = -1} : i32
  scf.for %4, %0, %5 {
  ^(%7: i32):
    %8 = arith.div %0, %4 : i32
    %9 = arith.div %0, %6 : i32
    %10 = arith.div %1, %1 : f32
    mem.store %2, %8 : !ptr<i32, global>, i32
    mem.store %2, %9 : !ptr<i32, global>, i32
    mem.store %3, %10 : !ptr<f32, global>, f32
    scf.yield
  }
  func.return
}
""")
    assert n == 1 and _top(m).count("arith.div") == 1
    hoisted = [op for op in m.functions[0].body.block.ops if op.name == "arith.div"][0]
    assert hoisted.results[0].type.is_float


def test_nested_loops_hoist_as_far_as_the_operands_allow():
    m, n = _licm(LOOP.format(body="""    scf.for %2, %0, %3 {
    ^(%5: i32):
      %6 = arith.mul %0, %0 : i32
      %7 = arith.mul %4, %0 : i32
      %8 = arith.add %5, %7 : i32
      mem.store %1, %6 : !ptr<i32, global>, i32
      mem.store %1, %8 : !ptr<i32, global>, i32
      scf.yield
    }"""))
    # %0 * %0 leaves both loops (counted twice), %4 * %0 the inner one only
    assert n == 3
    fn = m.functions[0]
    assert _top(m).count("arith.mul") == 1
    outer = _loop(fn.body.block.ops).regions[0].block
    assert [op.name for op in outer.ops] == ["arith.mul", "scf.for", "scf.yield"]
    assert outer.ops[0].operands[0] is outer.args[0]
    inner = outer.ops[1].regions[0].block
    assert [op.name for op in inner.ops] == ["arith.add", "mem.store", "mem.store", "scf.yield"]


def test_a_while_loop_hoists_from_both_regions_but_not_its_carried_values():
    m, n = _licm("""kernel @k(%0: i32, %1: !ptr<i32, global>) {
  %2 = arith.constant {value = 1} : i32
  %3 = scf.while %0 : i32 {
  ^(%4: i32):
    %5 = arith.add %0, %2 : i32
    %6 = arith.cmp %4, %5 {pred = "lt"} : i1
    scf.condition %6, %4
  } {
  ^(%7: i32):
    %8 = arith.mul %0, %0 : i32
    %9 = arith.add %7, %8 : i32
    scf.yield %9
  }
  mem.store %1, %3 : !ptr<i32, global>, i32
  func.return
}
""")
    assert n == 2
    assert _top(m) == ["arith.constant", "arith.add", "arith.mul", "scf.while", "mem.store",
                       "func.return"]


def test_the_pass_runs_with_the_light_pipeline_only():
    assert loop_invariant_code_motion not in pipeline_for("default")
    assert loop_invariant_code_motion in pipeline_for("light")
    assert [p for p in pipeline_for("light") if p is not loop_invariant_code_motion] == \
        list(pipeline_for("default"))


@ws.kernel
def _strided_sum(x: ws.Tensor, out: ws.Tensor, n: ws.Int32, stride: ws.Int32):
    t = ws.arch.thread_idx()[0]
    acc = 0.0
    for j in range(n):
        base = t * stride + stride // 2        # invariant: leaves the loop with LICM
        acc = acc + x[base + j]
    out[t] = acc


def _loop_ops(ck):
    loops = [op for f in ck.module.functions for top in f.body.block.ops for op in top.walk()
             if op.name == "scf.for"]
    return sum(1 for lp in loops for op in lp.regions[0].block.ops)


def test_a_kernel_computes_the_same_with_the_pass_and_its_loop_holds_fewer_ops():
    x = np.arange(4096, dtype=np.float32) % 97
    n, stride, threads = 5, 16, 32
    spec = (ws.Tensor[ws.Float32, 1], ws.Tensor[ws.Float32, 1], ws.Int32, ws.Int32)
    cks = {p: ws.compile(_strided_sum, *spec, block=(threads, 1, 1), llvm_pipeline=p)
           for p in ("default", "light")}
    assert _loop_ops(cks["light"]) < _loop_ops(cks["default"])
    assert "scf.for" in print_module(cks["light"].module)
    want = np.array([x[t * stride + stride // 2:][:n].sum() for t in range(threads)])
    for p in ("default", "light"):
        out = np.zeros(threads, dtype=np.float32)
        ws.kernel(_strided_sum.fn, llvm_pipeline=p)[1, threads](x, out, n, stride)
        np.testing.assert_array_equal(out, want)


def _store_results(a, b):
    """The end of a kernel that stores the loop's two results ``a`` and ``b`` through %1."""
    return "".join(f"  mem.store %1, {v} : !ptr<i32, global>, i32\n" for v in (a, b)) + \
        "  func.return\n}\n"


def _first_result_forwarded(m, loop):
    """The two stores after ``loop``: the first reads %0 (the loop's first result, unchanged
    in every iteration, forwarded to its initial value), the second the loop's second result."""
    stores = [op for op in m.functions[0].body.block.ops if op.name == "mem.store"]
    assert stores[0].operands[1] is m.functions[0].args[0]
    assert stores[1].operands[1] is loop.results[1]


def test_a_carried_value_passed_on_unchanged_is_its_initial_value_and_its_arithmetic_moves():
    m, n = _licm("""kernel @k(%0: i32, %1: !ptr<i32, global>) {
  %2 = arith.constant {value = 0} : i32
  %3 = arith.constant {value = 1} : i32
  %4, %5 = scf.for %2, %0, %3, %0, %2 : i32, i32 {
  ^(%6: i32, %7: i32, %8: i32):
    %9 = arith.mul %7, %7 : i32
    %10 = arith.add %8, %9 : i32
    scf.yield %7, %10
  }
""" + _store_results("%4", "%5"))
    # %7 is yielded back as it came: it is %0 throughout, so %7 * %7 moves; %8 changes: stays
    assert n == 1
    ops = m.functions[0].body.block.ops
    mul = [op for op in ops if op.name == "arith.mul"][0]
    assert mul.operands[0] is mul.operands[1] is m.functions[0].args[0]
    loop = _loop(ops)
    body = loop.regions[0].block
    assert [op.name for op in body.ops] == ["arith.add", "scf.yield"]
    assert body.ops[0].operands[0] is body.args[2]
    _first_result_forwarded(m, loop)


def test_a_while_value_changed_in_either_region_is_not_forwarded():
    m, n = _licm("""kernel @k(%0: i32, %1: !ptr<i32, global>) {
  %2 = arith.constant {value = 1} : i32
  %3, %4 = scf.while %0, %0 : i32, i32 {
  ^(%5: i32, %6: i32):
    %7 = arith.cmp %5, %6 {pred = "lt"} : i1
    %8 = arith.add %6, %2 : i32
    scf.condition %7, %5, %8
  } {
  ^(%9: i32, %10: i32):
    %11 = arith.mul %9, %9 : i32
    %12 = arith.mul %10, %10 : i32
    scf.yield %9, %12
  }
""" + _store_results("%3", "%4"))
    # the first value is forwarded (both regions pass it on): %9 * %9 moves, and the first
    # result reads %0; the second changes in the before region: %10 * %10 stays
    assert n == 1
    ops = m.functions[0].body.block.ops
    loop = _loop(ops, "scf.while")
    _first_result_forwarded(m, loop)
    after = loop.regions[1].block
    assert [op.name for op in after.ops] == ["arith.mul", "scf.yield"]
    assert after.ops[0].operands[0] is after.args[1]
