"""The wgmma ops in the IR: printer text and verifier errors (expected vs got)."""
import pytest

from warpstage.ir import (Builder, Function, Module, PointerType, VerificationError, bf16, f16, f32,
                          i1, i32, print_module, u32, u64, verify)


def kernel_module():
    m = Module()
    f = m.add(Function("k", [PointerType(bf16, "shared"), i1], is_kernel=True))
    return m, f, Builder(f.body.block)


def mma_attrs(**kw):
    attrs = {"n": 8, "type_a": "bf16", "type_b": "bf16", "type_d": "f32", "a_regs": False,
             "scale_d": True, "scale_a": 1, "scale_b": 1, "tnsp_a": 0, "tnsp_b": 0}
    attrs.update(kw)
    return attrs


def build(body):
    m, f, b = kernel_module()
    body(b, *f.args)
    b.return_()
    return m


def good(b, tile, flag):
    desc = b.op("wgmma.descriptor", (tile,), (u64,),
                {"lbo": 16, "sbo": 1024, "swizzle": 128, "base_offset": 0}).result
    zero = b.constant(f32, 0.0)
    acc = b.op("wgmma.fence", [zero] * 4, [f32] * 4).results
    acc = b.op("wgmma.mma_async", [desc, desc, flag, *acc], [f32] * 4,
               mma_attrs(scale_d="dynamic")).results
    b.op("wgmma.commit_group")
    b.op("wgmma.wait_group", acc, [f32] * 4, {"n": 0})


def test_well_formed_wgmma_ops_verify_and_print():
    m = build(good)
    verify(m)
    text = print_module(m)
    assert ("wgmma.descriptor %0 {base_offset = 0, lbo = 16, sbo = 1024, swizzle = 128} : u64"
            in text)
    assert 'wgmma.mma_async' in text and 'scale_d = "dynamic"' in text
    assert "wgmma.wait_group" in text and "{n = 0}" in text


def bad(body):
    with pytest.raises(VerificationError) as ei:
        verify(build(body))
    return str(ei.value)


def mma(b, tile, flag, operands=None, results=(f32,) * 4, **kw):
    desc = b.op("wgmma.descriptor", (tile,), (u64,),
                {"lbo": 16, "sbo": 1024, "swizzle": 0, "base_offset": 0}).result
    zero = b.constant(f32, 0.0)
    ops = operands(b, desc, zero) if operands else [desc, desc, zero, zero, zero, zero]
    b.op("wgmma.mma_async", ops, list(results), mma_attrs(**kw))


@pytest.mark.parametrize("body, message", [
    (lambda b, t, p: mma(b, t, p, n=12), "n must be a multiple of 8 in [8, 256], got 12"),
    (lambda b, t, p: mma(b, t, p, n=264), "got 264"),
    (lambda b, t, p: mma(b, t, p, type_a="f32", type_b="f32"),
     "attribute type_a must be one of ('f16', 'bf16', 'e4m3', 'e5m2'), got 'f32'"),
    (lambda b, t, p: mma(b, t, p, type_b="f16"), "type_a and type_b must be equal"),
    (lambda b, t, p: mma(b, t, p, scale_a=True),
     "attribute scale_a must be one of (1, -1), got True"),
    (lambda b, t, p: mma(b, t, p, tnsp_b=2), "attribute tnsp_b must be one of (0, 1), got 2"),
    (lambda b, t, p: mma(b, t, p, scale_d=1), "attribute scale_d must be one of (True, False, "
                                              "'dynamic'), got 1"),
    (lambda b, t, p: mma(b, t, p, results=(f32,) * 3), "expected 4 f32 results (m64n8: n/2 per "
                                                       "thread)"),
    (lambda b, t, p: mma(b, t, p, operands=lambda b, d, z: [d, d, z, z]),
     "expected A (1 operand(s)), B, and 4 accumulator operands (none only with scale_d False), "
     "got 4 operands"),
    (lambda b, t, p: mma(b, t, p, operands=lambda b, d, z: [d, d]), "got 2 operands"),
    (lambda b, t, p: mma(b, t, p, operands=lambda b, d, z: [z, d, z, z, z, z]),
     "expected the A descriptor u64, got f32"),
    (lambda b, t, p: mma(b, t, p, scale_d="dynamic",
                         operands=lambda b, d, z: [d, d, b.constant(i32, 1), z, z, z, z]),
     "expected the scale_d predicate i1, got i32"),
    (lambda b, t, p: mma(b, t, p, a_regs=True, tnsp_a=1,
                         operands=lambda b, d, z: [z] * 8 + [d, z, z, z, z]),
     "tnsp_a must be 0 when A comes from registers"),
    (lambda b, t, p: mma(b, t, p, a_regs=True,
                         operands=lambda b, d, z: [z] * 8 + [d, z, z, z, z]),
     "expected 8 bf16 A-fragment values, got (f32, f32"),
    (lambda b, t, p: mma(b, t, p, type_d="f16"), "expected f16 accumulators, got (f32, f32"),
    (lambda b, t, p: mma(b, t, p, a_regs="packed",
                         operands=lambda b, d, z: [z] * 4 + [d, z, z, z, z]),
     "expected 4 u32 A-fragment registers (pairs of bf16), got (f32, f32"),
    (lambda b, t, p: mma(b, t, p, a_regs="packed",
                         operands=lambda b, d, z: [b.constant(u32, 0)] * 8 + [d, z, z, z, z]),
     "expected A (4 operand(s)), B, and 4 accumulator operands"),
    (lambda b, t, p: mma(b, t, p, a_regs="pairs"),
     "attribute a_regs must be one of (True, False, 'packed'), got 'pairs'"),
    (lambda b, t, p: b.op("arith.cvt_pack", (b.constant(f32, 1.0), b.constant(f16, 1.0)), (u32,),
                          {"to": "bf16"}), "expected (f32, f32) -> u32"),
    (lambda b, t, p: b.op("arith.cvt_pack", (b.constant(f32, 1.0),) * 2, (u32,), {"to": "f32"}),
     "attribute to must be one of ('bf16', 'f16'), got 'f32'"),
    (lambda b, t, p: b.op("wgmma.descriptor", (t,), (u64,), {"lbo": 24, "sbo": 0, "swizzle": 0,
                                                             "base_offset": 0}),
     "lbo must be a multiple of 16 in [0, 262144), got 24"),
    (lambda b, t, p: b.op("wgmma.descriptor", (t,), (u64,), {"lbo": 0, "sbo": 0, "swizzle": 16,
                                                             "base_offset": 0}),
     "attribute swizzle must be one of (0, 128, 64, 32), got 16"),
    (lambda b, t, p: b.op("wgmma.descriptor", (t,), (u64,), {"lbo": 0, "sbo": 0, "swizzle": 0,
                                                             "base_offset": 8}),
     "base_offset must be an int in [0, 8), got 8"),
    (lambda b, t, p: b.op("wgmma.descriptor", (p,), (u64,), {"lbo": 0, "sbo": 0, "swizzle": 0,
                                                             "base_offset": 0}),
     "expected a shared pointer operand, got i1"),
    (lambda b, t, p: b.op("wgmma.wait_group", (), (), {"n": 8}),
     "wait_group needs a static count of pending groups in [0, 8), got 8"),
    (lambda b, t, p: b.op("wgmma.fence", (p,), (i1,)), "passes through 32-bit or 16-bit registers"),
    (lambda b, t, p: b.op("wgmma.fence", (b.constant(f16, 1.0),), (f32,)),
     "result types must equal the operand types"),
    (lambda b, t, p: b.op("wgmma.commit_group", (p,)), "takes no operands"),
])
def test_verifier_errors(body, message):
    assert message in bad(body)


def test_packed_a_fragment_verifies_and_prints():
    def body(b, tile, flag):
        desc = b.op("wgmma.descriptor", (tile,), (u64,),
                    {"lbo": 16, "sbo": 1024, "swizzle": 128, "base_offset": 0}).result
        one = b.constant(f32, 1.0)
        regs = [b.cvt_pack(one, one, "bf16") for _ in range(4)]
        acc = b.op("wgmma.fence", [b.constant(f32, 0.0)] * 4 + regs, [f32] * 4 + [u32] * 4).results
        b.op("wgmma.mma_async", list(acc[4:]) + [desc] + list(acc[:4]), [f32] * 4,
             mma_attrs(a_regs="packed"))
    m = build(body)
    verify(m)
    text = print_module(m)
    assert 'a_regs = "packed"' in text and 'arith.cvt_pack' in text and 'to = "bf16"' in text


@pytest.mark.parametrize("n", [8, 16, 72, 256])
def test_accumulator_tv_is_the_ptx_isa_register_fragment(n):
    # PTX ISA "Register Fragments", wgmma D: register v of lane l of warp w holds row
    # 16 w + l / 4 + 8 ((v / 2) % 2), column 8 (v / 4) + 2 (l % 4) + v % 2
    from warpstage.ir.ops_wgmma import accumulator_tv

    (t_shape, v_shape), (t_stride, v_stride) = accumulator_tv(n)

    def index(x, shape, stride):
        out = 0
        for s, d in zip(shape, stride):
            out, x = out + (x % s) * d, x // s
        return out

    seen = set()
    for t in range(128):
        w, lane = divmod(t, 32)
        for v in range(n // 2):
            row = 16 * w + lane // 4 + 8 * ((v // 2) % 2)
            col = 8 * (v // 4) + 2 * (lane % 4) + v % 2
            idx = index(t, t_shape, t_stride) + index(v, v_shape, v_stride)
            assert (idx % 64, idx // 64) == (row, col), (t, v)
            seen.add(idx)
    assert seen == set(range(64 * n))
