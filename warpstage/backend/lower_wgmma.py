"""Lowering of the warpgroup MMA ops to inline PTX (PTX ISA 8.0, "Asynchronous Warpgroup Level
Matrix Multiply-Accumulate Instructions"; LLVM 22 has no wgmma intrinsics).

Every asm is ``sideeffect`` with a memory clobber, so LLVM keeps shared-memory stores before an
mma_async and does not move memory accesses across fences and waits:

- wgmma.fence (*vals): ``wgmma.fence.sync.aligned;``. The values are tied through the asm
  (``=f,...,0,1,...``), so every instruction that computes them runs before the fence, as PTX
  requires for registers a later wgmma reads (CUTLASS's ``warpgroup_fence_operand``).
- wgmma.commit_group: ``wgmma.commit_group.sync.aligned;``.
- wgmma.wait_group {n} (*vals): ``wgmma.wait_group.sync.aligned n;`` with the values tied
  through, so no read of an accumulator is scheduled before the wait.
- wgmma.descriptor is not lowered here: ``passes/legalize_wgmma.py`` rewrites it into
  ``ptr.to_int`` and integer ops before the backend sees it.
- wgmma.mma_async: one asm block
  ``{ .reg .pred %ws_p; setp.ne.b32 %ws_p, $s, 0;
  wgmma.mma_async.sync.aligned.m64n<N>k<K>.<dtype>.<atype>.<btype> {d...}, a, b, %ws_p,
  scale_a, scale_b[, tnsp_a, tnsp_b]; }`` (K 16 for f16/bf16, 32 for e4m3/e5m2, whose form has
  no transpose immediates; tnsp_a only with A from shared memory) where the accumulators are
  outputs ``=f`` (f32) or
  ``=r`` (f16, two per 32-bit register) tied to their inputs (``+f`` in CUDA terms; none when
  scale_d is static False), ``a`` is an ``l`` descriptor or four ``r`` registers each packing two
  f16/bf16 (``<2 x half>``/``<2 x bfloat>`` bitcast to i32; element 2i in the low half; with
  ``a_regs`` "packed" the four u32 operands as they are, so nothing is packed here), ``b``
  an ``l`` descriptor, and scale-d a predicate set from an ``r`` operand (PTX requires a
  predicate there; an immediate is not the same instruction).
"""
from __future__ import annotations

from llvmlite import ir

from ..ir.ops_wgmma import FP8_TYPES, a_operand_count, mma_k
from .context import LoweringContext
from .llvm_types import I32, aggregate_type, llvm_type

__all__ = ["RULES"]

_VOID = ir.VoidType()
_CONSTRAINT = {"f32": "f", "i32": "r", "u32": "r", "f16": "h", "bf16": "h"}


def _asm(ctx: LoweringContext, ret: ir.Type, text: str, constraints: list, args) -> ir.Value:
    constraints = ",".join(constraints + ["~{memory}"])
    ftype = ir.FunctionType(ret, [a.type for a in args])
    return ctx.builder.asm(ftype, text, constraints, list(args), side_effect=True)


def _tied(ctx: LoweringContext, text: str, values, types) -> list:
    """``text`` as an asm whose outputs are ``values`` tied to themselves: returns the values
    as they are after the asm (LLVM cannot move their computation or uses across it).
    Consecutive 16-bit values of one type travel packed in pairs (``=r``), as wgmma reads them,
    so no packing instruction lands between a fence and the wgmma (ptxas would inject a
    ``warpgroup.arrive``, C7519) or between a wgmma and its wait (C7517)."""
    if not values:
        _asm(ctx, _VOID, text, [], [])
        return []
    regs, slots, i = [], [], 0          # slots: (register index, half or None) per value
    while i < len(values):
        t = types[i]
        if t.bits == 16 and i + 1 < len(values) and types[i + 1] == t:
            regs.append((_pack(ctx, values[i], values[i + 1]), "r"))
            slots += [(len(regs) - 1, 0), (len(regs) - 1, 1)]
            i += 2
        else:
            regs.append((values[i], _CONSTRAINT[t.name]))
            slots.append((len(regs) - 1, None))
            i += 1
    n = len(regs)
    out = [f"={c}" for _, c in regs]
    args = [v for v, _ in regs]
    ret = args[0].type if n == 1 else aggregate_type(ctx.module, [v.type for v in args])
    r = _asm(ctx, ret, text, out + [str(k) for k in range(n)], args)
    after = [r] if n == 1 else [ctx.builder.extract_value(r, k) for k in range(n)]
    unpacked: dict = {}
    results = []
    for (k, half), v in zip(slots, values):
        if half is None:
            results.append(after[k])
        else:
            if k not in unpacked:
                unpacked[k] = _unpack(ctx, after[k], v.type)
            results.append(unpacked[k][half])
    return results


def _fence(ctx, op):
    return _tied(ctx, "wgmma.fence.sync.aligned;", ctx.operands(op),
                 [v.type for v in op.operands])


def _commit(ctx, op):
    _asm(ctx, _VOID, "wgmma.commit_group.sync.aligned;", [], [])
    return []


def _wait(ctx, op):
    return _tied(ctx, f"wgmma.wait_group.sync.aligned {op.attrs['n']};", ctx.operands(op),
                 [v.type for v in op.operands])


def _pack(ctx: LoweringContext, lo: ir.Value, hi: ir.Value) -> ir.Value:
    """Two 16-bit floats in one 32-bit register, ``lo`` in bits 0-15 (PTX's packing order)."""
    b = ctx.builder
    vec = ir.Constant(ir.VectorType(lo.type, 2), None)
    vec = b.insert_element(vec, lo, ir.Constant(I32, 0))
    vec = b.insert_element(vec, hi, ir.Constant(I32, 1))
    return b.bitcast(vec, I32)


def _unpack(ctx: LoweringContext, reg: ir.Value, t) -> list:
    b = ctx.builder
    vec = b.bitcast(reg, ir.VectorType(t, 2))
    return [b.extract_element(vec, ir.Constant(I32, i)) for i in range(2)]


def _mma(ctx, op):
    a = op.attrs
    n, d_type = a["n"], a["type_d"]
    vals = ctx.operands(op)
    n_a = a_operand_count(a)
    a_vals, b_desc = vals[:n_a], vals[n_a]
    rest = vals[n_a + 1:]
    if a["scale_d"] == "dynamic":
        scale_d, d_in = ctx.builder.zext(rest[0], I32), rest[1:]
    else:
        scale_d, d_in = ir.Constant(I32, int(a["scale_d"])), rest
    if a["a_regs"] is True:
        a_ops = [_pack(ctx, a_vals[2 * i], a_vals[2 * i + 1]) for i in range(4)]
    else:
        a_ops = a_vals
    if d_type == "f16":                      # n/2 halves in n/4 registers
        d_ops = [_pack(ctx, d_in[2 * i], d_in[2 * i + 1]) for i in range(len(d_in) // 2)]
        n_regs, reg_c, reg_t = n // 4, "r", I32
    else:
        d_ops, n_regs, reg_c, reg_t = d_in, n // 2, "f", llvm_type(op.results[0].type)
    k = n_regs
    d_text = ", ".join(f"${i}" for i in range(n_regs))
    if a["a_regs"]:
        a_text = "{" + ", ".join(f"${k + i}" for i in range(4)) + "}"
        k += 4
    else:
        a_text = f"${k}"
        k += 1
    b_text, s_text = f"${k}", f"${k + 1}"
    tail = [str(a["scale_a"]), str(a["scale_b"])]
    if a["type_a"] not in FP8_TYPES:
        tail += ([] if a["a_regs"] else [str(a["tnsp_a"])]) + [str(a["tnsp_b"])]
    kk = mma_k(a["type_a"])
    text = ("{\n\t.reg .pred %ws_p;\n\t" f"setp.ne.b32 %ws_p, {s_text}, 0;\n\t"
            f"wgmma.mma_async.sync.aligned.m64n{n}k{kk}.{d_type}.{a['type_a']}.{a['type_b']} "
            f"{{{d_text}}}, {a_text}, {b_text}, %ws_p, {', '.join(tail)};\n\t}}")
    constraints = ([f"={reg_c}"] * n_regs + ["r" if a["a_regs"] else "l"] * len(a_ops)
                   + ["l", "r"] + [str(i) for i in range(len(d_ops))])
    ret = aggregate_type(ctx.module, [reg_t] * n_regs)
    r = _asm(ctx, ret, text, constraints, list(a_ops) + [b_desc, scale_d] + list(d_ops))
    regs = [ctx.builder.extract_value(r, i) for i in range(n_regs)]
    if d_type == "f16":
        half = llvm_type(op.results[0].type)
        return [v for reg in regs for v in _unpack(ctx, reg, half)]
    return regs


RULES = {"wgmma.fence": _fence, "wgmma.commit_group": _commit, "wgmma.wait_group": _wait,
         "wgmma.mma_async": _mma}
