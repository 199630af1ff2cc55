"""Verifier rules of the thread-block-cluster ops (sm_90), and their definitions.

A cluster is a group of CTAs launched together on one GPC (PTX ISA 5.2.1 "Cluster of Cooperative
Thread Arrays"); each CTA can reach the others' shared memory through the ``shared::cluster``
window. The cluster's shape and the CTA's place in it are special registers (``nvvm.sreg``
``cluster.ctarank``, ``cluster.nctarank``, ``cluster.ctaid.x``, ``cluster.nctaid.x``,
``clusterid.x``, ``nclusterid.x``; PTX ISA 10.x "%cluster_ctarank" ...). Contract:

  cluster.arrive ->                       barrier.cluster.arrive.release: this thread arrives
                                          at the cluster barrier (PTX ISA 9.7.13.3)
  cluster.wait ->                         barrier.cluster.wait.acquire: until every thread of
                                          the cluster arrived at the current phase
  cluster.map_shared (p: ptr<T, shared>, rank: i32) -> u64
        mapa.shared::cluster.u64: the shared::cluster address of the variable at ``p`` in the
        CTA of cluster rank ``rank`` (PTX ISA 9.7.9.22 "mapa")
  mbarrier.arrive_cluster (addr: u64) ->  mbarrier.arrive.shared::cluster.b64:
                                          one arrival on the mbarrier at the shared::cluster
                                          address ``addr`` (another CTA's, from map_shared)
"""
from __future__ import annotations

from .opdef import define
from .ops import P, R, W, WAITS, _arity
from .types import PointerType, i32, u64

__all__ = ["CLUSTER_MAX_CTAS"]

CLUSTER_MAX_CTAS = 16
"""The most CTAs a cluster can have (16 with the non-portable size opt-in; 8 portably); a
multicast mask has one bit per CTA rank."""


def _no_operands(op):
    return _arity(op, 0, 0)


def _map_shared(op):
    err = _arity(op, 2, 1)
    if err:
        return err
    p, rank = op.operands
    if not (isinstance(p.type, PointerType) and p.type.space == "shared"):
        return f"expected a shared-memory pointer first, got {p.type}"
    if rank.type != i32:
        return f"expected an i32 CTA rank, got {rank.type}"
    if op.results[0].type != u64:
        return f"expected a u64 shared::cluster address, got {op.results[0].type}"
    return None


def _arrive_cluster(op):
    err = _arity(op, 1, 0)
    if err:
        return err
    if op.operands[0].type != u64:
        return (f"expected a u64 shared::cluster address (cluster.map_shared of an mbarrier), "
                f"got {op.operands[0].type}")
    return None


_CL = "Parallel Synchronization: barrier.cluster"
define("cluster.arrive", "() ->", "barrier.cluster.arrive.release: arrive at the cluster barrier",
       _no_operands, (W,), ptx=_CL, requires="sm_90")
define("cluster.wait", "() ->", "barrier.cluster.wait.acquire: until every thread of the cluster "
       "arrived", _no_operands, (WAITS,), ptx=_CL, requires="sm_90")
define("cluster.map_shared", "(p: ptr<T, shared>, rank: i32) -> u64", "mapa.shared::cluster: "
       "p's address in the CTA of cluster rank `rank`", _map_shared, (P,), ptx="Data Movement: mapa",
       infer=lambda operands, attrs: [u64], requires="sm_90")
define("mbarrier.arrive_cluster", "(addr: u64) ->", "mbarrier.arrive.shared::cluster"
       ": one arrival on a (peer CTA's) mbarrier", _arrive_cluster, (R, W),
       ptx="Parallel Synchronization: mbarrier", requires="sm_90")

