"""Lowering of warp collectives, named-barrier arrival, register reallocation, fences and
mbarriers (PTX ISA "Parallel Synchronization and Communication Instructions" and "Data Movement
and Conversion Instructions": shfl.sync, vote.sync, elect.sync, bar.arrive, setmaxnreg,
membar/fence, mbarrier).

NVVM intrinsics where LLVM 22 has them (LLVM knows they are convergent); inline PTX
(``asm sideeffect`` with a memory clobber, so LLVM keeps memory accesses on their side) for
fences and mbarriers:

- nvvm.shfl {mode, width, mask}: ``llvm.nvvm.shfl.sync.<mode>.{i32,f32}(mask, x, b, c)`` ->
  ``shfl.sync.<mode>.b32 d, x, b, c, mask`` with ``c = ((32 - width) << 8) | clamp`` (clamp 0
  for up, 31 otherwise), as CUDA's ``__shfl_*_sync(mask, x, b, width)``.
- nvvm.vote {mode, mask}: ``llvm.nvvm.vote.<mode>.sync`` -> ``vote.sync.<mode>.pred|.b32``.
- nvvm.elect {mask}: ``llvm.nvvm.elect.sync`` -> ``elect.sync %r|%p, mask``; the predicate.
- nvvm.warp_sync {mask}: ``llvm.nvvm.bar.warp.sync`` -> ``bar.warp.sync mask`` (``__syncwarp``).
- nvvm.setmaxnreg {action, count}: ``llvm.nvvm.setmaxnreg.<action>.sync.aligned.u32`` ->
  ``setmaxnreg.inc|dec.sync.aligned.u32 count``. ptxas honours it only for an entry with
  ``.maxntid`` and ``.minnctapersm 1`` (kernel attrs ``maxntid`` and ``minctasm``), else warns
  C7508 and ignores it.
- nvvm.fence {kind}: ``fence.<kind>;`` (``fence.proxy.async.shared::cta``,
  ``fence.acq_rel.gpu``, ``fence.mbarrier_init.release.cluster``, ...).
- nvvm.barrier_arrive {id?, count} (id?): ``llvm.nvvm.barrier.cta.arrive.aligned.count`` ->
  ``bar.arrive id, count``.
- mbarrier.try_wait_parity_hint: ``mbarrier.try_wait.parity.shared::cta.b64 p, [bar], parity,
  suspend_ns`` (the suspendTimeHint operand, PTX ISA 7.8, sm_90).
- mbarrier.*: ``mbarrier.init|arrive|arrive.expect_tx|expect_tx|try_wait.parity|inval`` on
  ``.shared::cta.b64`` objects, the address a 64-bit shared-window register. ``wait_parity``
  is a loop: ``L: mbarrier.try_wait.parity p, [bar], parity; @!p bra L`` (try_wait suspends the
  thread for a system-dependent time limit before returning false, so the loop does not burn
  issue slots).
"""
from __future__ import annotations

from llvmlite import ir

from ..ir.core import Operation
from ..ir.ops_sync import FULL_MASK
from .context import LoweringContext
from .llvm_types import I1, I32, I64

__all__ = ["RULES"]

_VOID = ir.VoidType()


def _mask(op: Operation) -> ir.Constant:
    return ir.Constant(I32, op.attrs.get("mask", FULL_MASK) & FULL_MASK)


def _asm(ctx: LoweringContext, ret: ir.Type, text: str, constraints: str, args=()) -> ir.Value:
    """Inline PTX ``text`` with a memory clobber (ordered against every memory access)."""
    clobber = "~{memory}"
    constraints = f"{constraints},{clobber}" if constraints else clobber
    ftype = ir.FunctionType(ret, [a.type for a in args])
    return ctx.builder.asm(ftype, text, constraints, list(args), side_effect=True)


def _pred_asm(ctx: LoweringContext, instruction: str, constraints: str, args) -> ir.Value:
    """An i1 from a PTX instruction whose first operand is a predicate destination (``%ws_p``)."""
    text = ("{\n\t.reg .pred %ws_p;\n\t" + instruction
            + "\n\tselp.b32 $0, 1, 0, %ws_p;\n\t}")
    r = _asm(ctx, I32, text, "=r," + constraints, args)
    return ctx.builder.icmp_unsigned("!=", r, ir.Constant(I32, 0))


def _shfl(ctx: LoweringContext, op: Operation) -> list:
    x, b = ctx.operands(op)
    mode = op.attrs["mode"]
    width = op.attrs.get("width", 32)
    c = ((32 - width) << 8) | (0 if mode == "up" else 0x1F)
    suffix = "f32" if op.results[0].type.is_float else "i32"
    return [ctx.call_intrinsic(f"llvm.nvvm.shfl.sync.{mode}.{suffix}", x.type,
                               [_mask(op), x, b, ir.Constant(I32, c)])]


def _vote(ctx: LoweringContext, op: Operation) -> list:
    (p,) = ctx.operands(op)
    mode = op.attrs["mode"]
    ret = I32 if mode == "ballot" else I1
    return [ctx.call_intrinsic(f"llvm.nvvm.vote.{mode}.sync", ret, [_mask(op), p])]


def _elect(ctx: LoweringContext, op: Operation) -> list:
    pair = ctx.call_intrinsic("llvm.nvvm.elect.sync", ir.LiteralStructType([I32, I1]),
                              [_mask(op)])
    return [ctx.builder.extract_value(pair, 1)]


def _warp_sync(ctx: LoweringContext, op: Operation) -> list:
    ctx.call_intrinsic("llvm.nvvm.bar.warp.sync", _VOID, [_mask(op)])
    return []


def _setmaxnreg(ctx: LoweringContext, op: Operation) -> list:
    name = f"llvm.nvvm.setmaxnreg.{op.attrs['action']}.sync.aligned.u32"
    ctx.call_intrinsic(name, _VOID, [ir.Constant(I32, op.attrs["count"])])
    return []


def _fence(ctx: LoweringContext, op: Operation) -> list:
    _asm(ctx, _VOID, f"fence.{op.attrs['kind']};", "")
    return []


def _barrier_arrive(ctx: LoweringContext, op: Operation) -> list:
    bar_id = ctx.operands(op)[0] if op.operands else ir.Constant(I32, op.attrs["id"])
    ctx.call_intrinsic("llvm.nvvm.barrier.cta.arrive.aligned.count", _VOID,
                       [bar_id, ir.Constant(I32, op.attrs["count"])])
    return []


# -- mbarrier ------------------------------------------------------------------------------------
def _mbarrier_init(ctx, op):
    _asm(ctx, _VOID, "mbarrier.init.shared::cta.b64 [$0], $1;", "l,r", ctx.operands(op))
    return []


def _mbarrier_arrive(ctx, op):
    args = ctx.operands(op)
    count = ", $2" if len(args) == 2 else ""
    return [_asm(ctx, I64, f"mbarrier.arrive.shared::cta.b64 $0, [$1]{count};",
                 "=l,l" + (",r" if count else ""), args)]


def _mbarrier_arrive_expect_tx(ctx, op):
    return [_asm(ctx, I64, "mbarrier.arrive.expect_tx.shared::cta.b64 $0, [$1], $2;", "=l,l,r",
                 ctx.operands(op))]


def _mbarrier_expect_tx(ctx, op):
    _asm(ctx, _VOID, "mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [$0], $1;", "l,r",
         ctx.operands(op))
    return []


def _try_wait(ctx, args) -> ir.Value:
    return _pred_asm(ctx, "mbarrier.try_wait.parity.shared::cta.b64 %ws_p, [$1], $2;", "l,r",
                     args)


def _mbarrier_try_wait(ctx, op):
    return [_try_wait(ctx, ctx.operands(op))]


def _mbarrier_try_wait_hint(ctx, op):
    return [_pred_asm(ctx, "mbarrier.try_wait.parity.shared::cta.b64 %ws_p, [$1], $2, $3;",
                      "l,r,r", ctx.operands(op))]


def _mbarrier_wait(ctx, op):
    args = ctx.operands(op)
    b = ctx.builder
    loop = ctx.function.append_basic_block("mbarrier.wait")
    done = ctx.function.append_basic_block("mbarrier.done")
    b.branch(loop)
    b.position_at_end(loop)
    b.cbranch(_try_wait(ctx, args), done, loop)
    b.position_at_end(done)
    return []


def _mbarrier_inval(ctx, op):
    _asm(ctx, _VOID, "mbarrier.inval.shared::cta.b64 [$0];", "l", ctx.operands(op))
    return []


RULES = {"nvvm.shfl": _shfl, "nvvm.vote": _vote, "nvvm.elect": _elect, "nvvm.warp_sync": _warp_sync,
         "nvvm.setmaxnreg": _setmaxnreg, "nvvm.fence": _fence,
         "nvvm.barrier_arrive": _barrier_arrive,
         "mbarrier.init": _mbarrier_init, "mbarrier.arrive": _mbarrier_arrive,
         "mbarrier.arrive_expect_tx": _mbarrier_arrive_expect_tx,
         "mbarrier.expect_tx": _mbarrier_expect_tx, "mbarrier.try_wait_parity": _mbarrier_try_wait,
         "mbarrier.try_wait_parity_hint": _mbarrier_try_wait_hint,
         "mbarrier.wait_parity": _mbarrier_wait, "mbarrier.inval": _mbarrier_inval}
