"""Tile schedulers for persistent kernels (``ws.sched``).

A persistent kernel launches about one CTA per SM and lets each CTA walk many output tiles,
instead of one CTA per tile: the prologue (barrier init, descriptor prefetch) runs once per SM,
and a CTA's epilogue (its TMA stores) overlaps its next tile's mainloop. The scheduler says which
tiles a CTA takes and in what order; every role of a warp-specialized kernel (producer and
consumers) walks the same static sequence on its own, so no role waits on another to learn the
next tile::

    sched = ws.sched.PersistentTileScheduler.create(tiles_m, tiles_n, batches, raster="M", group=8)
    for t in range(sched.first(), sched.num_tiles(), sched.stride()):   # dynamic loop
        m_blk, n_blk, batch = sched.tile(t)

Tile ``t`` (CTA ``blockIdx.x`` takes ``blockIdx.x``, ``+ gridDim.x``, ...) maps to (m, n, batch)
through a *rasterization with a group swizzle* for L2 reuse (CUTLASS's
``PersistentTileSchedulerSm90`` raster order and swizzle; Triton's "grouped ordering"):
within one batch, the tiles are cut into bands of ``group`` tiles along the raster dimension
(M for ``raster="M"``); a band is walked raster dimension fastest, so the CTAs running at one
time share a few A row-panels and B column-panels in L2 instead of streaming all of B. The last
band may be narrower. So ``group >= tiles_m`` with ``raster="M"`` walks the tiles column-major
(m fastest) and ``group=1`` row-major (n fastest), as Triton's ``GROUP_M`` does.

The mapping is arithmetic on dynamic ``Int32`` (a few integer divisions per tile), the same code
on Python ints (``tile_coords``) for host-side checks. Source of truth: CUTLASS
``include/cutlass/gemm/kernel/sm90_tile_scheduler.hpp`` (static persistent scheduler).
"""
from __future__ import annotations

from ..core.static import Static
from .arch import block_idx, grid_dim
from .cluster import cluster_ctarank, cluster_grid_dim, cluster_idx
from .math import max as _max
from .math import min as _min
from .math import select as _select
from .operands import operand_error
from .pipeline import PipelineState
from .scalars import Int32
from .struct import struct

__all__ = ["PersistentTileScheduler", "ClusterTileScheduler", "StreamKScheduler", "tile_coords",
           "grid_size", "skip_stages", "stream_k_range", "stream_k_unit", "stream_k_contributors",
           "stream_k_slot", "stream_k_units", "RASTERS"]

RASTERS = ("M", "N")


def tile_coords(t, tiles_m, tiles_n, raster: str = "M", group: int = 8):
    """(m, n, batch) tile coordinates of linear tile index ``t`` (``0 <= t < tiles_m * tiles_n
    * batches``) in the raster order with group swizzle described in the module docstring.
    Works on Python ints and dynamic ``Int32`` alike (non-negative values)."""
    per_batch = tiles_m * tiles_n
    batch = t // per_batch
    local = t - batch * per_batch
    major, minor = (tiles_m, tiles_n) if raster == "M" else (tiles_n, tiles_m)
    band_size = group * minor                 # tiles in one full band
    band = local // band_size
    first = band * group
    width = _min(group, major - first)        # the last band may be narrower
    within = local - band * band_size
    i_major = first + within % width
    i_minor = within // width
    m, n = (i_major, i_minor) if raster == "M" else (i_minor, i_major)
    return m, n, batch


def grid_size(num_tiles: int, num_sms: int) -> int:
    """CTAs to launch for a persistent kernel: one per SM, but no more than there are tiles
    (at least 1). Host-side, Python ints."""
    return max(1, min(int(num_tiles), int(num_sms)))


def skip_stages(state: PipelineState, n) -> PipelineState:
    """``state`` advanced by ``n`` stages (a dynamic or static count >= 0) in one step: index
    ``(index + n) mod num_stages``, the phase flipped once per wrap, ``count + n``. How a
    ping-pong consumer passes over the stages of the tiles the other consumer takes (every
    consumer walks the whole ring in order, but waits only on its own tiles' stages)."""
    total = state.index + n
    wraps = total // state.num_stages
    return PipelineState(state.num_stages, total - wraps * state.num_stages,
                         state.phase ^ (wraps & 1), state.count + n)


def _check(raster, group, what: str):
    if raster not in RASTERS:
        raise operand_error(f"{what}'s raster", raster, "'M' or 'N' (the dimension walked "
                            "fastest)", "pass raster='M' (tall problems) or raster='N'")
    if isinstance(group, bool) or not isinstance(group, int) or not 1 <= group <= 1 << 16:
        raise operand_error(f"{what}'s group", group, "a static int in [1, 65536] (tiles per "
                            "swizzle band)", "pass group=8 (1 turns the swizzle off)")


@struct
class PersistentTileScheduler:
    """A static persistent tile scheduler: ``raster`` ('M' or 'N') and ``group`` (tiles per
    swizzle band) are static, the tile counts ``tiles_m``, ``tiles_n``, ``batches`` dynamic
    ``Int32``. A value (``@ws.struct``): pass it to ``@ws.jit`` functions and through loops.
    Make one with ``create`` inside a kernel; launch the kernel with a 1-D grid of
    ``grid_size(num_tiles, SMs)`` CTAs."""

    raster: Static[str]
    group: Static[int]
    tiles_m: Int32
    tiles_n: Int32
    batches: Int32

    @classmethod
    def create(cls, tiles_m, tiles_n, batches=1, raster: str = "M",
               group: int = 8) -> "PersistentTileScheduler":
        """The scheduler of a ``tiles_m x tiles_n`` tile grid per batch, ``batches`` batches
        (ints or dynamic integers: tile counts, not elements). Raises OperandError for a
        ``raster`` other than 'M'/'N' or a ``group`` that is not a static int in [1, 65536]."""
        _check(raster, group, "ws.sched.PersistentTileScheduler.create()")
        return cls(raster, group, Int32(tiles_m), Int32(tiles_n), Int32(batches))

    def num_tiles(self) -> Int32:
        """Tiles in all: ``tiles_m * tiles_n * batches`` (dynamic Int32)."""
        return self.tiles_m * self.tiles_n * self.batches

    def first(self) -> Int32:
        """This CTA's first tile: ``blockIdx.x``."""
        return block_idx()[0]

    def stride(self) -> Int32:
        """The step between a CTA's tiles: ``gridDim.x`` (the number of persistent CTAs)."""
        return grid_dim()[0]

    def tile(self, t) -> tuple:
        """(m, n, batch) tile coordinates (dynamic Int32) of linear tile ``t``."""
        return tile_coords(Int32(t), self.tiles_m, self.tiles_n, self.raster, self.group)


@struct
class ClusterTileScheduler:
    """The persistent scheduler of a kernel launched in clusters of ``cluster_m x cluster_n``
    CTAs (static) that take adjacent output tiles together: it walks *cluster tiles*
    (``cluster_m x cluster_n`` blocks of tiles, in ``PersistentTileScheduler``'s raster order
    and swizzle over the ``ceil(tiles_m / cluster_m) x ceil(tiles_n / cluster_n)`` grid of
    them), cluster ``%clusterid.x`` taking ``%clusterid.x``, ``+ %nclusterid.x``, ...; the CTA
    of rank r takes tile (r % cluster_m, r // cluster_m) of each. Every CTA of a cluster walks
    the same number of cluster tiles, so a CTA whose tile lies past M or N still runs the
    pipeline with its peers (its TMA loads read zeros, its stores clip). Launch a 1-D grid of
    ``grid_size(cluster tiles, SMs // cluster size) * cluster size`` CTAs with ``cluster=
    (cluster_m * cluster_n, 1, 1)``. Same methods as ``PersistentTileScheduler``."""

    inner: PersistentTileScheduler
    cluster_m: Static[int]
    cluster_n: Static[int]

    @classmethod
    def create(cls, tiles_m, tiles_n, batches=1, raster: str = "M", group: int = 8,
               cluster=(1, 1)) -> "ClusterTileScheduler":
        """The scheduler of a ``tiles_m x tiles_n`` tile grid per batch (ints or dynamic
        integers) in clusters of ``cluster = (cluster_m, cluster_n)`` (static ints >= 1).
        Raises OperandError as ``PersistentTileScheduler.create``, or for a bad cluster."""
        what = "ws.sched.ClusterTileScheduler.create()"
        if not (isinstance(cluster, tuple) and len(cluster) == 2 and all(
                isinstance(c, int) and not isinstance(c, bool) and 1 <= c <= 16
                for c in cluster)):
            raise operand_error(f"{what}'s cluster", cluster, "a static (cluster_m, cluster_n) "
                                "pair of ints in [1, 16]", "pass e.g. cluster=(2, 1)")
        cm, cn = cluster
        inner = PersistentTileScheduler.create((tiles_m + (cm - 1)) // cm,
                                               (tiles_n + (cn - 1)) // cn, batches, raster,
                                               group)
        return cls(inner, cm, cn)

    def num_tiles(self) -> Int32:
        """Cluster tiles in all (every CTA of a cluster walks each of its cluster's)."""
        return self.inner.num_tiles()

    def first(self) -> Int32:
        """This cluster's first cluster tile: ``%clusterid.x``."""
        return cluster_idx()[0]

    def stride(self) -> Int32:
        """The step between a cluster's tiles: ``%nclusterid.x`` (clusters in the grid)."""
        return cluster_grid_dim()[0]

    def tile(self, t) -> tuple:
        """(m, n, batch) of this CTA's tile in cluster tile ``t`` (dynamic Int32)."""
        m, n, batch = self.inner.tile(t)
        if self.cluster_m * self.cluster_n == 1:
            return m, n, batch
        rank = cluster_ctarank()
        return (m * self.cluster_m + rank % self.cluster_m,
                n * self.cluster_n + rank // self.cluster_m, batch)


# -- stream-K -------------------------------------------------------------------------------
# The linear tile order of PersistentTileScheduler, split in two: the first ``sk_tiles`` tiles
# are *stream-K tiles*, whose ``sk_tiles x k_tiles`` (tile, K step) iterations are cut evenly
# over the ``ctas`` CTAs (CTA c takes iterations [c I / ctas, (c + 1) I / ctas), I = sk_tiles x
# k_tiles, rounded down), so a tile's K range may be split over two or more CTAs; the other
# tiles are data-parallel, CTA c taking tiles sk_tiles + c, + ctas, ... whole. A CTA walks its
# stream-K units first (in the order of ``stream_k_unit``), then its data-parallel tiles. The functions below are the arithmetic,
# on Python ints and dynamic Int32 alike (the host's checks and the kernel run the same code).


def stream_k_range(c, ctas, k_tiles, sk_tiles) -> tuple:
    """[begin, end) of CTA ``c``'s stream-K iterations (``iteration = tile x k_tiles + K
    step``)."""
    total = sk_tiles * k_tiles
    return c * total // ctas, (c + 1) * total // ctas


def _sk_units(begin, end, k_tiles):
    """Stream-K units of the iteration range [begin, end): the tiles it touches."""
    return _select(end > begin, (end - 1) // k_tiles - begin // k_tiles + 1, 0)


def stream_k_units(c, ctas, tiles, k_tiles, sk_tiles):
    """Work units of CTA ``c``: its stream-K units (one per stream-K tile its iteration range
    touches), then its data-parallel tiles (``tiles`` in all, the first ``sk_tiles`` of them
    stream-K)."""
    begin, end = stream_k_range(c, ctas, k_tiles, sk_tiles)
    sk = _sk_units(begin, end, k_tiles)
    dp = _max((tiles - sk_tiles - c + (ctas - 1)) // ctas, 0)
    return sk + dp


def stream_k_unit(c, j, ctas, tiles, k_tiles, sk_tiles) -> tuple:
    """Unit ``j`` of CTA ``c``: (linear tile index, first K step, K steps). A unit with fewer
    than ``k_tiles`` steps is a *partial* unit: its tile's other steps belong to other CTAs
    (``stream_k_contributors``) and the partial sums are added by the fix-up.

    The order keeps the CTAs in K step with each other, for L2 reuse: a CTA whose range touches
    tiles t0 < ... < t1 takes the *head* of t1 first (K steps from 0), then the *tail* of t0
    (up to ``k_tiles``), then t0 + 1 .. t1 - 1 whole, then its data-parallel tiles. At time
    step T every CTA then reads K step T (in a head) or one congruent to T - r modulo
    ``k_tiles`` (r: the range's length, the same for every CTA within one), so the CTAs on the
    tiles of one A row-panel or B column-panel read the same K slabs at about the same time, as
    in a data-parallel wave. Walking each range in tile order instead starts CTA c at K step
    ``c r mod k_tiles``: every CTA at its own K step, no slab shared while it is in L2, up to
    twice the HBM traffic (benchmarks/gemm_stream_k_l2.py; docs/matmul.md, "Stream-K")."""
    begin, end = stream_k_range(c, ctas, k_tiles, sk_tiles)
    sk = _sk_units(begin, end, k_tiles)
    is_sk = j < sk
    t0 = begin // k_tiles
    t = _select(is_sk, _select(j == 0, t0 + sk - 1, t0 + j - 1),
                sk_tiles + c + (j - sk) * ctas)
    base = t * k_tiles
    k0 = _select(is_sk, _max(begin - base, 0), 0)
    k1 = _select(is_sk, _min(end - base, k_tiles), k_tiles)
    return t, k0, k1 - k0


def _owner(i, ctas, total):
    """The CTA whose stream-K range holds iteration ``i`` (every range non-empty)."""
    return ((i + 1) * ctas - 1) // total


def stream_k_contributors(s, ctas, k_tiles, sk_tiles) -> tuple:
    """(first, last) CTA whose ranges cover stream-K tile ``s``: the tile's partial sums come
    from CTAs first..last, in that order (every range is non-empty: ``sk_tiles x k_tiles >=
    ctas``)."""
    total = sk_tiles * k_tiles
    return (_owner(s * k_tiles, ctas, total),
            _owner((s + 1) * k_tiles - 1, ctas, total))


def stream_k_slot(c, s, ctas, k_tiles, sk_tiles):
    """The workspace slot of CTA ``c``'s partial sums of stream-K tile ``s``: ``2 c`` for the
    CTA's first unit, ``2 c + 1`` for its last (its other units are whole tiles: no partial),
    so ``2 x ctas`` slots serve every launch."""
    begin, _ = stream_k_range(c, ctas, k_tiles, sk_tiles)
    return 2 * c + _select(begin // k_tiles == s, 0, 1)


@struct
class StreamKScheduler:
    """The stream-K + data-parallel persistent scheduler (Osama et al., "Stream-K:
    Work-centric Parallel Decomposition for Dense Matrix-Matrix Multiplication on the GPU",
    PPoPP 2023; CUTLASS ``PersistentTileSchedulerSm90StreamK``'s "DP + SK" hybrid): the tile
    order of ``inner`` (a ``PersistentTileScheduler``: raster, group swizzle, batches), its
    first ``sk_tiles`` tiles split by K iterations evenly over the grid's CTAs, the others whole
    (the functions above). Every role of a CTA walks the same units::

        for j in range(sched.units()):
            m_blk, n_blk, batch, t, k0, count = sched.unit(j)   # K steps [k0, k0 + count)

    A unit with ``count < k_tiles`` covers part of stream-K tile ``t``; CTAs
    ``sched.contributors(t)`` cover the whole of it and ``sched.slot(t)`` is this CTA's
    workspace slot for it. ``k_tiles``, ``sk_tiles`` dynamic Int32; launch a 1-D grid of
    ``ctas`` CTAs with ``sk_tiles x k_tiles >= ctas`` (no empty range) or ``sk_tiles = 0``
    (all data-parallel). Int32 arithmetic: ``(sk_tiles x k_tiles + 1) x ctas < 2^31``."""

    inner: PersistentTileScheduler
    k_tiles: Int32
    sk_tiles: Int32

    @classmethod
    def create(cls, tiles_m, tiles_n, batches, k_tiles, sk_tiles, raster: str = "M",
               group: int = 8) -> "StreamKScheduler":
        """The scheduler of a ``tiles_m x tiles_n`` tile grid per batch with ``k_tiles`` K steps
        per tile, the first ``sk_tiles`` tiles stream-K (ints or dynamic integers). Raises
        OperandError as ``PersistentTileScheduler.create``."""
        _check(raster, group, "ws.sched.StreamKScheduler.create()")
        inner = PersistentTileScheduler.create(tiles_m, tiles_n, batches, raster, group)
        return cls(inner, Int32(k_tiles), Int32(sk_tiles))

    def units(self) -> Int32:
        """This CTA's work units (stream-K ones first)."""
        return stream_k_units(block_idx()[0], grid_dim()[0], self.inner.num_tiles(),
                              self.k_tiles, self.sk_tiles)

    def unit(self, j) -> tuple:
        """(m_blk, n_blk, batch, linear tile, first K step, K steps) of this CTA's unit ``j``."""
        t, k0, count = stream_k_unit(block_idx()[0], Int32(j), grid_dim()[0],
                                     self.inner.num_tiles(), self.k_tiles, self.sk_tiles)
        m, n, batch = self.inner.tile(t)
        return m, n, batch, t, k0, count

    def contributors(self, t) -> tuple:
        """(first, last) CTA of stream-K tile ``t``'s partial sums."""
        return stream_k_contributors(t, grid_dim()[0], self.k_tiles, self.sk_tiles)

    def slot(self, t, c=None) -> Int32:
        """CTA ``c``'s (default: this CTA's) workspace slot of stream-K tile ``t``."""
        c = block_idx()[0] if c is None else c
        return stream_k_slot(c, t, grid_dim()[0], self.k_tiles, self.sk_tiles)
