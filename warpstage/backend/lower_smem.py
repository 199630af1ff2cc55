"""Lowering of the dynamic shared memory base, pointer casts, cp.async and atomics.

- nvvm.smem_base: the module-wide external array ``@__ws_dynamic_smem = external
  addrspace(3) global [0 x i8], align 1024`` -> PTX ``.extern .shared .align 1024 .b8
  __ws_dynamic_smem[]`` (CUDA's ``extern __shared__ __align__(1024) char smem[]``). Its size is
  the launch's dynamic shared memory; the kernel attribute ``dynamic_smem`` (bytes, set by
  ``ws.smem.allocate``) is what the launch must pass. With no static ``.shared`` variables (the
  op set has none) it starts at offset 0 of the CTA's shared window, so the 1024-byte alignment
  holds (PTX ISA "State Spaces": .shared, and "Linking Directives": .extern).
- ptr.cast: nothing (LLVM pointers are opaque; the pointee type lives in the loads/stores).
- cp_async.copy {cache, size}: ``llvm.nvvm.cp.async.<ca|cg>.shared.global.<size>`` ->
  ``cp.async.ca|cg.shared.global [dst], [src], size`` (PTX ISA "Data Movement": cp.async;
  dst and src aligned to ``size``).
- cp_async.commit_group / wait_group {n} / wait_all: ``cp.async.commit_group``,
  ``cp.async.wait_group n``, ``cp.async.wait_all``.
- cp_async.mbarrier_arrive {noinc}: ``cp.async.mbarrier.arrive[.noinc].shared.b64 [bar]``.
- mem.atomic {kind} / mem.atomic_cas: LLVM ``atomicrmw`` / ``cmpxchg`` (monotonic) ->
  ``atom{.space}.<op>.<type>`` (PTX ISA "Parallel Synchronization and Communication": atom):
  relaxed, GPU scope for rmw; the CAS prints as ``atom.relaxed.sys.cas``.
"""
from __future__ import annotations

from llvmlite import ir

from ..ir.core import Operation
from .context import LoweringContext
from .llvm_types import I8, I32

__all__ = ["RULES", "DYNAMIC_SMEM_SYMBOL"]

DYNAMIC_SMEM_SYMBOL = "__ws_dynamic_smem"
_VOID = ir.VoidType()


def _smem_base(ctx: LoweringContext, op: Operation) -> list:
    gv = ctx.module.globals.get(DYNAMIC_SMEM_SYMBOL)
    if gv is None:
        gv = ir.GlobalVariable(ctx.module, ir.ArrayType(I8, 0), DYNAMIC_SMEM_SYMBOL, addrspace=3)
        gv.linkage = "external"
        gv.align = 1024
        # llvmlite types a global as a typed pointer to its array and then refuses to store a
        # float through it; the IR text is the same with an opaque pointer type.
        gv.type = ir.PointerType(addrspace=3)
    return [gv]


def _ptr_cast(ctx: LoweringContext, op: Operation) -> list:
    return ctx.operands(op)


def _cp_async(ctx: LoweringContext, op: Operation) -> list:
    dst, src = ctx.operands(op)
    name = f"llvm.nvvm.cp.async.{op.attrs['cache']}.shared.global.{op.attrs['size']}"
    ctx.call_intrinsic(name, _VOID, [dst, src])
    return []


def _commit_group(ctx, op):
    ctx.call_intrinsic("llvm.nvvm.cp.async.commit.group", _VOID, [])
    return []


def _wait_group(ctx, op):
    ctx.call_intrinsic("llvm.nvvm.cp.async.wait.group", _VOID, [ir.Constant(I32, op.attrs["n"])])
    return []


def _wait_all(ctx, op):
    ctx.call_intrinsic("llvm.nvvm.cp.async.wait.all", _VOID, [])
    return []


def _cp_async_arrive(ctx, op):
    noinc = ".noinc" if op.attrs.get("noinc", True) else ""
    ctx.call_intrinsic(f"llvm.nvvm.cp.async.mbarrier.arrive{noinc}.shared", _VOID,
                       ctx.operands(op))
    return []


_RMW = {"add": ("add", "fadd"), "exch": ("xchg", "xchg"), "and": ("and", None),
        "or": ("or", None), "xor": ("xor", None)}


def _atomic(ctx: LoweringContext, op: Operation) -> list:
    p, v = ctx.operands(op)
    t = op.results[0].type
    kind = op.attrs["kind"]
    if kind in ("min", "max"):
        llop = kind if t.is_signed else "u" + kind
    else:
        llop = _RMW[kind][1 if t.is_float else 0]
    return [ctx.builder.atomic_rmw(llop, p, v, "monotonic")]


def _atomic_cas(ctx: LoweringContext, op: Operation) -> list:
    p, cmp, v = ctx.operands(op)
    pair = ctx.builder.cmpxchg(p, cmp, v, "monotonic", "monotonic")
    return [ctx.builder.extract_value(pair, 0)]


RULES = {"nvvm.smem_base": _smem_base, "ptr.cast": _ptr_cast, "cp_async.copy": _cp_async,
         "cp_async.commit_group": _commit_group, "cp_async.wait_group": _wait_group,
         "cp_async.wait_all": _wait_all, "cp_async.mbarrier_arrive": _cp_async_arrive,
         "mem.atomic": _atomic, "mem.atomic_cas": _atomic_cas}
