"""Lowering of the TMA ops to inline PTX (PTX ISA 8.0, "Data Movement and Conversion
Instructions": cp.async.bulk.tensor, cp.async.bulk, cp.async.bulk.commit_group,
cp.async.bulk.wait_group; "Data prefetch": prefetch.tensormap).

Every instruction is ``asm sideeffect`` with a memory clobber, so LLVM keeps ordinary loads and
stores on their side of it. Operands: shared-memory addresses and mbarriers are 64-bit
shared-window registers (``l``), the descriptor its generic address (``l``: a kernel's
grid-constant parameter becomes ``cvta.param.u64``), coordinates ``r`` registers. PTX lists
tensor coordinates innermost first, the reverse of the IR's outermost-first order.

- tma.load: ``cp.async.bulk.tensor.<r>d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
  [dst], [desc, {c0, ...}], [bar];`` (a CTA's own shared address is a valid shared::cluster
  address, so this is the one-CTA form). With ``multicast``: ``... .mbarrier::complete_tx::bytes
  .multicast::cluster [dst], [desc, {c0, ...}], [bar], mask;`` (mask a 16-bit ``h`` register).
- tma.store: ``cp.async.bulk.tensor.<r>d.global.shared::cta.tile.bulk_group [desc, {c0, ...}],
  [src];``
- tma.commit_group / wait_group {n, read}: ``cp.async.bulk.commit_group;`` /
  ``cp.async.bulk.wait_group[.read] n;``
- tma.prefetch_descriptor: ``prefetch.tensormap [desc];``
- tma.bulk_copy: ``cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [dst],
  [src], nbytes, [bar];``
"""
from __future__ import annotations

from llvmlite import ir

from ..ir.core import Operation
from .context import LoweringContext
from .lower_sync import _asm

__all__ = ["RULES"]

_VOID = ir.VoidType()


def _coords(first: int, rank: int) -> str:
    """``{$k, ...}`` for the coordinates at operand positions first..first+rank-1, innermost
    (the IR's last) first."""
    return "{" + ", ".join(f"${first + k}" for k in reversed(range(rank))) + "}"


def _load(ctx: LoweringContext, op: Operation) -> list:
    rank = len(op.attrs["box"])
    if op.attrs.get("multicast", False):
        desc, dst, bar, mask, *coords = ctx.operands(op)
        mask16 = ctx.builder.trunc(mask, ir.IntType(16))
        text = (f"cp.async.bulk.tensor.{rank}d.shared::cluster.global.tile.mbarrier::complete_tx"
                f"::bytes.multicast::cluster [$0], [$1, {_coords(4, rank)}], [$2], $3;")
        _asm(ctx, _VOID, text, "l,l,l,h" + ",r" * rank, [dst, desc, bar, mask16, *coords])
        return []
    desc, dst, bar, *coords = ctx.operands(op)
    text = (f"cp.async.bulk.tensor.{rank}d.shared::cluster.global.tile.mbarrier::complete_tx"
            f"::bytes [$0], [$1, {_coords(3, rank)}], [$2];")
    _asm(ctx, _VOID, text, "l,l,l" + ",r" * rank, [dst, desc, bar, *coords])
    return []


def _store(ctx: LoweringContext, op: Operation) -> list:
    desc, src, *coords = ctx.operands(op)
    rank = len(op.attrs["box"])
    text = (f"cp.async.bulk.tensor.{rank}d.global.shared::cta.tile.bulk_group "
            f"[$0, {_coords(2, rank)}], [$1];")
    _asm(ctx, _VOID, text, "l,l" + ",r" * rank, [desc, src, *coords])
    return []


def _commit_group(ctx, op):
    _asm(ctx, _VOID, "cp.async.bulk.commit_group;", "")
    return []


def _wait_group(ctx, op):
    read = ".read" if op.attrs.get("read", False) else ""
    _asm(ctx, _VOID, f"cp.async.bulk.wait_group{read} {op.attrs['n']};", "")
    return []


def _prefetch(ctx, op):
    _asm(ctx, _VOID, "prefetch.tensormap [$0];", "l", ctx.operands(op))
    return []


def _bulk_copy(ctx, op):
    _asm(ctx, _VOID, "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes "
                     "[$0], [$1], $2, [$3];", "l,l,r,l", ctx.operands(op))
    return []


RULES = {"tma.load": _load, "tma.store": _store, "tma.commit_group": _commit_group,
         "tma.wait_group": _wait_group, "tma.prefetch_descriptor": _prefetch,
         "tma.bulk_copy": _bulk_copy}
