"""The consumer role of the GEMM kernel (``matmul_kernel.py``): the wgmma mainloop and the
epilogue, in the two schedules of CUTLASS's sm90 warp-specialized kernels.

- ``cooperative``: both consumer warpgroups work on one 128 x tile_n tile (64 rows each) and run
  the epilogue together (named barrier over 256 threads). The tensor cores idle during it.
- ``pingpong``: the warpgroups take alternate tiles of the CTA's sequence, each a whole
  128 x tile_n tile (two m64 accumulators), and take turns issuing their mainloops through a
  ``ws.pipeline.OrderedBarrier`` (named barriers 1 and 2): while one warpgroup runs its epilogue
  (its own smem buffers and named barrier, 3 or 4), the other's wgmmas keep the tensor cores
  busy. The ring holds the tiles' K steps in order, so each warpgroup skips the other's
  ``k_tiles`` stages after each of its tiles (``ws.sched.skip_stages``).

Both keep one wgmma-group in flight in the K loop: after issuing stage s they wait until only
that group is pending (``wait_group(1)``) and release stage s - 1.

The stream-K fix-up (``Matmul(stream_k=True)``, cooperative; ``ws.sched.StreamKScheduler``).
A unit covering only part of its tile's K steps (CTAs first..last of
``sched.contributors(t)`` share the tile) ends with the f32 accumulator in registers. Each
such unit, without waiting for any other CTA:

    store its accumulator to workspace slot ``sched.slot(t)``, thread-major (register r of
      consumer thread i at ``slot x tile + r x threads + i``: each warp store is 128
      contiguous bytes; whoever reads it runs the same threads, so no layout math)
    bar.sync 1, threads                    # every thread's partial is written
    thread 0: fence.acq_rel.gpu; old = atom.add counter[t], 1; fence.acq_rel.gpu
              (release of the CTA's partial, then acquire of the others': PTX ISA 8.x
              "Memory Consistency Model", release and acquire patterns; CUTLASS
              ``GenericBarrier::arrive_inc`` / ``wait_eq`` order them the same way)
              last = old == last - first; if last: counter[t] = 0   # the next call's zero
              smem flag = last
    bar.sync 1, threads
    if last: sum = 0 + P[last] + ... + P[first], in reverse CTA order (the last contributor,
             usually the last to arrive, adds its own term from registers), then the normal
             epilogue (the user epilogue sees the whole sum)

The unit whose increment completes the count adds the tile up and stores it; the others go on
to their next unit. No CTA ever waits for another, so it runs in the simulator (CTAs one at a
time) as on the GPU, and the sum's order is fixed whoever arrives last: two calls are bitwise
equal. The counters are left at zero, so the workspace and counters are allocated once and
reused without a memset (two concurrent streams must not share them).
"""
from __future__ import annotations

import warpstage as ws

from ..lang.fragment import Fragment
from ..lang.scalars import Float32
from ..lang.sched import skip_stages
from .matmul_epilogues import apply, traced, traced_method

__all__ = ["MatmulConsumer"]


def _fragments(x) -> list:
    """fence / wait_group results (one fragment or a tuple) as a list."""
    return list(x) if isinstance(x, tuple) else [x]


FIXUP_CHUNK = 128
"""Registers of a partial tile the fix-up adds per pass over the contributors: all of a
128 x 256 tile's 128 (ptxas keeps the whole chunk's loads in flight, 128 LDG before the first
FADD, without spilling at the consumers' 232 registers; a chunk is one round trip to L2, so
16-register chunks would cost eight)."""


def _first_term(own, is_own, lo: int):
    """0 + registers [lo, lo + FIXUP_CHUNK) of ``own`` where ``is_own``, else 0."""
    return Fragment(Float32, [0.0 + ws.math.select(is_own, own[r], 0.0)
                              for r in range(lo, min(lo + FIXUP_CHUNK, len(own)))])


def _partial(workspace, base, threads: int, count: int):
    """One thread's ``count`` registers of a partial sum at ``base`` (thread-major)."""
    return Fragment(Float32, [workspace[base + r * threads] for r in range(count)])


class MatmulConsumer:
    """The consumer role's device code; mixed into the ``Matmul`` policy (which provides the
    configuration: ``schedule``, ``tile_n``, majors, ``out``, ``epilogue``, ...)."""

    @ws.jit
    def consume(self, c_desc, sched, k_tiles, splits, m, n, operands, pipeline, storage,
                fixup=()):
        """Consumer warpgroups 1 and 2 over this CTA's tiles, in the policy's schedule."""
        tid = ws.arch.thread_idx()[0] - self.producer_threads        # 0..255
        wg = ws.arch.make_warp_uniform(tid // 128)
        if tid == 0:
            ws.tma.prefetch_descriptor(c_desc)
        if ws.static(self.epilogue is not None):
            operands = traced_method(traced(self.epilogue), "prologue")(operands)  # once per CTA
        if ws.static(self.schedule == "pingpong"):
            self.consume_pingpong(c_desc, sched, k_tiles, m, n, operands, pipeline, storage,
                                  wg, tid % 128)
        else:
            state = pipeline.consumer_start_state()
            start, stop, step = self.unit_range(sched)
            for t in range(start, stop, step):
                m_blk, n_blk, _, batch, _, count = self.work(sched, t, k_tiles, splits)
                accs, state = self.mainloop([wg * 64], count, pipeline, storage, state, None)
                if ws.static(self.stream_k):
                    if count == k_tiles:
                        self.store_tile(accs, tid, c_desc, storage.c, m_blk, n_blk, batch, m,
                                        n, operands, None)
                    else:
                        tile = sched.unit(t)[3]
                        if self.publish(accs, tid, sched, tile, fixup, storage):
                            accs = self.gather(accs, tid, sched, tile, fixup[0])
                            self.store_tile(accs, tid, c_desc, storage.c, m_blk, n_blk, batch,
                                            m, n, operands, None)
                else:
                    self.store_tile(accs, tid, c_desc, storage.c, m_blk, n_blk, batch, m, n,
                                    operands, None)
            self.out.tail(tid)

    @ws.jit
    def consume_pingpong(self, c_desc, sched, k_tiles, m, n, operands, pipeline, storage, wg,
                         wtid):
        """Warpgroup ``wg`` takes the CTA's tiles wg, wg + 2, ...; both take the same number of
        turns (an idle one when the CTA's tile count is odd)."""
        turn = ws.pipeline.OrderedBarrier.create(wg, 2, 128, base_id=1)
        first, stride = sched.first(), sched.stride()
        count = (sched.num_tiles() - first + (stride - 1)) // stride      # this CTA's tiles
        state = skip_stages(pipeline.consumer_start_state(), wg * k_tiles)
        for j in range((count + 1) // 2):
            i = 2 * j + wg
            turn.wait()
            if i < count:
                m_blk, n_blk, batch = sched.tile(first + i * stride)
                accs, state = self.mainloop([0, 64], k_tiles, pipeline, storage, state, turn)
                state = skip_stages(state, k_tiles)                     # the other's tile
                self.store_tile(accs, wtid, c_desc, storage.c[wg], m_blk, n_blk, batch, m, n,
                                operands, 3 + wg)
            else:
                turn.arrive()
        turn.finish()
        self.out.tail(wtid)

    @ws.jit
    def mainloop(self, rows, k_tiles, pipeline, storage, state, turn):
        """One accumulator per 64-row block of A's tile at ``rows`` (static or dynamic row
        offsets), over the K steps, one wgmma-group in flight: stage s - 1 is released as soon
        as ``wait_group(1)`` after issuing stage s says its group is done. With ``turn`` (an
        OrderedBarrier), the turn ends once the last stage's wgmmas are issued. Returns (the
        waited-for accumulators, the pipeline state after the last stage)."""
        pipeline.consumer_wait(state)
        ws.wgmma.fence()
        accs = self.issue(rows, storage, state, None)
        prev = state
        state = state.advance()
        for kt in range(1, k_tiles):
            pipeline.consumer_wait(state)
            accs = _fragments(ws.wgmma.fence(*accs))
            accs = self.issue(rows, storage, state, accs)
            ws.wgmma.wait_group(1)                 # the previous stage's group is done
            pipeline.consumer_release(prev)
            prev = state
            state = state.advance()
        if ws.static(turn is not None):
            turn.arrive()
        accs = _fragments(ws.wgmma.wait_group(0, *accs))
        pipeline.consumer_release(prev)
        return accs, state

    @ws.jit
    def publish(self, accs, tid, sched, tile, fixup, storage):
        """A partial unit of stream-K tile ``tile``: store this thread's accumulator to the
        CTA's workspace slot, count the CTA in on the tile's counter (release / acquire at GPU
        scope, by thread 0 after a named barrier) and return whether it completed the count
        (the same Boolean in every consumer thread). The counter goes back to 0 when it did."""
        workspace, counters = fixup
        threads = self.consumer_threads
        base = sched.slot(tile) * (self.tile_m * self.tile_n) + tid
        acc = accs[0]
        for r in ws.static_range(len(acc)):
            workspace[base + r * threads] = acc[r]
        ws.arch.barrier_sync(1, threads)
        if tid == 0:
            first, last = sched.contributors(tile)
            ws.arch.fence_acq_rel("gpu")
            old = ws.atomic_add(counters.ptr + tile, 1)
            ws.arch.fence_acq_rel("gpu")
            done = old == last - first
            if done:
                counters[tile] = 0
            storage.last[0] = ws.math.select(done, 1, 0)
        ws.arch.barrier_sync(1, threads)
        return storage.last[0] != 0

    @ws.jit
    def gather(self, accs, tid, sched, tile, workspace):
        """The whole of stream-K tile ``tile``: 0 + the contributors' partial sums in reverse
        CTA order (``sched.contributors``: last, ..., first), from their workspace slots (the
        layout ``publish`` wrote), the last one's from ``accs`` when this CTA is it: the same
        sum whichever CTA adds it up."""
        threads = self.consumer_threads
        tile_size = self.tile_m * self.tile_n
        me = ws.arch.block_idx()[0]
        first, last = sched.contributors(tile)
        own = accs[0]
        # the last contributor holds the tile's tail (its range's first unit, done after the
        # head it takes first: ws.sched.stream_k_unit), so it is usually the last to arrive:
        # it adds its own from registers, any other reads the last one's back; 0 + P[last]
        # either way. In chunks of FIXUP_CHUNK registers (the loads in flight and the sum
        # beside the accumulator, no spills)
        is_last = me == last
        skip = ws.math.select(is_last, 1, 0)
        out = []
        for lo in ws.static_range(0, len(own), FIXUP_CHUNK):
            part = _first_term(own, is_last, lo)
            for i in range(skip, last - first + 1):
                part = part + _partial(workspace, sched.slot(tile, last - i) * tile_size + tid
                                       + lo * threads, threads, len(part))
            out.extend(part)
        return [Fragment(Float32, out)]

    def issue(self, rows, storage, state, accs):
        """Issue the 64 x tile_n x tile_k products of stage ``state`` for each row block (four
        k16 wgmmas each, k32 for fp8; overwriting when ``accs`` is None) and commit them as one
        group."""
        da = ws.wgmma.tile_descriptor(storage.a[state.index], major=self.a_major)
        db = ws.wgmma.tile_descriptor(storage.b[state.index], major=self.b_major)
        das = [da.at(row=r) for r in rows]
        out = [None] * len(rows) if accs is None else list(accs)
        for kk in range(self.tile_k // self.mma_k):
            for r, d in enumerate(das):
                if out[r] is None:
                    out[r] = ws.wgmma.mma(d.k_step(kk), db.k_step(kk), None, n=self.tile_n,
                                          scale_d=False)
                else:
                    out[r] = ws.wgmma.mma(d.k_step(kk), db.k_step(kk), out[r])
        ws.wgmma.commit_group()
        return out

    def store_tile(self, accs, tid, c_desc, buffers, m_blk, n_blk, batch, m, n, operands,
                   barrier_id) -> None:
        """The epilogue of tile (m_blk, n_blk): ``epilogue.apply`` per element (its row and
        column clamped into the output, so operand loads stay in bounds; the clipped elements
        are not stored), then the TMA-store epilogue into ``buffers``."""
        row0, col0 = m_blk * self.tile_m, n_blk * self.tile_n
        transform = None
        if self.epilogue is not None:
            epi = traced(self.epilogue)
            base = batch * m + row0 if self.batched else row0
            last_row = batch * m + (m - 1) if self.batched else m - 1

            def transform(x, r, c):
                return apply(epi, x, ws.math.min(base + r, last_row),
                             ws.math.min(col0 + c, n - 1), operands)
        coords = (batch, row0, col0) if self.batched or self.split_k else (row0, col0)
        self.out.store(accs, tid, c_desc, buffers, coords, transform, barrier_id)
