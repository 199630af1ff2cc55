"""The IR: printer golden text, verifier errors (expected vs got), builder contracts."""
import pytest

from warpstage import ir
from warpstage.ir import Builder, Function, Module, PointerType, VerificationError, f32, i1, i32, verify


def kernel_module():
    m = Module()
    f = m.add(Function("k", [PointerType(f32), i32], is_kernel=True, attrs={"maxntid": (128, 1, 1)}))
    return m, f, Builder(f.body.block)


GOLDEN = """\
kernel @k(%0: !ptr<f32, global>, %1: i32) attributes {maxntid = [128, 1, 1]} {
  %2 = nvvm.sreg {reg = "tid.x"} : i32
  %3 = arith.cmp %2, %1 {pred = "lt"} : i1
  scf.if %3 {
    %4 = ptr.offset %0, %2 : !ptr<f32, global>
    %5 = mem.load %4 : f32
    %6 = arith.constant {value = 1.0} : f32
    %7 = arith.add %5, %6 : f32
    mem.store %4, %7 : !ptr<f32, global>, f32
    scf.yield
  } {
    scf.yield
  }
  %8 = arith.constant {value = 0} : i32
  %9 = arith.constant {value = 1} : i32
  %10 = arith.constant {value = 0.0} : f32
  %11 = scf.for %8, %1, %9, %10 : f32 {
  ^(%12: i32, %13: f32):
    %14 = arith.cast %12 : f32
    %15 = arith.add %13, %14 : f32
    scf.yield %15
  }
  func.return
}
"""


def test_printer_golden():
    m, f, b = kernel_module()
    p, n = f.args
    t = b.sreg("tid.x", i32)
    op = b.if_(b.cmp("lt", t, n))
    with b.at(op.regions[0].block):
        q = b.ptr_offset(p, t)
        b.store(q, b.binary("add", b.load(q), b.constant(f32, 1.0)))
        b.yield_()
    with b.at(op.regions[1].block):
        b.yield_()
    loop = b.for_(b.constant(i32, 0), n, b.constant(i32, 1), [b.constant(f32, 0)])
    with b.at(loop.regions[0].block):
        iv, acc = loop.regions[0].block.args
        b.yield_([b.binary("add", acc, b.cast(iv, f32))])
    b.return_()
    verify(m)
    assert ir.print_module(m) == GOLDEN


def test_printer_locations_and_string_attrs():
    m, f, b = kernel_module()
    b.loc = ir.Location("kern.py", 12)
    b.printf('x="%d"\n', [f.args[1]])
    b.return_()
    text = ir.print_module(m, locations=True)
    assert 'gpu.printf %1 {format = "x=\\"%d\\"\\n"} : i32 loc("kern.py":12)' in text


@pytest.mark.parametrize("build, message", [
    (lambda b, f: b.op("arith.add", [f.args[1], b.constant(f32, 1.0)], [i32]),
     "expected operands of type i32, got (i32, f32)"),
    (lambda b, f: b.op("arith.cmp", [f.args[1], f.args[1]], [i1], {"pred": "lessthan"}),
     "expected pred in"),
    (lambda b, f: b.op("nvvm.sreg", [], [i32], {"reg": "tid.w"}), "unknown special register 'tid.w'"),
    (lambda b, f: b.op("arith.and", [b.constant(f32, 1.0), b.constant(f32, 2.0)], [f32]),
     "bitwise and needs integer or i1 operands, got f32"),
    (lambda b, f: b.op("mem.store", [f.args[0], f.args[1]]), "expected (ptr<T>, T), got (!ptr<f32, global>, i32)"),
    (lambda b, f: b.op("nvvm.barrier", [], [], {"id": 0, "count": 48}),
     "barrier thread count must be a positive multiple of 32, got 48"),
    (lambda b, f: b.op("no.such_op"), "unknown op"),
])
def test_verifier_errors_state_expected_and_got(build, message):
    m, f, b = kernel_module()
    b.loc = ir.Location("kern.py", 7)
    build(b, f)
    b.return_()
    with pytest.raises(VerificationError) as ei:
        verify(m)
    assert message in str(ei.value)
    assert "in function k" in str(ei.value) and "kern.py:7" in str(ei.value)


def test_verifier_scoping_and_terminators():
    m, f, b = kernel_module()
    op = b.if_(b.cmp("lt", f.args[1], f.args[1]), [i32])
    with b.at(op.regions[0].block):
        inner = b.constant(i32, 1)
        b.yield_([inner])
    with b.at(op.regions[1].block):
        b.yield_([b.constant(i32, 2)])
    b.binary("add", inner, inner)          # `inner` is not visible outside the then region
    b.return_()
    with pytest.raises(VerificationError, match="operand 0 \\(i32\\) is not defined before this op"):
        verify(m)

    m2, f2, b2 = kernel_module()
    op = b2.if_(b2.cmp("lt", f2.args[1], f2.args[1]), [i32])
    with b2.at(op.regions[0].block):
        b2.yield_([])
    with b2.at(op.regions[1].block):
        b2.yield_([b2.constant(i32, 2)])
    b2.return_()
    with pytest.raises(VerificationError, match=r"then region yields \(\), the if gives \(i32\)"):
        verify(m2)

    m3, f3, b3 = kernel_module()
    b3.constant(i32, 1)
    with pytest.raises(VerificationError, match="function body must end in func.return"):
        verify(m3)


def test_call_signature_checked():
    m = Module()
    dev = m.add(Function("dev", [i32], [i32]))
    bd = Builder(dev.body.block)
    bd.return_([dev.args[0]])
    k = m.add(Function("k", [f32], is_kernel=True))
    b = Builder(k.body.block)
    b.op("func.call", [k.args[0]], [i32], {"callee": "dev"})
    b.return_()
    with pytest.raises(VerificationError, match=r"arguments \(f32\) do not match dev\(i32\)"):
        verify(m)


def test_parse_type_round_trips():
    for t in list(ir.SCALAR_TYPES.values()) + [PointerType(f32, "shared"), PointerType(i32)]:
        assert ir.types.parse_type(str(t)) == t
    with pytest.raises(ValueError, match="not an IR type"):
        ir.types.parse_type("float")


def test_types_compare_by_structure_and_hash_alike():
    from warpstage.ir.types import PointerType, ScalarType, bf16, f16, i32, u32
    same = ScalarType("int", 32, "i32")
    assert same == i32 and not (same != i32) and hash(same) == hash(i32)
    assert {i32: "x"}[same] == "x"
    assert bf16 != f16 and i32 != u32 and i32 != "i32"
    assert PointerType(same, "shared") == PointerType(i32, "shared")
    assert hash(PointerType(same, "shared")) == hash(PointerType(i32, "shared"))
    assert PointerType(i32, "shared") != PointerType(i32, "global")
    assert PointerType(i32) != PointerType(u32)
