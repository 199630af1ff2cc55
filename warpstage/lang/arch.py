"""Thread hierarchy and synchronization (PTX ISA §10 "Special Registers", §9.7.13 bar).

All indices are dynamic ``ws.Int32`` values (PTX ``%tid``, ``%ctaid``, ``%ntid``, ``%nctaid``).
Warp collectives (shuffles, votes, ``elect_one``, ``make_warp_uniform``) come from
``lang/warp.py``; ``barrier_arrive``, ``setmaxnreg_*`` and fences from ``lang/sync.py``; the
cluster's registers, barrier and shared::cluster addresses from ``lang/cluster.py``; all are
available here as ``ws.arch.<name>``.
"""
from __future__ import annotations

from typing import Optional

from .. import ir
from ..core.trace import Origin, builder, current
from ..core.source import user_location
from .scalars import Int32, Int64
from .cluster import (block_idx_in_cluster, cluster_arrive, cluster_ctarank,  # noqa: F401
                      cluster_dim, cluster_grid_dim, cluster_idx, cluster_size, cluster_sync,
                      cluster_wait, map_shared, mbarrier_arrive_cluster)
from .sync import (_barrier_id, _thread_count, barrier_arrive, fence_acq_rel,  # noqa: F401
                   fence_mbarrier_init, fence_proxy_async, fence_sc, setmaxnreg_decrease,
                   setmaxnreg_increase, setmaxregister_decrease, setmaxregister_increase)
from .warp import (elect_one, make_warp_uniform, shfl_down_sync, shfl_sync,  # noqa: F401
                   shfl_up_sync, shfl_xor_sync, sync_warp, vote_all, vote_all_sync, vote_any,
                   vote_any_sync, vote_ballot, vote_ballot_sync, vote_uni_sync)

__all__ = ["thread_idx", "block_idx", "block_dim", "static_block_dim", "grid_dim", "lane_idx", "warp_idx",
           "warpgroup_idx", "sync_threads", "sync_warp", "barrier_sync", "barrier_arrive",
           "clock64", "globaltimer", "make_warp_uniform", "elect_one", "shfl_sync", "shfl_up_sync",
           "shfl_down_sync", "shfl_xor_sync", "vote_all_sync", "vote_any_sync", "vote_uni_sync",
           "vote_ballot_sync", "vote_all", "vote_any", "vote_ballot", "setmaxnreg_increase",
           "setmaxnreg_decrease", "setmaxregister_increase", "setmaxregister_decrease",
           "fence_proxy_async", "fence_acq_rel", "fence_sc", "fence_mbarrier_init",
           "cluster_ctarank", "cluster_size", "cluster_dim", "cluster_idx", "cluster_grid_dim",
           "block_idx_in_cluster", "cluster_arrive", "cluster_wait", "cluster_sync",
           "map_shared", "mbarrier_arrive_cluster"]


def _sreg3(base: str, what: str):
    b = builder(what)
    origin = Origin(f"{what}", user_location(3))
    return tuple(Int32._wrap(b.sreg(f"{base}.{d}", ir.i32), origin) for d in "xyz")


def thread_idx():
    """(x, y, z) index of this thread in its CTA, each Int32 (PTX %tid)."""
    return _sreg3("tid", "ws.arch.thread_idx()")


def block_idx():
    """(x, y, z) index of this CTA in the grid, each Int32 (PTX %ctaid)."""
    return _sreg3("ctaid", "ws.arch.block_idx()")


def block_dim():
    """(x, y, z) threads per CTA, each Int32 (PTX %ntid)."""
    return _sreg3("ntid", "ws.arch.block_dim()")


def static_block_dim() -> tuple:
    """The launch block the kernel is being compiled for: (x, y, z) Python ints, threads per
    CTA (static: part of the specialization, the kernel's PTX ``.maxntid``); ``()`` when it is
    traced without a block. Unlike ``block_dim()`` (PTX %ntid, dynamic) it can size tiles and
    pick roles while compiling. Raises CompilationError outside a kernel being compiled."""
    return current("ws.arch.static_block_dim()").block


def grid_dim():
    """(x, y, z) CTAs in the grid, each Int32 (PTX %nctaid)."""
    return _sreg3("nctaid", "ws.arch.grid_dim()")


def lane_idx() -> Int32:
    """This thread's lane in its warp, 0..31 (PTX %laneid)."""
    return Int32._wrap(builder("ws.arch.lane_idx()").sreg("laneid", ir.i32),
                       Origin("ws.arch.lane_idx()", user_location(2)))


def warp_idx() -> Int32:
    """This thread's warp index in its CTA: linear thread index // 32 (dynamic Int32).

    Computed from %tid and %ntid (not %warpid, which PTX documents as volatile)."""
    tx, ty, tz = thread_idx()
    nx, ny, _ = block_dim()
    return (tx + nx * (ty + ny * tz)) // 32


def warpgroup_idx() -> Int32:
    """This thread's warpgroup (4 consecutive warps, 128 threads) in its CTA: ``warp_idx() // 4``
    (dynamic Int32). Wrap it in ``make_warp_uniform`` to branch on it without divergence, as
    warp-specialized kernels do (``setmaxnreg`` and ``wgmma`` work per warpgroup)."""
    return warp_idx() // 4


def sync_threads() -> None:
    """Barrier for all threads of the CTA (``bar.sync 0``; CUDA ``__syncthreads``)."""
    builder("ws.arch.sync_threads()").barrier(0)


def barrier_sync(barrier_id, num_threads: Optional[int] = None) -> None:
    """Named barrier ``bar.sync id, count``: waits for ``num_threads`` threads (a multiple of 32;
    all threads of the CTA if None) to arrive at barrier ``barrier_id`` (0..15: a static int, or
    a dynamic warp-uniform integer), counting threads that arrived with ``barrier_arrive``. Raises BindingTimeError for a dynamic operand,
    OperandError (a ValueError) for a bad one."""
    what = "ws.arch.barrier_sync()"
    bar_id = _barrier_id(barrier_id, what)
    count = None if num_threads is None else _thread_count(num_threads, what)
    builder(what).barrier(bar_id, count)


def clock64() -> Int64:
    """The SM's 64-bit cycle counter (PTX %clock64)."""
    return Int64._wrap(builder("ws.arch.clock64()").sreg("clock64", ir.i64))


def globaltimer() -> Int64:
    """Nanosecond global timer (PTX %globaltimer; coarse resolution)."""
    return Int64._wrap(builder("ws.arch.globaltimer()").sreg("globaltimer", ir.i64))
