"""arith and math ops lower for every type they accept, and LLVM's NVPTX backend selects them."""
import pytest

from backend_helpers import KernelBuilder
from warpstage.backend.lower import CONTROL_OPS, RULES
from warpstage.errors import UnsupportedError
from warpstage.ir import OPS, SCALAR_TYPES, PointerType, bf16, f16, f32, f64, i1, i32, i64, u32, \
    u64
from warpstage.ir.ops import BINARY, CMP_PREDICATES, TERMINATORS, UNARY_MATH

TYPES = [i32, u32, i64, f32, f16, bf16]
BITWISE = ("and", "or", "xor", "shl", "shr")


def test_every_primitive_op_has_a_lowering_and_no_legalized_one_does():
    primitive = {n for n, d in OPS.items() if not d.legalized}
    assert primitive == set(RULES) | set(CONTROL_OPS) | set(TERMINATORS)


def binary_kernel(kind, t):
    k = KernelBuilder([PointerType(t), t, t])
    out, a, b = k.args
    k.b.store(out, k.b.binary(kind, a, b))
    return k.finish()


@pytest.mark.parametrize("kind,t", [(k, t) for k in BINARY for t in TYPES
                                    if not (t.is_float and k in BITWISE)], ids=str)
def test_binary_lowers(kind, t):
    ll, ptx = binary_kernel(kind, t)
    assert ".entry k" in ptx


@pytest.mark.parametrize("kind,t,needle", [
    ("div", i32, "div.s32"), ("div", u32, "div.u32"), ("rem", i64, "rem.s64"),
    ("rem", u32, "rem.u32"), ("shr", i32, "shr.s32"), ("shr", u32, "shr.u32"),
    ("shl", i64, "shl.b64"), ("min", f32, "min.f32"), ("max", u32, "max.u32"),
    ("min", i32, "min.s32"), ("div", f32, "div.rn.f32"), ("mul", bf16, "mul.rn.bf16"),
    ("add", f16, "add.rn.f16"), ("floordiv", i32, "div.s32"), ("floordiv", f32, "cvt.rmi.f32.f32"),
    ("mod", i32, "rem.s32"), ("mod", u32, "rem.u32"), ("div", f64, "div.rn.f64"),
])
def test_binary_selects(kind, t, needle):
    _, ptx = binary_kernel(kind, t)
    assert needle in ptx


def test_signed_floordiv_corrects_toward_minus_infinity():
    ll, _ = binary_kernel("floordiv", i32)
    assert "sdiv" in ll and "srem" in ll and "udiv" not in ll
    ll, _ = binary_kernel("floordiv", u32)
    assert "udiv" in ll and "srem" not in ll


@pytest.mark.parametrize("t,needle", [(f32, "copysign.f32"), (f64, "copysign.f64"),
                                      (f16, None), (bf16, None)], ids=str)
def test_copysign_lowers_to_ptx_copysign(t, needle):
    k = KernelBuilder([PointerType(t), t, t])
    out, a, b = k.args
    k.b.store(out, k.b.create("math.copysign", (a, b)).result)
    ll, ptx = k.finish()
    assert "llvm.copysign" in ll
    if needle:
        assert needle in ptx


def test_ordered_not_equal_is_fcmp_one():
    k = KernelBuilder([PointerType(i1), f32, f32])
    out, a, b = k.args
    k.b.store(out, k.b.cmp("one", a, b))
    ll, _ = k.finish()
    assert "fcmp one float" in ll


def test_ptr_to_int_is_ptrtoint_of_the_shared_address():
    k = KernelBuilder([PointerType(u64)])
    (out,) = k.args
    base = k.b.ptr_offset(k.b.smem_base(), k.b.constant(i32, 48))
    k.b.store(out, k.b.create("ptr.to_int", (base,)).result)
    ll, ptx = k.finish()
    assert "ptrtoint" in ll
    assert "mov.b64 \t%rd2, __ws_dynamic_smem;" in ptx and "%rd2, 48;" in ptx


def test_shift_amount_is_clamped_not_poison():
    ll, _ = binary_kernel("shl", i32)
    assert "icmp ult i32" in ll and "select" in ll


@pytest.mark.parametrize("t", TYPES + [i1], ids=str)
@pytest.mark.parametrize("pred", CMP_PREDICATES)
def test_cmp(pred, t):
    k = KernelBuilder([PointerType(i1), t, t])
    out, a, b = k.args
    k.b.store(out, k.b.cmp(pred, a, b))
    ll, ptx = k.finish()
    if t.is_float:
        assert ("fcmp une" if pred == "ne" else "fcmp o") in ll


@pytest.mark.parametrize("t", TYPES + [i1], ids=str)
def test_select_neg_not(t):
    k = KernelBuilder([PointerType(t), i1, t, t])
    out, c, a, b = k.args
    v = k.b.select(c, a, b)
    v = k.b.unary("arith.neg", v) if not t.is_bool else v
    if not t.is_float:
        v = k.b.unary("arith.not", v)
    k.b.store(out, v)
    k.finish()


@pytest.mark.parametrize("src", list(SCALAR_TYPES.values()), ids=str)
def test_cast_to_every_scalar_type(src):
    dsts = list(SCALAR_TYPES.values())
    k = KernelBuilder([src] + [PointerType(d) for d in dsts])
    x, outs = k.args[0], k.args[1:]
    for d, out in zip(dsts, outs):
        k.b.store(out, k.b.cast(x, d))
    ll, ptx = k.finish()
    if src.is_float:
        assert "fptosi.sat" in ll and "fptoui.sat" in ll


@pytest.mark.parametrize("pair", [(i32, f32), (f32, u32), (f16, SCALAR_TYPES["i16"]),
                                  (bf16, f16), (i64, f64), (SCALAR_TYPES["u16"], bf16)],
                         ids=lambda p: f"{p[0]}-{p[1]}")
def test_bitcast(pair):
    src, dst = pair
    k = KernelBuilder([src, PointerType(dst)])
    x, out = k.args
    k.b.store(out, k.b.bitcast(x, dst))
    k.finish()


@pytest.mark.parametrize("t,value,needle", [
    (u32, 4294967295, "i32 -1"), (i64, -2**63, "i64 -9223372036854775808"),
    (f16, 1e6, "half 0x7FF0000000000000"), (bf16, float("nan"), "bfloat 0xR7FC0"),
    (bf16, 1.0, "bfloat 0xR3F80"), (f32, 1e39, "float 0x7FF0000000000000"),
    (i1, True, "i1 true"),
])
def test_constants(t, value, needle):
    k = KernelBuilder([PointerType(t)])
    k.b.store(k.args[0], k.b.constant(t, value))
    ll, _ = k.finish()
    assert needle.lower() in ll.lower()


def math_kernel(name, t, attrs=None):
    k = KernelBuilder([PointerType(t), t])
    out, x = k.args
    if name == "math.fma":
        v = k.b.fma(x, x, x)
    else:
        v = k.b.op(name, (x,), (t,), attrs).result
    k.b.store(out, v)
    return k.finish()


@pytest.mark.parametrize("t", [f32, f16, bf16], ids=str)
@pytest.mark.parametrize("name", [f"math.{m}" for m in UNARY_MATH] + ["math.fma"])
def test_math_lowers(name, t):
    math_kernel(name, t)


@pytest.mark.parametrize("name,needle", [
    ("math.exp2", "ex2.approx.f32"), ("math.log2", "lg2.approx.f32"),
    ("math.sqrt", "sqrt.rn.f32"), ("math.rsqrt", "rsqrt.approx.f32"),
    ("math.sin", "sin.approx.f32"), ("math.cos", "cos.approx.f32"),
    ("math.floor", "cvt.rmi.f32.f32"), ("math.ceil", "cvt.rpi.f32.f32"),
    ("math.abs", "abs.f32"), ("math.fma", "fma.rn.f32"), ("math.exp", "ex2.approx.f32"),
])
def test_math_selects(name, needle):
    _, ptx = math_kernel(name, f32)
    assert needle in ptx


def test_tanh_is_accurate_unless_approx():
    _, ptx = math_kernel("math.tanh", f32)
    assert "tanh.approx" not in ptx and "ex2.approx.f32" in ptx
    _, ptx = math_kernel("math.tanh", f32, {"approx": True})
    assert "tanh.approx.f32" in ptx


def test_half_math_goes_through_f32_but_fma_stays_native():
    _, ptx = math_kernel("math.exp2", bf16)
    assert "cvt.f32.bf16" in ptx and "cvt.rn.bf16.f32" in ptx
    _, ptx = math_kernel("math.fma", f16)
    assert "fma.rn.f16" in ptx


@pytest.mark.parametrize("name", ["math.sqrt", "math.rsqrt", "math.abs", "math.floor",
                                  "math.ceil", "math.fma"])
def test_f64_math(name):
    math_kernel(name, f64)


@pytest.mark.parametrize("name", ["math.exp", "math.sin", "math.log", "math.tanh"])
def test_f64_transcendentals_are_unsupported(name):
    with pytest.raises(UnsupportedError, match="f64.*cast the operand to f32"):
        math_kernel(name, f64)


@pytest.mark.parametrize("t", [i32, i64, u32], ids=str)
def test_integer_abs(t):
    ll, ptx = math_kernel("math.abs", t)
    assert ("abs.s" in ptx) == t.is_signed
