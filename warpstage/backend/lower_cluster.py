"""Lowering of the thread-block-cluster ops to inline PTX (PTX ISA 8.0: 9.7.13.3
"barrier.cluster", 9.7.9.22 "mapa", 9.7.13.15.13 "mbarrier.arrive"); the cluster's special
registers are ``nvvm.sreg`` (``llvm.nvvm.read.ptx.sreg.cluster.ctarank`` -> ``%cluster_ctarank``,
lower_gpu.py).

- cluster.arrive: ``barrier.cluster.arrive.release;`` (not ``.aligned``: the threads of a warp
  may reach it apart)
- cluster.wait: ``barrier.cluster.wait.acquire;``
- cluster.map_shared: ``mapa.shared::cluster.u64 d, a, rank;`` (a: the 64-bit shared window
  address of the variable in this CTA)
- mbarrier.arrive_cluster: ``mbarrier.arrive.shared::cluster.b64 _, [addr];``

Each is ``asm sideeffect`` with a memory clobber (``lower_sync._asm``), so LLVM keeps memory
accesses on their side of it.
"""
from __future__ import annotations

from llvmlite import ir

from .lower_sync import _asm

__all__ = ["RULES"]

_VOID = ir.VoidType()
_I64 = ir.IntType(64)


def _arrive(ctx, op):
    _asm(ctx, _VOID, "barrier.cluster.arrive.release;", "")
    return []


def _wait(ctx, op):
    _asm(ctx, _VOID, "barrier.cluster.wait.acquire;", "")
    return []


def _map_shared(ctx, op):
    return [_asm(ctx, _I64, "mapa.shared::cluster.u64 $0, $1, $2;", "=l,l,r", ctx.operands(op))]


def _arrive_cluster(ctx, op):
    _asm(ctx, _VOID, "mbarrier.arrive.shared::cluster.b64 _, [$0];", "l",
         ctx.operands(op))
    return []


RULES = {"cluster.arrive": _arrive, "cluster.wait": _wait, "cluster.map_shared": _map_shared,
         "mbarrier.arrive_cluster": _arrive_cluster}
