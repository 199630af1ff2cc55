"""ir/parser.py: the printer's inverse. (The first module each test file traces is also
round-tripped by tests/conftest.py's check_ir_round_trip; ``pytest --ir-round-trip=all`` does
every module.)"""
import pytest

from warpstage.ir import (Builder, Function, IRParseError, Location, Module, PointerType, f32,
                          i1, i32, parse, print_module, verify)


def _module():
    m = Module()
    dev = m.add(Function("dev", [f32], [f32], attrs={"inline": "always"}))
    b = Builder(dev.body.block)
    b.return_([b.unary("math.exp", dev.args[0])])
    k = m.add(Function("k", [PointerType(f32), i32], is_kernel=True,
                       attrs={"maxntid": (128, 1, 1), "param_names": ["x", "n"]}))
    b = Builder(k.body.block)
    b.loc = Location("user.py", 7)
    x = b.load(k.args[0])
    loop = b.for_(b.constant(i32, 0), k.args[1], b.constant(i32, 1), [x], {"unroll": 2})
    with b.at(loop.regions[0].block):
        iv, acc = loop.regions[0].block.args
        (y,) = b.call(dev, [acc])
        c = b.cmp("lt", iv, b.constant(i32, 3))
        if_op = b.if_(c, [f32])
        with b.at(if_op.regions[0].block):
            b.yield_([y])
        with b.at(if_op.regions[1].block):
            b.yield_([b.constant(f32, float("-inf"))])
        b.yield_(if_op.results)
    b.printf('x = %f "quoted" \\ back\n', [loop.results[0]])
    b.store(k.args[0], loop.results[0])
    b.return_()
    verify(m)
    return m


@pytest.mark.parametrize("locations", [False, True])
def test_parse_inverts_print(locations):
    text = print_module(_module(), locations)
    m = parse(text)
    verify(m)
    assert print_module(m, locations) == text
    if locations:
        assert m.get("k").body.block.ops[0].loc == Location("user.py", 7)


def test_parsed_values_and_attributes_have_their_types():
    m = parse(print_module(_module()))
    k = m.get("k")
    assert k.is_kernel and k.attrs["maxntid"] == (128, 1, 1) and "param_names" not in k.attrs
    printf = next(op for op in k.walk() if op.name == "gpu.printf")
    assert printf.attrs["format"] == 'x = %f "quoted" \\ back\n'
    const = [op for op in k.walk() if op.name == "arith.constant" and op.results[0].type == f32]
    assert const[0].attrs["value"] == float("-inf")
    assert [a.type for a in k.args] == [PointerType(f32), i32]


@pytest.mark.parametrize("text, message", [
    ("kernel k() {\n}\n", "line 1: expected 'kernel @name"),
    ("kernel @k() {\n  %0 = arith.add %7, %7 : i32\n  func.return\n}\n",
     r"line 2: expected an op \(%7 used before it is defined\)"),
    ("kernel @k() {\n  %0 = arith.constant {value = 1} : i32, i32\n  func.return\n}\n",
     "1 results but 2 result types"),
    ("kernel @k(%0: i7) {\n  func.return\n}\n", "not an IR type: 'i7'"),
    ("kernel @k() {\n  func.return\n", "expected '}' closing the block"),
    ("kernel @k(%0: i32) {\n  mem.store %0, %0 : f32, f32\n  func.return\n}\n",
     "operand types that match"),
])
def test_errors_name_the_line_and_what_was_expected(text, message):
    with pytest.raises(IRParseError, match=message):
        parse(text)


def test_a_boolean_attribute_is_not_an_int():
    m = parse("kernel @k() {\n  %0 = arith.constant {value = true} : i1\n  func.return\n}\n")
    v = m.get("k").body.block.ops[0].attrs["value"]
    assert v is True and m.get("k").body.block.ops[0].results[0].type == i1
