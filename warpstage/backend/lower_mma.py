"""Lowering of mma.sync, ldmatrix and stmatrix to NVVM intrinsics (PTX ISA "Warp Level Matrix
Multiply-Accumulate Instructions": mma, ldmatrix, stmatrix).

The intrinsics are LLVM's own (IntrinsicsNVVM.td), so LLVM knows they are convergent (never
moved into or out of divergent control flow) and which memory they touch. Names and signatures
were checked against LLVM 22 (llvmlite 0.50) and the PTX they print:

- mma.sync {shape, ab, acc}: fragments are packed into the 32-bit registers PTX expects, lowest
  element in the low bits: two f16 as ``<2 x half>``; two bf16 as ``<2 x bfloat>`` bitcast to
  ``i32``; four s8/u8 as ``<4 x i8>`` bitcast to ``i32``; a tf32 is its f32 bits as ``i32``.
  Intrinsic per (ab, acc): bf16 -> ``llvm.nvvm.mma.<shape>.row.col.bf16``; f16 with f32 ->
  ``...row.col.f32.f32``; f16 with f16 -> ``...row.col.f16.f16`` (C/D as ``<2 x half>``
  pairs); tf32 -> ``...m16n8k8.row.col.tf32``; s8/u8 -> ``...m16n8k32.row.col.s8|u8``. Each
  prints ``mma.sync.aligned.<shape>.row.col.<acc>.<ab>.<ab>.<acc>``.
- mma.ldmatrix {num, trans}: ``llvm.nvvm.ldmatrix.sync.aligned.m8n8.x<num>[.trans].b16.p3``
  (``ptr addrspace(3)``) -> ``ldmatrix.sync.aligned.m8n8.x<num>[.trans].shared.b16``; each
  returned ``i32`` is split into two 16-bit elements (low half first).
- mma.stmatrix {num, trans}: ``llvm.nvvm.stmatrix.sync.aligned.m8n8.x<num>[.trans].b16.p3`` ->
  ``stmatrix.sync.aligned.m8n8.x<num>[.trans].shared.b16`` (sm_90, PTX ISA 7.8).
"""
from __future__ import annotations

from llvmlite import ir

from ..ir.core import Operation
from ..ir.ops_mma import FRAGMENT_SIZES
from .context import LoweringContext
from .llvm_types import I32, llvm_type

__all__ = ["RULES"]

_VOID = ir.VoidType()


def _vector(ctx: LoweringContext, vals) -> ir.Value:
    """<n x T> holding ``vals`` in order (element 0 is the low bits after a bitcast). Elements
    split from one vector (ldmatrix's words, an f16 accumulator) give that vector back, and a
    list packed before in the same basic block gives its earlier vector: fragment A of a tile
    feeds several mma.sync, and LLVM would otherwise parse and fold each copy."""
    whole = ctx.whole_of(vals)
    if whole is not None and whole.type.element == vals[0].type:
        return whole

    def build():
        vec = ir.Constant(ir.VectorType(vals[0].type, len(vals)), ir.Undefined)
        for j, v in enumerate(vals):
            vec = ctx.builder.insert_element(vec, v, ir.Constant(I32, j))
        return vec
    return ctx.reuse(("vector",) + tuple(id(v) for v in vals), build)


def _word(ctx: LoweringContext, vec: ir.Value) -> ir.Value:
    """``vec`` as the i32 register PTX takes: the word it came from, else a bitcast."""
    word = ctx.word_of(vec)
    if word is not None and word.type == I32:
        return word
    return ctx.reuse(("word", id(vec)), lambda: ctx.builder.bitcast(vec, I32))


def _pack(ctx: LoweringContext, vals: list, ab: str) -> list:
    """A/B fragment elements -> the registers the intrinsic takes."""
    b = ctx.builder
    if ab == "tf32":
        return [b.bitcast(v, I32) for v in vals]
    per = 4 if ab in ("s8", "u8") else 2
    regs = [_vector(ctx, vals[k:k + per]) for k in range(0, len(vals), per)]
    return regs if ab == "f16" else [_word(ctx, r) for r in regs]


def _split(ctx: LoweringContext, regs: list, words=None) -> list:
    """Vectors -> their elements, in order (``words[i]``: the value ``regs[i]`` was bitcast
    from, remembered so that packing the elements again returns it)."""
    out = []
    for i, r in enumerate(regs):
        elements = [ctx.builder.extract_element(r, ir.Constant(I32, j))
                    for j in range(r.type.count)]
        ctx.split_from(r, elements, words[i] if words is not None else None)
        out += elements
    return out


def _intrinsic_name(shape: str, ab: str, acc: str) -> str:
    base = f"llvm.nvvm.mma.{shape}.row.col"
    if ab == "f16":
        return f"{base}.{acc}.{acc}"
    return f"{base}.{ab}"


def _mma(ctx: LoweringContext, op: Operation) -> list:
    shape, ab, acc = op.attrs["shape"], op.attrs["ab"], op.attrs["acc"]
    na, nb, nc = FRAGMENT_SIZES[shape, ab]
    vals = ctx.operands(op)
    a, bv, c = vals[:na], vals[na:na + nb], vals[na + nb:]
    if acc == "f16":
        c_regs = [_vector(ctx, c[k:k + 2]) for k in range(0, nc, 2)]
    else:
        c_regs = list(c)
    args = _pack(ctx, a, ab) + _pack(ctx, bv, ab) + c_regs
    ret = ir.LiteralStructType([r.type for r in c_regs])
    res = ctx.call_intrinsic(_intrinsic_name(shape, ab, acc), ret, args)
    regs = [ctx.builder.extract_value(res, i) for i in range(len(c_regs))]
    return _split(ctx, regs) if acc == "f16" else regs


def _matrix_name(kind: str, op: Operation) -> str:
    trans = ".trans" if op.attrs.get("trans", False) else ""
    return f"llvm.nvvm.{kind}.sync.aligned.m8n8.x{op.attrs['num']}{trans}.b16.p3"


def _ldmatrix(ctx: LoweringContext, op: Operation) -> list:
    (p,) = ctx.operands(op)
    num = op.attrs["num"]
    ret = I32 if num == 1 else ir.LiteralStructType([I32] * num)
    res = ctx.call_intrinsic(_matrix_name("ldmatrix", op), ret, [p])
    words = [res] if num == 1 else [ctx.builder.extract_value(res, i) for i in range(num)]
    pair = ir.VectorType(llvm_type(op.results[0].type), 2)
    return _split(ctx, [ctx.builder.bitcast(w, pair) for w in words], words)


def _stmatrix(ctx: LoweringContext, op: Operation) -> list:
    p, *vals = ctx.operands(op)
    words = [_word(ctx, _vector(ctx, vals[k:k + 2])) for k in range(0, len(vals), 2)]
    ctx.call_intrinsic(_matrix_name("stmatrix", op), _VOID, [p] + words)
    return []


RULES = {"mma.sync": _mma, "mma.ldmatrix": _ldmatrix, "mma.stmatrix": _stmatrix}
