"""The TMA-store epilogue (``ws.epilogue``): wgmma accumulators -> registers converted -> shared
memory -> one TMA store per sub-tile, double-buffered so the stores overlap the next sub-tile's
conversion (and, in a persistent kernel, the next tile's mainloop).

A CTA tile of ``tile_m x tile_n`` (``tile_m = 64 x`` the consumer warpgroups, each holding one
m64n``tile_n`` f32 accumulator) is written in column sub-tiles one swizzle span wide
(``sub_cols``: with the default 128-byte swizzle 64 columns of a 16-bit dtype, 32 of f32; with a
64-byte swizzle half that, for a ``tile_n`` such as 96 that 64 does not divide). Per sub-tile
``j``, all ``threads``
consumer threads::

    convert their accumulator elements of columns [j sub_cols, (j + 1) sub_cols)
      (16-bit outputs: ``stmatrix.x4``, 16 x 16 per warp per instruction; f32: ``st.shared``)
      into buffer j % 2, a (tile_m, sub_cols) swizzled smem array
    fence.proxy.async.shared::cta          # the generic-proxy writes, visible to TMA
    leader: cp.async.bulk.wait_group.read 0   # store j - 1 has read buffer (j + 1) % 2
    bar.sync barrier_id, threads           # named barrier of the consumer threads only
    leader: cp.async.bulk.tensor store of buffer j % 2; cp.async.bulk.commit_group

so buffer j % 2 is rewritten (at sub-tile j + 2) only after its store has read it, and the
consumers never wait for a store's global writes; ``tail`` waits for those once, before exit.
The host describes the output with ``box`` (``(1,) + box`` for a batched 3-D output) and the
epilogue's ``swizzle``. CUTLASS: ``collective/sm90_epilogue_tma_warpspecialized.hpp`` (the same
sequence, there with an smem pipeline of its own). PTX ISA 8.0: stmatrix, fence.proxy.async,
bar.sync, cp.async.bulk.tensor, cp.async.bulk.commit_group / wait_group.
"""
from __future__ import annotations

from .arch import barrier_sync
from .fragment import Fragment
from .mma import stmatrix
from .operands import operand_error
from .pipeline import _if_then
from .scalars import BFloat16, Float16, Float32
from .smem import Array
from .sync import fence_proxy_async
from . import tma as _tma
from .wgmma import accumulator_coords
from .wgmma_tiles import TileLayout

__all__ = ["TmaStoreEpilogue"]

_OUT_DTYPES = (Float16, BFloat16, Float32)
BUFFERS = 2


class TmaStoreEpilogue:
    """Static description of a TMA-store epilogue: output ``dtype`` (ws.Float16, ws.BFloat16 or
    ws.Float32), the tile ``tile_m x tile_n`` (tile_m a multiple of 64; tile_n a multiple of
    ``sub_cols``) held by ``warpgroups`` consumer warpgroups (default ``tile_m / 64``: one m64
    accumulator each; fewer, and each holds ``tile_m / 64 / warpgroups`` accumulators of
    consecutive 64-row blocks), and ``barrier_id`` (a named barrier no other code of the
    kernel uses with another thread count; 1..15; ``store`` may override it with a dynamic id)
    and ``swizzle`` (bytes: 128, or 64 / 32 for narrower sub-tiles; the output descriptor's
    swizzle). ``threads`` = 128 x warpgroups. Raises ValueError for a configuration it cannot
    store.
    ``buffer_spec`` is the smem field to allocate (``buffer_shape`` its shape, to stack copies
    of), ``box`` the TMA box of the output's descriptor (outermost first, elements)."""

    def __init__(self, dtype, tile_m: int, tile_n: int, barrier_id: int = 1, warpgroups=None,
                 swizzle: int = 128):
        if dtype not in _OUT_DTYPES:
            raise ValueError(f"TmaStoreEpilogue: dtype must be ws.Float16, ws.BFloat16 or "
                             f"ws.Float32, got {dtype!r}")
        self.dtype = dtype
        if swizzle not in (32, 64, 128) or swizzle // dtype.ir_type.nbytes < 16:
            raise ValueError(f"TmaStoreEpilogue: swizzle must be 128, 64 or 32 bytes, a span "
                             f"of at least 16 columns (one stmatrix), got {swizzle!r} for "
                             f"{dtype.__name__}")
        self.swizzle = swizzle
        self.sub_cols = swizzle // dtype.ir_type.nbytes
        if tile_m % 64 or not 64 <= tile_m <= 256:
            raise ValueError(f"TmaStoreEpilogue: tile_m must be 64, 128, 192 or 256 (m64 "
                             f"accumulators of the consumer warpgroups), got {tile_m!r}")
        if tile_n % self.sub_cols or not 0 < tile_n <= 256:
            raise ValueError(f"TmaStoreEpilogue: tile_n must be a multiple of {self.sub_cols} "
                             f"(one {swizzle}-byte span of {dtype.__name__}) up to 256, got "
                             f"{tile_n!r}")
        if not 1 <= barrier_id < 16:
            raise ValueError(f"TmaStoreEpilogue: barrier_id must be in [1, 16) (0 is "
                             f"sync_threads'), got {barrier_id!r}")
        warpgroups = tile_m // 64 if warpgroups is None else warpgroups
        if warpgroups not in range(1, tile_m // 64 + 1) or (tile_m // 64) % warpgroups:
            raise ValueError(f"TmaStoreEpilogue: warpgroups must divide tile_m / 64 = "
                             f"{tile_m // 64}, got {warpgroups!r}")
        self.tile_m, self.tile_n, self.barrier_id = tile_m, tile_n, barrier_id
        self.warpgroups = warpgroups
        self.per_warpgroup = tile_m // 64 // warpgroups       # accumulators per warpgroup
        self.threads = 128 * warpgroups
        self.layout = TileLayout(tile_m, self.sub_cols, dtype, swizzle=swizzle)
        self.box = self.layout.box                        # (tile_m, sub_cols)
        self.buffer_shape = (BUFFERS, tile_m, self.sub_cols)
        self.buffer_spec = Array(dtype, self.buffer_shape, swizzle=swizzle)
        self.smem_bytes = BUFFERS * self.layout.nbytes

    def __static_key__(self):
        return ("TmaStoreEpilogue", self.dtype.__name__, self.tile_m, self.tile_n,
                self.barrier_id, self.warpgroups, self.swizzle)

    def __repr__(self) -> str:
        return (f"<TmaStoreEpilogue {self.dtype.__name__} {self.tile_m}x{self.tile_n} by "
                f"{self.warpgroups} warpgroup(s) in {self.tile_m}x{self.sub_cols} sub-tiles "
                f"({self.swizzle}-byte swizzle), barrier {self.barrier_id}>")

    def store(self, accs, tid, desc, buffers, coords, transform=None, barrier_id=None) -> None:
        """Store the tile whose first element is at ``coords`` (the output descriptor's
        coordinates, outermost first: ``(row0, col0)`` or ``(batch, row0, col0)``).

        ``accs``: this thread's waited-for m64n``tile_n`` f32 accumulator (``wait_group``'s
        result), or a list of ``per_warpgroup`` of them (64-row blocks in order); ``tid``: the
        thread's index among the ``threads`` threads (dynamic; warpgroup ``w = tid // 128``
        holds rows from ``64 per_warpgroup w``); ``desc``: the output's TMA descriptor (box
        ``box``, swizzle ``swizzle``); ``buffers``: an allocated ``buffer_spec`` array.
        ``transform(x, row, col)``: applied to each f32 element with its row and column in the
        tile (dynamic Int32) before the conversion, or None. ``barrier_id``: None (the
        configured one) or a dynamic warp-uniform id. Called by all ``threads`` threads (it
        contains ``bar.sync barrier_id, threads``). Raises OperandError for accumulators of
        another shape."""
        accs = list(accs) if isinstance(accs, (list, tuple)) else [accs]
        if len(accs) != self.per_warpgroup or any(
                not isinstance(a, Fragment) or len(a) * 2 != self.tile_n for a in accs):
            raise operand_error("TmaStoreEpilogue.store()'s accumulators", accs,
                                f"{self.per_warpgroup} m64n{self.tile_n} f32 Fragment(s) "
                                f"({self.tile_n // 2} registers each), waited for",
                                "pass ws.wgmma.wait_group(0, acc)")
        bar = self.barrier_id if barrier_id is None else barrier_id
        wg, warp, lane = tid // 128, (tid // 32) % 4, tid % 32
        frag = accumulator_coords(self.tile_n, tid)       # (row, col) of each register
        per_sub = self.sub_cols // 2                      # accumulator registers per sub-tile
        count = self.tile_n // self.sub_cols
        leader = tid == 0
        if count % BUFFERS:
            # an odd count: the previous tile's last store read buffer 0, which sub-tile 0
            # rewrites; wait for that read (one barrier per tile, not per sub-tile)
            _if_then(leader, lambda: _tma.wait_group(0, read=True))
            barrier_sync(bar, self.threads)
        for j in range(count):
            buf = buffers[j % BUFFERS]
            for blk, acc in enumerate(accs):
                block0 = (wg * self.per_warpgroup + blk) * 64
                self._write(buf, acc, j, block0, frag, warp, lane, per_sub, transform)
            fence_proxy_async()
            _if_then(leader, lambda: _tma.wait_group(0, read=True))
            barrier_sync(bar, self.threads)
            offset = list(coords)
            offset[-1] = offset[-1] + j * self.sub_cols

            def issue(buf=buf, offset=offset):
                _tma.store(desc, buf, tuple(offset))
                _tma.commit_group()
            _if_then(leader, issue)

    def _write(self, buf, acc, j, block0, frag, warp, lane, per_sub, transform) -> None:
        """Sub-tile ``j`` of one accumulator (rows ``block0`` ..; register i at ``frag[i]`` in
        the block) into ``buf``: the transform, then stmatrix (16-bit outputs) or st.shared
        (f32)."""
        regs = range(j * per_sub, (j + 1) * per_sub)
        vals = [acc[i] if transform is None else
                transform(acc[i], block0 + frag[i][0], frag[i][1]) for i in regs]
        if self.dtype is Float32:
            for i, x in zip(regs, vals):
                buf[block0 + frag[i][0], frag[i][1] - j * self.sub_cols] = x
        else:
            self._stmatrix(buf, Fragment(Float32, vals).to(self.dtype), block0, warp, lane)

    def _stmatrix(self, buf, frag, block0, warp, lane) -> None:
        """One ``stmatrix.x4`` per 16 columns: 8 converted registers (two n8 blocks) of a warp
        are four 8x8 matrices, matrix m = rows 8 (m % 2) .. of block m // 2; lane l gives the
        address of row l % 8 of matrix l // 8."""
        m = lane // 8
        row = block0 + 16 * warp + (m % 2) * 8 + lane % 8
        for pair in range(self.sub_cols // 16):
            part = frag[8 * pair:8 * pair + 8]
            stmatrix(buf.ptr + self.layout.offset(row, 16 * pair + (m // 2) * 8), part)

    def tail(self, tid) -> None:
        """The leader waits for all its stores' global writes (``cp.async.bulk.wait_group 0``):
        call once after the last ``store``, before the CTA exits."""
        _if_then(tid == 0, lambda: _tma.wait_group(0))

