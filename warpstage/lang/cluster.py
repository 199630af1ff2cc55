"""Thread-block clusters (sm_90): the CTA's place in its cluster, the cluster barrier, and
reaching a peer CTA's shared memory (re-exported by ``ws.arch``).

A kernel runs in clusters when it is launched with ``cluster=(x, y, z)`` (``cuLaunchKernelEx``
with the cluster-dimension attribute; the launch fact, not a compile-time one: the kernel's
PTX has no ``.reqnctapercluster``). Without it every CTA is a cluster of one, and these
functions still work (rank 0 of 1). PTX ISA sources: 10.x special registers
``%cluster_ctarank``, ``%cluster_nctarank``, ``%cluster_ctaid``, ``%cluster_nctaid``,
``%clusterid``, ``%nclusterid``; 9.7.13.3 ``barrier.cluster``; 9.7.9.22 ``mapa``; 9.7.13.15.13
``mbarrier.arrive`` (``.shared::cluster``). Simulator semantics: ``sim/cluster.py``.
"""
from __future__ import annotations

from .. import ir
from ..core.source import user_location
from ..core.trace import Origin, builder
from .mbarrier import Mbarrier
from .operands import dynamic_i32, operand_error
from .pointer import Pointer
from .scalars import Int32, Uint64

__all__ = ["cluster_ctarank", "cluster_size", "cluster_dim", "cluster_idx", "cluster_grid_dim",
           "block_idx_in_cluster", "cluster_arrive", "cluster_wait", "cluster_sync",
           "map_shared", "mbarrier_arrive_cluster"]


def _sreg(reg: str, what: str) -> Int32:
    return Int32._wrap(builder(what).sreg(reg, ir.i32), Origin(what, user_location(3)))


def _sreg3(base: str, what: str) -> tuple:
    return tuple(_sreg(f"{base}.{d}", what) for d in "xyz")


def cluster_ctarank() -> Int32:
    """This CTA's rank in its cluster, 0 .. cluster_size() - 1 (x fastest over
    ``block_idx_in_cluster()``): PTX ``%cluster_ctarank``. A multicast mask has bit r for the
    CTA of rank r."""
    return _sreg("cluster.ctarank", "ws.arch.cluster_ctarank()")


def cluster_size() -> Int32:
    """CTAs in this cluster (1 without a cluster launch): PTX ``%cluster_nctarank``."""
    return _sreg("cluster.nctarank", "ws.arch.cluster_size()")


def cluster_dim() -> tuple:
    """(x, y, z) CTAs per cluster, each Int32 (the launch's ``cluster=``): PTX
    ``%cluster_nctaid``."""
    return _sreg3("cluster.nctaid", "ws.arch.cluster_dim()")


def cluster_idx() -> tuple:
    """(x, y, z) index of this CTA's cluster in the grid of clusters, each Int32: PTX
    ``%clusterid`` (``block_idx() // cluster_dim()``)."""
    return _sreg3("clusterid", "ws.arch.cluster_idx()")


def cluster_grid_dim() -> tuple:
    """(x, y, z) clusters in the grid, each Int32: PTX ``%nclusterid``."""
    return _sreg3("nclusterid", "ws.arch.cluster_grid_dim()")


def block_idx_in_cluster() -> tuple:
    """(x, y, z) index of this CTA in its cluster, each Int32: PTX ``%cluster_ctaid``
    (``block_idx() % cluster_dim()``)."""
    return _sreg3("cluster.ctaid", "ws.arch.block_idx_in_cluster()")


def cluster_arrive() -> None:
    """Arrive at the cluster barrier without waiting, releasing this thread's earlier memory
    accesses to the cluster: PTX ``barrier.cluster.arrive.release``. Every thread of every CTA
    of the cluster arrives once per phase (threads that exited count as arrived); pair each
    arrive with a ``cluster_wait()``."""
    builder("ws.arch.cluster_arrive()").cluster_arrive()


def cluster_wait() -> None:
    """Wait until every thread of the cluster arrived at the phase of this thread's last
    ``cluster_arrive()``, acquiring their released accesses: PTX
    ``barrier.cluster.wait.acquire``."""
    builder("ws.arch.cluster_wait()").cluster_wait()


def cluster_sync() -> None:
    """``cluster_arrive(); cluster_wait()``: a barrier over every thread of the cluster (after
    mbarrier init, so peers may arrive on them; before exit, so no peer still reaches this
    CTA's shared memory)."""
    cluster_arrive()
    cluster_wait()


def map_shared(target, rank) -> Uint64:
    """The shared::cluster address of ``target`` (an ``Mbarrier``, a shared ``Pointer`` or a
    shared-memory array) in the CTA of cluster rank ``rank`` (Int32 or int): PTX
    ``mapa.shared::cluster.u64 d, a, rank``. The address is only meaningful to
    ``.shared::cluster`` instructions (``mbarrier_arrive_cluster``). Raises OperandError for
    another kind of target."""
    what = "ws.arch.map_shared()"
    ptr = getattr(target, "ptr", target)
    if not (isinstance(ptr, Pointer) and ptr.space == "shared"):
        raise operand_error(f"{what}'s target", type(target).__name__,
                            "an Mbarrier, a shared-memory Pointer or array",
                            "pass storage.bars[i] or a field of the shared storage")
    r = dynamic_i32(rank, f"{what}'s rank")
    return Uint64._wrap(builder(what).cluster_map_shared(ptr.value, r),
                        Origin(what, user_location()))


def mbarrier_arrive_cluster(bar: Mbarrier, rank) -> None:
    """One arrival (of the executing thread) on the mbarrier ``bar`` of the CTA of cluster rank
    ``rank`` (this CTA's own when rank is its own): PTX ``mapa.shared::cluster.u64`` then
    ``mbarrier.arrive.shared::cluster.b64 _, [addr]`` (PTX ISA 9.7.13.15.13: with no
    ``.sem``/``.scope`` the arrive is ``.release`` at ``.cta`` scope, the form CUTLASS's
    ``ClusterBarrier::arrive(cta_id, pred)`` emits; the ``.release.cluster`` form compiles to
    ``MEMBAR.ALL.CTA; MEMBAR.ALL.GPU`` before every arrive, which halved the cluster GEMM on the
    H200: docs/clusters.md). Raises OperandError when ``bar`` is not an Mbarrier."""
    what = "ws.arch.mbarrier_arrive_cluster()"
    if not isinstance(bar, Mbarrier):
        raise operand_error(f"{what}'s mbarrier", type(bar).__name__, "an Mbarrier",
                            "pass storage.bars[i]")
    addr = map_shared(bar, rank)
    builder(what).mbarrier_arrive_cluster(addr.value)
