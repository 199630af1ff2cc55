"""The mma ops in the IR: printer text, and verifier errors (expected vs got) for wrong operand
counts, types, combinations and pointers."""
import pytest

from warpstage.ir import (Builder, Function, Module, PointerType, VerificationError, bf16, f16,
                          f32, i8, i16, i32, print_module, u8, verify)
from warpstage.ir.ops_mma import COMBOS, FRAGMENT_SIZES, AB_TYPES, ACC_TYPES


def module():
    m = Module()
    f = m.add(Function("k", [PointerType(f32), i32], is_kernel=True))
    return m, f, Builder(f.body.block)


def values(b, t, n):
    return [b.constant(t, j) for j in range(n)]


def mma(b, shape, ab, acc, counts=None, ta=None, tc=None, tr=None):
    na, nb, nc = counts or FRAGMENT_SIZES[shape, ab]
    ta, tc = ta or AB_TYPES[ab], tc or ACC_TYPES[acc]
    ops = values(b, ta, na + nb) + values(b, tc, nc)
    return b.op("mma.sync", ops, [tr or tc] * nc, {"shape": shape, "ab": ab, "acc": acc})


def finish(m, b):
    b.return_()
    verify(m)
    return m


@pytest.mark.parametrize("shape,ab,acc", sorted(COMBOS))
def test_every_supported_combination_verifies(shape, ab, acc):
    m, f, b = module()
    mma(b, shape, ab, acc)
    finish(m, b)


def test_printed_form():
    m, f, b = module()
    smem = b.ptr_cast(b.smem_base(), bf16)
    frag = b.op("mma.ldmatrix", (smem,), [bf16] * 2, {"num": 1, "trans": True}).results
    b.op("mma.stmatrix", [smem] + frag, (), {"num": 1, "trans": False})
    mma(b, "m16n8k8", "bf16", "f32")
    text = print_module(finish(m, b))
    assert 'mma.ldmatrix %3 {num = 1, trans = true} : bf16, bf16' in text
    assert 'mma.stmatrix %3, %4, %5 {num = 1, trans = false}' in text
    assert 'mma.sync' in text and 'ab = "bf16", acc = "f32", shape = "m16n8k8"' in text


@pytest.mark.parametrize("build, message", [
    (lambda b: mma(b, "m16n8k16", "bf16", "f16"),
     "unsupported mma.sync m16n8k16.bf16->f16; supported: m16n8k16.bf16->f32"),
    (lambda b: mma(b, "m16n8k32", "tf32", "f32", counts=(4, 2, 4)),
     "unsupported mma.sync m16n8k32.tf32->f32"),
    (lambda b: mma(b, "m16n8k16", "f16", "f32", counts=(8, 2, 4)),
     "m16n8k16.f16 takes 8 A + 4 B + 4 C elements and gives 4, got 14 operands and 4 results"),
    (lambda b: mma(b, "m16n8k16", "bf16", "f32", ta=f16),
     "A and B elements must be bf16 for .bf16, got (f16, f16"),
    (lambda b: mma(b, "m16n8k32", "s8", "s32", ta=u8), "A and B elements must be i8 for .s8"),
    (lambda b: mma(b, "m16n8k8", "tf32", "f32", tr=f16),
     "C and D elements must be f32 for .f32, got (f32, f32, f32, f32) -> (f16, f16, f16, f16)"),
])
def test_mma_sync_verifier_errors(build, message):
    m, f, b = module()
    build(b)
    with pytest.raises(VerificationError) as ei:
        finish(m, b)
    assert message in str(ei.value)


def smem(b, t):
    return b.ptr_cast(b.smem_base(), t)


@pytest.mark.parametrize("build, message", [
    (lambda b, f: b.op("mma.ldmatrix", (smem(b, bf16),), [bf16] * 6, {"num": 3}),
     "num must be 1, 2 or 4 (8x8 matrices), got 3"),
    (lambda b, f: b.op("mma.ldmatrix", (smem(b, bf16),), [bf16] * 4, {"num": 4}),
     "ldmatrix .x4 takes one pointer and gives 8 elements, got 1 operands and 4 results"),
    (lambda b, f: b.op("mma.ldmatrix", (f.args[0],), [f32] * 2, {"num": 1}),
     "expected a shared pointer to a 16-bit type (f16, bf16, i16, u16), got !ptr<f32, global>"),
    (lambda b, f: b.op("mma.ldmatrix", (smem(b, i8),), [i8] * 2, {"num": 1}),
     "got !ptr<i8, shared>"),
    (lambda b, f: b.op("mma.ldmatrix", (smem(b, i16),), [f16] * 2, {"num": 1}),
     "results must have the pointee type i16, got (f16, f16)"),
    (lambda b, f: b.op("mma.ldmatrix", (smem(b, i16),), [i16] * 2, {"num": 1, "trans": 1}),
     "trans must be a bool, got 1"),
    (lambda b, f: b.op("mma.stmatrix", [smem(b, f16)] + values(b, f16, 2), (), {"num": 2}),
     "stmatrix .x2 takes a pointer and 4 elements and gives nothing, got 3 operands"),
    (lambda b, f: b.op("mma.stmatrix", [smem(b, f16)] + values(b, bf16, 2), (), {"num": 1}),
     "stored elements must have the pointee type f16, got (bf16, bf16)"),
])
def test_ldmatrix_stmatrix_verifier_errors(build, message):
    m, f, b = module()
    build(b, f)
    with pytest.raises(VerificationError) as ei:
        finish(m, b)
    assert message in str(ei.value)
