"""Thread hierarchy and synchronization (PTX ISA §10 "Special Registers", §9.7.13 bar).

All indices are dynamic ``ws.Int32`` values (PTX ``%tid``, ``%ctaid``, ``%ntid``, ``%nctaid``).
"""
from __future__ import annotations

from typing import Optional

from .. import ir
from ..errors import BindingTimeError
from ..frontend.trace import Origin, builder
from ..frontend.source import user_location
from .scalars import Int32, Int64, Scalar

__all__ = ["thread_idx", "block_idx", "block_dim", "grid_dim", "lane_idx", "warp_idx",
           "sync_threads", "barrier_sync", "clock64", "globaltimer"]


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


def _static_int(x, what: str) -> int:
    if isinstance(x, Scalar):
        from .scalars import needs_static_error
        raise needs_static_error(x, what)
    return x


def sync_threads() -> None:
    """Barrier for all threads of the CTA (``bar.sync 0``; CUDA ``__syncthreads``)."""
    builder("ws.arch.sync_threads()").barrier(0)


def barrier_sync(barrier_id: int, num_threads: Optional[int] = None) -> None:
    """Named barrier ``bar.sync id, count``: waits for ``num_threads`` threads (a multiple of 32;
    all threads of the CTA if None) to arrive at barrier ``barrier_id`` (static, 0..15)."""
    barrier_id = _static_int(barrier_id, "ws.arch.barrier_sync's barrier id")
    num_threads = _static_int(num_threads, "ws.arch.barrier_sync's thread count")
    if not isinstance(barrier_id, int) or not 0 <= barrier_id < 16:
        raise ValueError(f"barrier id must be a static int in [0, 16), got {barrier_id!r}")
    if num_threads is not None and (num_threads <= 0 or num_threads % 32):
        raise ValueError(f"barrier thread count must be a positive multiple of 32, got {num_threads}")
    builder("ws.arch.barrier_sync()").barrier(barrier_id, num_threads)


def clock64() -> Int64:
    """The SM's 64-bit cycle counter (PTX %clock64)."""
    return Int64._wrap(builder("ws.arch.clock64()").sreg("clock64", ir.i64))


def globaltimer() -> Int64:
    """Nanosecond global timer (PTX %globaltimer; coarse resolution)."""
    return Int64._wrap(builder("ws.arch.globaltimer()").sreg("globaltimer", ir.i64))
