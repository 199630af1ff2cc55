"""Lowering of ``nvvm``, ``gpu``, ``ptr`` and ``mem`` ops: special registers, barriers, printf,
trap, pointer arithmetic, loads and stores.

- nvvm.sreg {reg}: ``llvm.nvvm.read.ptx.sreg.<reg>`` (PTX ISA "Special Registers"), e.g.
  ``mov.u32 %r, %tid.x``. clock/clock64/globaltimer intrinsics are not CSE'd or hoisted by LLVM.
- nvvm.barrier {id?, count?} (id?): ``bar.sync id`` / ``bar.sync id, count`` (id an immediate, or a
  register when it is the op's dynamic operand) through
  ``llvm.nvvm.barrier.cta.sync.aligned.all`` / ``.count`` (PTX ISA "Parallel Synchronization
  and Communication Instructions": ``bar``). The aligned form: all threads of a warp must
  reach the same barrier instruction.
- gpu.printf {format}: CUDA's ``vprintf(fmt, args)``; the arguments are packed into a stack
  struct, each field naturally aligned, after C's default argument promotions: bool, 8- and
  16-bit ints widen to 32 bits (sign- or zero-extended by signedness), every float becomes a
  double. The format string is a private constant in global memory.
- gpu.trap: ``llvm.trap`` -> PTX ``trap`` (PTX ISA "Miscellaneous Instructions"): aborts the
  kernel; the launch reports an error.
- ptr.offset (p, i): ``p + i`` elements of p's pointee (GEP); i is sign-extended (signed types)
  or zero-extended (unsigned) to 64 bits first (a constant i is extended here, not by a
  ``sext`` instruction). No ``inbounds``: a pointer past its allocation
  is allowed as long as it is not dereferenced.
- ptr.to_int (p): ``ptrtoint`` to i64: the address in p's own state space (a shared pointer
  gives its offset in the CTA's shared window, as ``mov.u32``/``cvta.to.shared`` would).
- mem.load / mem.store: one naturally aligned access in p's address space (``ld.global``,
  ``ld.shared``, ...; PTX ISA ``ld``/``st``). i1 is a byte in memory: stored as 0/1, and any
  non-zero byte loads as true.
"""
from __future__ import annotations

from llvmlite import ir

from ..ir.core import Operation
from ..ir.types import ScalarType
from .context import LoweringContext
from .llvm_types import F64, I8, I32, I64, memory_type

__all__ = ["RULES"]


def _sreg(ctx: LoweringContext, op: Operation) -> list:
    reg = op.attrs["reg"]
    ty = ir.IntType(op.results[0].type.bits)
    return [ctx.call_intrinsic(f"llvm.nvvm.read.ptx.sreg.{reg}", ty, [])]


def _barrier(ctx: LoweringContext, op: Operation) -> list:
    bar_id = ctx.operands(op)[0] if op.operands else ir.Constant(I32, op.attrs.get("id", 0))
    count = op.attrs.get("count")
    if count is None:
        ctx.call_intrinsic("llvm.nvvm.barrier.cta.sync.aligned.all", ir.VoidType(), [bar_id])
    else:
        ctx.call_intrinsic("llvm.nvvm.barrier.cta.sync.aligned.count", ir.VoidType(),
                           [bar_id, ir.Constant(I32, count)])
    return []


def _promote(ctx: LoweringContext, v: ir.Value, t: ScalarType) -> ir.Value:
    """C default argument promotion for a variadic call."""
    b = ctx.builder
    if t.is_float:
        return v if t.bits == 64 else b.fpext(v, F64)
    if t.bits < 32:
        return b.sext(v, I32) if t.is_signed else b.zext(v, I32)
    return v


def _printf(ctx: LoweringContext, op: Operation) -> list:
    b = ctx.builder
    fmt = ctx.global_string(op.attrs["format"])
    args = [_promote(ctx, v, src.type) for v, src in zip(ctx.operands(op), op.operands)]
    if args:
        struct = ir.LiteralStructType([a.type for a in args])
        buf = ctx.entry_alloca(struct)
        for i, a in enumerate(args):
            # llvmlite types an alloca as a typed pointer; a GEP without source_etype then
            # yields a pointer to the field (with it, llvmlite keeps the struct pointer type).
            b.store(a, b.gep(buf, [ir.Constant(I32, 0), ir.Constant(I32, i)]))
    else:
        buf = ir.Constant(ir.PointerType(), None)
    vprintf = ctx.intrinsic("vprintf", I32, [ir.PointerType(), ir.PointerType()])
    b.call(vprintf, [fmt, buf])
    return []


def _trap(ctx: LoweringContext, op: Operation) -> list:
    ctx.call_intrinsic("llvm.trap", ir.VoidType(), [])
    return []


def _ptr_offset(ctx: LoweringContext, op: Operation) -> list:
    p, i = ctx.operands(op)
    it: ScalarType = op.operands[1].type
    b = ctx.builder
    if it.bits < 64 and isinstance(i, ir.Constant):     # folded here: no sext instruction
        value = int(i.constant)
        value = value % (1 << it.bits)
        if it.is_signed and value >= 1 << (it.bits - 1):
            value -= 1 << it.bits
        i = ir.Constant(I64, value)
    elif it.bits < 64:
        i = b.sext(i, I64) if it.is_signed else b.zext(i, I64)
    elem = memory_type(op.operands[0].type.pointee)
    return [b.gep(p, [i], source_etype=elem)]


def _ptr_to_int(ctx: LoweringContext, op: Operation) -> list:
    (p,) = ctx.operands(op)
    return [ctx.builder.ptrtoint(p, I64)]


def _load(ctx: LoweringContext, op: Operation) -> list:
    (p,) = ctx.operands(op)
    t: ScalarType = op.results[0].type
    mt = memory_type(t)
    v = ctx.builder.load(p, typ=mt, align=t.nbytes)
    if t.is_bool:
        v = ctx.builder.icmp_unsigned("!=", v, ir.Constant(I8, 0))
    return [v]


def _store(ctx: LoweringContext, op: Operation) -> list:
    p, v = ctx.operands(op)
    t: ScalarType = op.operands[1].type
    if t.is_bool:
        v = ctx.builder.zext(v, I8)
    ctx.builder.store(v, p, align=t.nbytes)
    return []


RULES = {"nvvm.sreg": _sreg, "nvvm.barrier": _barrier, "gpu.printf": _printf, "gpu.trap": _trap,
         "ptr.offset": _ptr_offset, "ptr.to_int": _ptr_to_int, "mem.load": _load,
         "mem.store": _store}
