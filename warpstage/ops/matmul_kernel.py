"""The warp-specialized persistent TMA + wgmma GEMM behind ``ws.ops.matmul`` (CUTLASS sm90
"KernelTmaWarpSpecializedCooperative" style; docs/matmul.md walks through it).

    C[b] (M x N) = epilogue(A[b] (M x K) @ B[b] (K x N)),  fp16/bf16 or fp8 in, f32 accumulation

384 threads per CTA (256 with ``tile_m=64``: one consumer warpgroup), one CTA per SM, each
walking output tiles of ``tile_m x tile_n`` (128 or 64 rows) with the
static persistent tile scheduler (``ws.sched``):

- warpgroup 0, the producer (``setmaxnreg.dec`` to ``producer_regs``): one elected thread of
  warp 0 loads, per K step of ``tile_k`` (128 bytes: 64 of f16/bf16, 128 of fp8), A's
  128 x tile_k and B's tile_k x ``tile_n`` tiles by TMA into a
  ``ws.pipeline.PipelineTmaAsync`` ring of ``num_stages`` stages (128-byte swizzle). The ring
  runs on across tiles, so the next tile's loads overlap this tile's epilogue.
- warpgroups 1 and 2, the consumers (``setmaxnreg.inc`` to ``mma_regs``), cooperate on the tile:
  each computes its 64 rows x ``tile_n`` with ``wgmma.m64n{tile_n}k16`` (``k32`` for fp8; A
  and B from the swizzled smem stage through matrix descriptors, K-major or MN-major as the
  operands' strides say; fp8 K-major only), four K steps per stage in one wgmma-group; ONE
  group stays in flight: after
  issuing stage s they ``wait_group(1)`` (stage s - 1's group is done) and release stage s - 1.
- then the TMA-store epilogue (``ws.epilogue.TmaStoreEpilogue``): the optional user epilogue
  (``epilogue.apply``) per element, conversion to ``out_dtype``, stmatrix into a
  double-buffered swizzled smem sub-tile, ``fence.proxy.async``, a named barrier among the
  256 consumer threads, one thread's TMA store; the stores complete while the next tile's
  mainloop runs.

Rows / columns / K past the tensors: TMA loads read zeros and TMA stores clip, so any M, N, K
(K >= 1) works without masks. ``stream_k``: the work units come from
``ws.sched.StreamKScheduler`` (the last partial wave's tiles split by K steps over the CTAs) and
a unit covering part of a tile goes through the counter fix-up of ``matmul_consumer.py``.
"""
from __future__ import annotations

import copy

import warpstage as ws

from ..core.static_key import static_key
from ..lang.epilogue import TmaStoreEpilogue
from ..lang.operands import operand_error
from ..lang.scalars import BFloat16, Float8E4M3FN, Float8E5M2, Float16, Float32, Int32
from ..lang.sched import (RASTERS, ClusterTileScheduler, PersistentTileScheduler,
                          StreamKScheduler)
from ..lang.wgmma import TileLayout
from ..lang.wgmma_tiles import mma_k_of
from ..options import LIBRARY_SPECIALIZATIONS
from .matmul_consumer import MatmulConsumer
from .matmul_producer import CLUSTERS, MatmulProducer

__all__ = ["Matmul", "matmul_kernel", "TILE_M", "TILE_K", "tile_k_of", "FP8_DTYPES"]

TILE_M = 128                   # two consumer warpgroups of 64 rows (wgmma's M)
TILE_K = 64                    # 128 bytes of a 16-bit dtype: one swizzle span, one TMA box
FP8_DTYPES = (Float8E4M3FN, Float8E5M2)
_IN_DTYPES = (Float16, BFloat16) + FP8_DTYPES


def tile_k_of(dtype) -> int:
    """K per stage: one 128-byte swizzle span of ``dtype`` (64 f16/bf16, 128 fp8)."""
    return 128 // dtype.ir_type.nbytes
_OUT_DTYPES = (Float16, BFloat16, Float32)
_MAJORS = ("K", "MN")
SCHEDULES = ("cooperative", "pingpong")


class Matmul(MatmulProducer, MatmulConsumer):
    """Static policy of the GEMM kernel (configuration + per-role device code).

    ``dtype``: A's and B's ws.Float16 / ws.BFloat16, or A's ws.Float8E4M3FN / ws.Float8E5M2
    (``b_dtype``: B's, another 8-bit float or, by default, ``dtype``; fp8 needs both majors
    "K" and doubles the stage's K to 128). ``out_dtype``: C's ws.Float16,
    ws.BFloat16 or ws.Float32. ``a_major`` / ``b_major``: which dimension of A (M x K) and of
    B (K x N) is contiguous in memory: "K" (A row-major, B column-major, i.e. an (N, K)
    row-major weight) or "MN". ``batched``: 3-D (batch, rows, cols) operands. ``tile_n``: N per
    CTA tile, 64, 128, 192 or 256. ``tile_m``: M per tile, 128 (two consumer warpgroups of 64
    rows: 384 threads) or 64 (one consumer warpgroup, 256 threads: small M, where a 128-row
    tile would compute rows past M; cooperative schedule only). ``num_stages``: the TMA ring depth
    (>= 2). ``raster`` ('M' / 'N') and ``group``: the tile scheduler's order and swizzle band.
    ``cluster``: (1, 1), or (2, 1) / (1, 2): two CTAs of a thread-block cluster on M- / N-
    adjacent tiles, the shared B / A tile loaded half by each and multicast to both
    (``matmul_producer.py``). ``epilogue``: None
    or a static object with a ``@ws.jit`` ``apply(x, row, col, operands)`` method
    (``warpstage.ops.matmul_epilogues.Epilogue``). ``producer_regs`` / ``mma_regs``:
    ``setmaxnreg`` counts of the producer and the consumer warpgroups. ``schedule``:
    "cooperative" (both consumer warpgroups on one tile) or "pingpong" (alternate tiles, turns
    through an OrderedBarrier; tile_n 64 or 128), see ``matmul_consumer.py``. ``stream_k``:
    stream-K work units (cooperative, no split-K, no cluster; the kernel then takes the
    stream-K tile count and the fix-up's workspace and counters).

    Raises ValueError naming the field for a configuration the kernel cannot run (shared
    memory included)."""

    producer_threads = 128

    def __init__(self, dtype=BFloat16, out_dtype=None, a_major="K", b_major="MN",
                 batched=False, tile_n=256, num_stages=4, raster="M", group=8, cluster=(1, 1),
                 epilogue=None, producer_regs=40, mma_regs=232, schedule="cooperative",
                 split_k=False, b_dtype=None, tile_m=TILE_M, stream_k=False):
        fp8 = dtype in FP8_DTYPES
        b_dtype = dtype if b_dtype is None else b_dtype
        out_dtype = (BFloat16 if fp8 else dtype) if out_dtype is None else out_dtype
        if dtype not in _IN_DTYPES:
            raise _policy_error("dtype", dtype, "ws.Float16, ws.BFloat16, ws.Float8E4M3FN or "
                                "ws.Float8E5M2", "dtype=ws.BFloat16")
        if (b_dtype in FP8_DTYPES) != fp8 or (not fp8 and b_dtype is not dtype):
            raise _policy_error("b_dtype", b_dtype, f"dtype ({dtype!r}), or with an fp8 dtype "
                                "another fp8 dtype", "b_dtype=None (the dtype of a)")
        if fp8 and (a_major, b_major) != ("K", "K"):
            raise _policy_error("a_major/b_major", (a_major, b_major), "('K', 'K'): fp8 "
                                "operands K-major (wgmma's fp8 forms have no transpose)",
                                "a_major='K', b_major='K' (ws.ops.scaled_matmul copies other "
                                "layouts)")
        if out_dtype not in _OUT_DTYPES:
            raise _policy_error("out_dtype", out_dtype, "ws.Float16, ws.BFloat16 or ws.Float32",
                                "out_dtype=ws.Float32, or None for the input dtype")
        for name, v in (("a_major", a_major), ("b_major", b_major)):
            if v not in _MAJORS:
                raise _policy_error(name, v, "'K' (K contiguous) or 'MN' (M or N contiguous)",
                                    f"{name}='K' or {name}='MN'")
        self.check_fields(tile_n=tile_n, schedule=schedule, tile_m=tile_m,
                          num_stages=num_stages, raster=raster, group=group, cluster=cluster)
        cluster = tuple(cluster) if isinstance(cluster, (tuple, list)) else cluster
        if schedule == "pingpong" and tile_n > 128:
            raise _policy_error("tile_n", tile_n, "64 or 128 with schedule='pingpong' (a "
                                "warpgroup holds a whole 128 x tile_n tile: tile_n f32 registers "
                                "per thread)", "tile_n=128, or schedule='cooperative'")
        if split_k and (out_dtype is not Float32 or epilogue is not None
                        or schedule != "cooperative"):
            raise _policy_error("split_k", split_k, "out_dtype=ws.Float32, epilogue=None and "
                                "schedule='cooperative' with split_k=True (it writes f32 "
                                "partial sums; the epilogue runs once they are added up, in "
                                f"splitk_reduce), with out_dtype={out_dtype.__name__}, "
                                f"epilogue={type(epilogue).__name__}, schedule={schedule!r}",
                                "call warpstage.ops.matmul, which plans it")
        if stream_k and (split_k or schedule != "cooperative" or cluster != (1, 1)):
            raise _policy_error("stream_k", stream_k, "schedule='cooperative', split_k=False "
                                "and cluster=(1, 1) with stream_k=True (the fix-up adds the "
                                "partial tiles of the cooperative consumers of single CTAs), "
                                f"with schedule={schedule!r}, split_k={split_k}, "
                                f"cluster={cluster}", "call warpstage.ops.matmul, which plans "
                                "it")
        for name, r in (("producer_regs", producer_regs), ("mma_regs", mma_regs)):
            if isinstance(r, bool) or not isinstance(r, int) or r % 8 or not 24 <= r <= 256:
                raise _policy_error(name, r, "a multiple of 8 in [24, 256] (setmaxnreg's "
                                    "register count)", "producer_regs=40, mma_regs=232 (the "
                                    "defaults)")
        if 128 * producer_regs + 256 * mma_regs > 65536:
            raise _policy_error("mma_regs", mma_regs, f"128 x producer_regs + 256 x mma_regs "
                                f"<= 65536 (the SM's registers); 128 x {producer_regs} + 256 x "
                                f"{mma_regs} = {128 * producer_regs + 256 * mma_regs}",
                                "lower mma_regs or producer_regs")
        self.dtype, self.b_dtype, self.out_dtype = dtype, b_dtype, out_dtype
        self.tile_k, self.mma_k = tile_k_of(dtype), mma_k_of(dtype)
        self.a_major, self.b_major, self.batched = a_major, b_major, bool(batched)
        self.tile_n, self.num_stages, self.raster, self.group = tile_n, num_stages, raster, group
        self.cluster = cluster
        self.schedule = schedule
        self.split_k = bool(split_k)
        self.stream_k = bool(stream_k)
        self.tile_m = tile_m
        self.consumer_threads = 2 * 128 if schedule == "pingpong" else 2 * tile_m
        self.threads = self.producer_threads + self.consumer_threads
        self.consumer_arrivals = 128 if schedule == "pingpong" else 2 * tile_m    # per stage
        self.epilogue = epilogue
        self.producer_regs, self.mma_regs = producer_regs, mma_regs
        # smem tiles: rows x cols with cols contiguous (TileLayout); K-major A is M x K, MN-major
        # A is K x M; K-major B is N x K, MN-major B is K x N
        tk = self.tile_k
        self.a_layout = (TileLayout(tile_m, tk, dtype, 128) if a_major == "K"
                         else TileLayout(tk, tile_m, dtype, 128))
        self.b_layout = (TileLayout(tile_n, tk, b_dtype, 128) if b_major == "K"
                         else TileLayout(tk, tile_n, b_dtype, 128))
        self.stage_bytes = self.a_layout.nbytes + self.b_layout.nbytes
        self.out, c_spec = epilogue_buffers(out_dtype, tile_n, schedule, tile_m)
        self.SharedStorage = ws.smem.make_storage(
            "MatmulStorage",
            a=ws.smem.Array(dtype, (num_stages,) + self.a_layout.shape, swizzle=128),
            b=ws.smem.Array(b_dtype, (num_stages,) + self.b_layout.shape, swizzle=128),
            c=c_spec,
            barriers=ws.pipeline.BarrierStorage[num_stages],
            **({"last": ws.smem.Array(Int32, (4,))} if self.stream_k else {}))
        self.smem_bytes = ws.smem.size_of(self.SharedStorage)
        if self.smem_bytes > ws.smem.MAX_DYNAMIC_SMEM:
            most = max_stages(tile_n, out_dtype, dtype, schedule, tile_m)
            raise _policy_error("num_stages", num_stages, f"at most {most} for "
                                f"tile_n={tile_n}: {num_stages} stages of {self.stage_bytes} "
                                f"bytes and the {c_spec.nbytes}-byte epilogue buffers need "
                                f"{self.smem_bytes} bytes of shared memory, more than the "
                                f"{ws.smem.MAX_DYNAMIC_SMEM} a CTA may use",
                                f"num_stages={most} "
                                "or less, or a smaller tile_n")

    @staticmethod
    def check_fields(**fields) -> None:
        """ValueError (the OperandError of ``_policy_error``, naming the field, expected vs got
        and a Fix) for the first of the given single fields the kernel does not have, checked
        in this order: ``tile_n``, ``schedule``, ``tile_m`` (against ``schedule``, default
        'cooperative'), ``num_stages``, ``raster``, ``group``, ``cluster`` (a tuple or list).
        ``__init__`` checks all of them; the host (``matmul_config.check_arguments``) the ones
        a caller gave, before it plans with them."""
        if "tile_n" in fields:
            check_tile_n(fields["tile_n"])
        schedule = fields.get("schedule", "cooperative")
        if schedule not in SCHEDULES or not isinstance(schedule, str):
            raise _policy_error("schedule", schedule, "'cooperative' or 'pingpong'",
                                "schedule='cooperative' (the default)")
        if "tile_m" in fields:
            Matmul.check_tile_m(fields["tile_m"], schedule)
        num_stages = fields.get("num_stages", 2)
        if isinstance(num_stages, bool) or not isinstance(num_stages, int) or num_stages < 2:
            raise _policy_error("num_stages", num_stages, "an int >= 2 (TMA stages in the "
                                "smem ring)", "num_stages=4 (the default)")
        raster = fields.get("raster", "M")
        if raster not in RASTERS or not isinstance(raster, str):
            raise _policy_error("raster", raster, "'M' or 'N' (the grid walks M or N first)",
                                "raster='M' (the default)")
        group = fields.get("group", 1)
        if isinstance(group, bool) or not isinstance(group, int) or group < 1:
            raise _policy_error("group", group, "an int >= 1 (tiles per raster group)",
                                "group=8 (the default)")
        cluster = fields.get("cluster", (1, 1))
        if (tuple(cluster) if isinstance(cluster, (tuple, list)) else cluster) not in CLUSTERS:
            raise _policy_error("cluster", cluster, "(1, 1), (2, 1) (two M-adjacent tiles "
                                "sharing B by TMA multicast) or (1, 2) (N-adjacent, sharing A)",
                                "cluster=(1, 1) (the default) or cluster=(2, 1)")

    @staticmethod
    def check_tile_m(tile_m, schedule) -> None:
        """ValueError unless ``tile_m`` (rows per tile) is one the kernel has with
        ``schedule``."""
        if tile_m not in TILE_MS or isinstance(tile_m, bool):
            raise _policy_error("tile_m", tile_m, f"one of {TILE_MS} (128: two consumer "
                                "warpgroups of 64 rows; 64: one)", "tile_m=128 (the default)")
        if tile_m != TILE_M and schedule == "pingpong":
            raise _policy_error("tile_m", tile_m, f"{TILE_M} with schedule={schedule!r} (a "
                                "ping-pong warpgroup holds a whole 128-row tile)",
                                "tile_m=128, or schedule='cooperative'")

    def with_epilogue(self, epilogue) -> "Matmul":
        """This policy with ``epilogue`` in place of its own: a shallow copy sharing the derived
        smem layouts and storage, which do not depend on the epilogue (its class and fields
        still specialize the kernel, through ``__static_key__``). ``ws.ops.matmul`` derives a
        configuration once (``matmul_host.policy_for``, cached) and makes the per-call policy of
        an epilogue with this, so a call does not rebuild the layouts (that rebuild was ~0.6 ms
        of host time per ``scaled_matmul`` call on the H200's host). Raises ValueError for an
        epilogue on a ``split_k`` policy, as the constructor does."""
        if epilogue is self.epilogue:
            return self
        if self.split_k and epilogue is not None:
            raise _policy_error("split_k", True, "epilogue=None with split_k=True (the epilogue "
                                "runs once the partials are added up, in splitk_reduce), with "
                                f"epilogue={type(epilogue).__name__}",
                                "call warpstage.ops.matmul, which plans it")
        p = copy.copy(self)
        p.epilogue = epilogue
        return p

    def __static_key__(self):
        # (name, value) pairs: a RecompileWarning names the fields that changed
        # ("epilogue.scale 1.0 -> 2.0"), frontend/kinds/diff.py
        return (("dtype", self.dtype.__name__), ("b_dtype", self.b_dtype.__name__),
                ("out_dtype", self.out_dtype.__name__), ("a_major", self.a_major),
                ("b_major", self.b_major), ("batched", self.batched), ("tile_n", self.tile_n),
                ("num_stages", self.num_stages), ("raster", self.raster), ("group", self.group),
                ("producer_regs", self.producer_regs), ("mma_regs", self.mma_regs),
                ("epilogue", static_key(self.epilogue)), ("schedule", self.schedule),
                ("split_k", self.split_k), ("tile_m", self.tile_m), ("cluster", self.cluster),
                ("stream_k", self.stream_k))

    def __repr__(self) -> str:
        ab = self.dtype.__name__ + ("" if self.b_dtype is self.dtype
                                    else f" x {self.b_dtype.__name__}")
        return (f"Matmul({ab} -> {self.out_dtype.__name__}, A {self.a_major}-"
                f"major, B {self.b_major}-major{', batched' if self.batched else ''}, "
                f"{self.tile_m} x {self.tile_n} tiles, {self.schedule}, {self.num_stages} "
                f"stages, raster {self.raster}/{self.group}, epilogue "
                f"{type(self.epilogue).__name__}"
                f"{', split-K partials' if self.split_k else ''}"
                f"{', stream-K' if self.stream_k else ''}"
                f"{f', cluster {self.cluster}' if self.cluster != (1, 1) else ''})")

    # -- host-side facts -----------------------------------------------------------------------
    def descriptor_boxes(self) -> tuple:
        """The TMA boxes (outermost first) of the A, B and C descriptors. A is described as the
        (M, K) tensor when K-major, else as its (K, M) transpose; B as (K, N) when MN-major,
        else as (N, K); C as (M, N). Batched: a leading box dimension of 1; split-K: C is the
        (batches x splits, M, N) f32 workspace, so its box has the leading 1 too."""
        pre = (1,) if self.batched else ()
        return (pre + self.operand_box(self.a_layout, "A"),
                pre + self.operand_box(self.b_layout, "B"),
                ((1,) if self.batched or self.split_k else ()) + self.out.box)

    def tiles(self, m: int, n: int, batches: int = 1, splits: int = 1) -> int:
        """Work units of an M x N (x batches) problem: output tiles, times ``splits`` K ranges."""
        return -(-m // self.tile_m) * -(-n // self.tile_n) * batches * splits

    def cluster_tiles(self, m: int, n: int, batches: int = 1, splits: int = 1) -> int:
        """Work units of clusters: ``cluster_m x cluster_n`` blocks of tiles (x splits)."""
        cm, cn = self.cluster
        return (-(-(-(-m // self.tile_m)) // cm) * -(-(-(-n // self.tile_n)) // cn) * batches
                * splits)

    def unit_range(self, sched) -> tuple:
        """(start, stop, step) of the loop over this CTA's work units: tiles first, + gridDim.x,
        ...; with ``stream_k``, the CTA's own units 0 .. ``sched.units()`` (``work`` takes the
        loop variable either way)."""
        if self.stream_k:
            return 0, sched.units(), 1
        return sched.first(), sched.num_tiles(), sched.stride()

    def work(self, sched, t, k_tiles, splits):
        """Work unit ``t``: (m_blk, n_blk, batch of A/B, batch of C, first K step, K steps).
        Split-K: the scheduler's batch index is ``batch * splits + split``, split s takes K steps
        [s ks, min((s + 1) ks, k_tiles)) with ks = ceil(k_tiles / splits) (the host picks
        ``splits`` so that none is empty) and its partial sums go to workspace batch
        ``batch * splits + s``."""
        if self.stream_k:                           # t: the CTA's unit index
            m_blk, n_blk, batch, _, k0, count = sched.unit(t)
            return m_blk, n_blk, batch, batch, k0, count
        m_blk, n_blk, unit = sched.tile(t)
        if self.split_k:
            batch = unit // splits
            ks = (k_tiles + (splits - 1)) // splits
            k0 = (unit - batch * splits) * ks
            return m_blk, n_blk, batch, unit, k0, ws.math.min(ks, k_tiles - k0)
        return m_blk, n_blk, unit, unit, 0, k_tiles


TILE_NS = (64, 128, 192, 256)
TILE_MS = (128, 64)


def epilogue_buffers(out_dtype, tile_n: int, schedule: str, tile_m: int = TILE_M) -> tuple:
    """(the TmaStoreEpilogue, the smem field of its buffers) of a schedule: cooperative, one
    epilogue of the consumer warpgroups (``tile_m / 64`` of them, named barrier 1); ping-pong,
    one per warpgroup (two copies of the buffers; named barrier 3 + warpgroup, passed at the
    store)."""
    if schedule == "pingpong":
        out = TmaStoreEpilogue(out_dtype, TILE_M, tile_n, barrier_id=3, warpgroups=1)
        return out, ws.smem.Array(out_dtype, (2,) + out.buffer_shape, swizzle=out.swizzle)
    out = TmaStoreEpilogue(out_dtype, tile_m, tile_n, barrier_id=1)
    return out, out.buffer_spec


def check_tile_n(tile_n) -> None:
    """ValueError unless ``tile_n`` (the columns of a CTA tile) is one the kernel has."""
    if tile_n not in TILE_NS or isinstance(tile_n, bool):
        raise _policy_error("tile_n", tile_n, f"one of {TILE_NS} (the columns of a CTA tile)",
                            "tile_n=256, or None (ws.ops.matmul: the measured per-shape "
                            "choice)")


def _policy_error(name: str, got, expected: str, fix: str):
    """The OperandError (a ValueError) of a Matmul parameter ``name`` = ``got``."""
    return operand_error(f"ws.ops.Matmul's {name}", got, expected, fix)


def max_stages(tile_n: int, out_dtype, dtype=BFloat16, schedule: str = "cooperative",
               tile_m: int = TILE_M) -> int:
    """The deepest TMA ring that fits in shared memory with the epilogue buffers (ValueError
    for a tile width the kernel does not have, ``check_tile_n``)."""
    check_tile_n(tile_n)
    stage = (tile_m + tile_n) * tile_k_of(dtype) * dtype.ir_type.nbytes
    free = ws.smem.MAX_DYNAMIC_SMEM - epilogue_buffers(out_dtype, tile_n, schedule,
                                                       tile_m)[1].nbytes
    return (free - 1024) // stage


@ws.jit
def matmul_body(p, a_desc, b_desc, c_desc, m, n, k, batches, splits, operands, storage,
                sk_tiles=0, fixup=()):
    """Pipeline and scheduler set-up, then the role by warpgroup."""
    warp = ws.arch.make_warp_uniform(ws.arch.warp_idx())
    tiles_m, tiles_n = (m + (p.tile_m - 1)) // p.tile_m, (n + (p.tile_n - 1)) // p.tile_n
    k_tiles = (k + (p.tile_k - 1)) // p.tile_k
    if ws.static(p.cluster == (1, 1)):
        pipeline = ws.pipeline.PipelineTmaAsync.create(
            storage.barriers, num_stages=p.num_stages, consumer_count=p.consumer_arrivals,
            transaction_bytes=p.stage_bytes)
        if ws.static(p.stream_k):
            sched = StreamKScheduler.create(tiles_m, tiles_n, batches, k_tiles, sk_tiles,
                                            raster=p.raster, group=p.group)
        else:
            sched = PersistentTileScheduler.create(tiles_m, tiles_n, batches * splits,
                                                   raster=p.raster, group=p.group)
    else:       # the mbarriers' init ends in a cluster barrier: peers arrive / multicast here
        pipeline = ws.pipeline.PipelineTmaMulticast.create(
            storage.barriers, num_stages=p.num_stages,
            consumer_warps=p.consumer_arrivals // 32, transaction_bytes=p.stage_bytes,
            cluster_shape=p.cluster)
        sched = ClusterTileScheduler.create(tiles_m, tiles_n, batches * splits,
                                            raster=p.raster, group=p.group, cluster=p.cluster)
    if warp < 4:
        ws.arch.setmaxnreg_decrease(p.producer_regs)
        if warp == 0:
            p.load(a_desc, b_desc, sched, k_tiles, splits, pipeline, storage)
    else:
        ws.arch.setmaxnreg_increase(p.mma_regs)
        p.consume(c_desc, sched, k_tiles, splits, m, n, operands, pipeline, storage, fixup)
    if ws.static(p.cluster != (1, 1)):
        ws.arch.cluster_sync()      # no CTA exits while its peer may still reach its smem


@ws.kernel(max_specializations=LIBRARY_SPECIALIZATIONS)
def matmul_kernel(p: ws.Static[Matmul], a_desc, b_desc, c_desc, m: ws.Int32, n: ws.Int32,
                  k: ws.Int32, batches: ws.Int32, splits: ws.Int32, operands: tuple,
                  sk_tiles: ws.Int32, fixup: tuple):
    """C = epilogue(A @ B) with policy ``p``: launch ``[ctas, p.threads]`` (``ctas`` =
    ``ws.sched.grid_size(p.tiles(M, N, batches, splits), SMs)``) with the TMA descriptors of A,
    B and C (boxes ``p.descriptor_boxes()``, 128-byte swizzle), the sizes M, N, K (K >= 1), the
    batch count, ``splits`` (1; with ``p.split_k``, the K ranges: C is then the
    (batches x splits, M, N) f32 workspace of partial sums, see ``matmul_splitk.py``) and the
    epilogue's operand tensors (a tuple; empty without an epilogue). ``sk_tiles`` and
    ``fixup``: 0 and () unless ``p.stream_k``; then the stream-K tiles (the first ``sk_tiles``
    of the tile order, split by K steps over the ``ctas`` CTAs; ``ws.sched.StreamKScheduler``)
    and (workspace, counters): a 1-D f32 tensor of ``2 x ctas x tile_m x tile_n`` partial
    sums and a 1-D int32 tensor of at least ``sk_tiles`` zeros (left zero by the call;
    ``matmul_consumer.py``, "The stream-K fix-up").
    ``warpstage.ops.matmul`` does all of it. Raises OperandError while tracing for a block
    other than ``p.threads`` or descriptors that do not match the policy."""
    check_launch(p, a_desc, b_desc, c_desc)
    storage = ws.smem.allocate(p.SharedStorage)
    matmul_body(p, a_desc, b_desc, c_desc, m, n, k, batches, splits, operands, storage,
                sk_tiles, fixup)


def check_launch(p: Matmul, a_desc, b_desc, c_desc) -> None:
    """Trace-time checks of the block (``p.threads``: the roles go by warp index, the barrier
    counts by thread) and of the three descriptors against the policy."""
    block = ws.arch.static_block_dim()
    if block != (p.threads, 1, 1):
        raise operand_error(f"matmul_kernel: the launch block (threads per CTA) for {p!r}",
                            block, f"({p.threads}, 1, 1): {p.producer_threads} producer + "
                            f"{p.consumer_threads} consumer threads", "launch as matmul_kernel"
                            "[ctas, p.threads](...), or call warpstage.ops.matmul")
    boxes = p.descriptor_boxes()
    for name, d, box, dtype in (("a_desc", a_desc, boxes[0], p.dtype),
                                ("b_desc", b_desc, boxes[1], p.b_dtype),
                                ("c_desc", c_desc, boxes[2], p.out_dtype)):
        if not isinstance(d, ws.tma.TmaDescriptor):
            raise operand_error(f"matmul_kernel: {name}", type(d).__name__,
                                "a ws.tma.TensorDescriptor kernel argument",
                                "call warpstage.ops.matmul(a, b)")
        if d.dtype is not dtype or d.box != box or d.swizzle != 128:
            raise operand_error(f"matmul_kernel: {name}",
                                f"{d.dtype.__name__} box {d.box} swizzle {d.swizzle}",
                                f"{dtype.__name__} box {box} swizzle 128",
                                "build it as ws.tma.TensorDescriptor(x, box, swizzle=128) with "
                                "box from policy.descriptor_boxes()")
