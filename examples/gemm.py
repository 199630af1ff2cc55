"""A Hopper GEMM the way the fast ones are built: warp-specialized, persistent, TMA in and out.

    C (M x N, bf16) = A (M x K, bf16, row-major) @ B (K x N, bf16, row-major), f32 accumulation

One CTA per SM, 384 threads in three warpgroups:

- warpgroup 0 is the *producer*. It gives registers back (``setmaxnreg.dec`` 40) and one thread
  of its warp 0 streams A's 128 x 64 and B's 64 x 256 tiles of each K step into a ring of
  ``STAGES`` shared-memory stages with TMA. Each stage has a full and an empty mbarrier
  (``ws.pipeline.PipelineTmaAsync``): TMA counts its bytes on "full", the consumers arrive on
  "empty" when they are done with the stage.
- warpgroups 1 and 2 are the *consumers* (``setmaxnreg.inc`` 232: the 128 f32 accumulators of
  an m64n256 tile need them). They share a 128 x 256 output tile, 64 rows each, and multiply
  every stage with four ``wgmma.m64n256k16`` straight from the swizzled shared memory. They keep
  one wgmma-group in flight: after issuing stage s they wait only for stage s - 1's group and
  hand that stage back, so the tensor cores never drain inside the K loop.
- after the K loop the consumers store the tile with ``ws.epilogue.TmaStoreEpilogue``:
  convert to bf16, ``stmatrix`` into a swizzled smem buffer, fence, named barrier, one TMA
  store per 64-column sub-tile. Those stores finish while the next tile's K loop runs.

Every role walks the same tile sequence with ``ws.sched.PersistentTileScheduler`` (CTA i takes
tiles i, i + #CTAs, ...; a grouped raster order keeps neighbouring CTAs on shared A and B
panels in L2). TMA reads zeros past the edges and clips stores, so M, N and K need not be
multiples of the tile. ``warpstage/ops/matmul_kernel.py`` is this kernel with the variants
(transposes, batches, output dtypes, epilogues) that ``ws.ops.matmul`` needs.

Run: python examples/gemm.py      (on the GPU if present, else in the simulator)
"""
import numpy as np

import warpstage as ws

BM, BN, BK = 128, 256, 64            # CTA tile; BK * 2 bytes = 128: one swizzle span, one box
STAGES = 4                           # 4 x (16 + 32) KB of operands + 32 KB of C buffers


class Config:
    """Static configuration: the smem layout and the TMA boxes, for tile width ``bn``."""

    def __init__(self, bn=BN, stages=STAGES):
        self.bn, self.stages = bn, stages
        self.out = ws.epilogue.TmaStoreEpilogue(ws.BFloat16, BM, bn)
        self.a_tile = ws.wgmma.TileLayout(BM, BK, ws.BFloat16, swizzle=128)   # M x K
        self.b_tile = ws.wgmma.TileLayout(BK, bn, ws.BFloat16, swizzle=128)   # K x N
        self.stage_bytes = self.a_tile.nbytes + self.b_tile.nbytes
        self.Storage = ws.smem.make_storage(
            "GemmStorage",
            a=ws.smem.Array(ws.BFloat16, (stages,) + self.a_tile.shape, swizzle=128),
            b=ws.smem.Array(ws.BFloat16, (stages,) + self.b_tile.shape, swizzle=128),
            c=self.out.buffer_spec,
            barriers=ws.pipeline.BarrierStorage[stages])

    def b_block(self, tile, j):
        """64-column block j of a stage's B tile (one TMA box)."""
        return tile if self.bn == 64 else tile[j]


@ws.jit
def producer(cfg, a_desc, b_desc, sched, k_steps, pipe, st):
    state = pipe.producer_start_state()
    for t in range(sched.first(), sched.num_tiles(), sched.stride()):
        mt, nt, _ = sched.tile(t)
        for kt in range(k_steps):
            pipe.producer_acquire(state)                  # the stage is free; expect its bytes
            if ws.arch.elect_one():
                bar = pipe.producer_get_barrier(state)
                ws.tma.load(a_desc, st.a[state.index], (mt * BM, kt * BK), bar)
                for j in ws.static_range(cfg.bn // 64):
                    ws.tma.load(b_desc, cfg.b_block(st.b[state.index], j),
                                (kt * BK, nt * cfg.bn + 64 * j), bar)
            state = state.advance()
    pipe.producer_tail(state)


def mma_stage(cfg, st, state, wg, acc):
    """Issue this warpgroup's 64 x bn x 64 product of one stage as one wgmma-group."""
    da = ws.wgmma.tile_descriptor(st.a[state.index], major="K").at(row=wg * 64)
    db = ws.wgmma.tile_descriptor(st.b[state.index], major="MN")
    for kk in ws.static_range(BK // 16):
        if acc is None:
            acc = ws.wgmma.mma(da.k_step(kk), db.k_step(kk), None, n=cfg.bn, scale_d=False)
        else:
            acc = ws.wgmma.mma(da.k_step(kk), db.k_step(kk), acc)
    ws.wgmma.commit_group()
    return acc


@ws.jit
def consumer(cfg, c_desc, sched, k_steps, pipe, st):
    tid = ws.arch.thread_idx()[0] - 128                   # 0..255 over the two warpgroups
    wg = ws.arch.make_warp_uniform(tid // 128)
    state = pipe.consumer_start_state()
    for t in range(sched.first(), sched.num_tiles(), sched.stride()):
        mt, nt, _ = sched.tile(t)
        pipe.consumer_wait(state)
        ws.wgmma.fence()
        acc = mma_stage(cfg, st, state, wg, None)
        prev = state
        state = state.advance()
        for kt in range(1, k_steps):
            pipe.consumer_wait(state)
            acc = ws.wgmma.fence(acc)
            acc = mma_stage(cfg, st, state, wg, acc)
            ws.wgmma.wait_group(1)                        # stage prev's wgmmas are done...
            pipe.consumer_release(prev)                   # ... so the producer may refill it
            prev = state
            state = state.advance()
        acc = ws.wgmma.wait_group(0, acc)
        pipe.consumer_release(prev)
        cfg.out.store(acc, tid, c_desc, st.c, (mt * BM, nt * cfg.bn))
    cfg.out.tail(tid)


@ws.kernel
def gemm(cfg: ws.Static[Config], a_desc, b_desc, c_desc, m: ws.Int32, n: ws.Int32,
         k: ws.Int32):
    st = ws.smem.allocate(cfg.Storage)
    pipe = ws.pipeline.PipelineTmaAsync.create(st.barriers, num_stages=cfg.stages,
                                               consumer_count=256,
                                               transaction_bytes=cfg.stage_bytes)
    sched = ws.sched.PersistentTileScheduler.create((m + BM - 1) // BM, (n + cfg.bn - 1) // cfg.bn)
    k_steps = (k + BK - 1) // BK
    warp = ws.arch.make_warp_uniform(ws.arch.warp_idx())
    if warp < 4:
        ws.arch.setmaxnreg_decrease(40)
        if warp == 0:
            producer(cfg, a_desc, b_desc, sched, k_steps, pipe, st)
    else:
        ws.arch.setmaxnreg_increase(232)
        consumer(cfg, c_desc, sched, k_steps, pipe, st)


def launch(cfg: Config, a, b, c, ctas: int) -> None:
    """c[:] = a @ b: a (M, K), b (K, N), c (M, N), bf16, rows 16-byte multiples (TMA's rule);
    ``ctas`` persistent CTAs (the GPU's SM count)."""
    (m, k), n = a.shape, b.shape[1]
    TD = ws.tma.TensorDescriptor
    descs = (TD(a, (BM, BK)), TD(b, (BK, 64)), TD(c, cfg.out.box))
    tiles = -(-m // BM) * -(-n // cfg.bn)
    gemm[ws.sched.grid_size(tiles, ctas), 384](cfg, *descs, m, n, k)


def main(m: int = 200, n: int = 320, k: int = 192, bn: int = BN):
    cfg = Config(bn=bn)
    rng = np.random.default_rng(0)
    if ws.get_target() == "cuda":
        import torch
        a = torch.randn(m, k, device="cuda").bfloat16()
        b = torch.randn(k, n, device="cuda").bfloat16()
        c = torch.full((m, n), float("nan"), device="cuda").bfloat16()
        launch(cfg, a, b, c, torch.cuda.get_device_properties(0).multi_processor_count)
        got, want = c.float().cpu().numpy(), (a.double() @ b.double()).cpu().numpy()
    else:
        import ml_dtypes
        a = rng.standard_normal((m, k)).astype(ml_dtypes.bfloat16)
        b = rng.standard_normal((k, n)).astype(ml_dtypes.bfloat16)
        c = np.full((m, n), np.nan, ml_dtypes.bfloat16)
        launch(cfg, a, b, c, 2)
        got, want = c.astype(np.float64), a.astype(np.float64) @ b.astype(np.float64)
    err = float(np.linalg.norm(got - want) / np.linalg.norm(want))
    print(f"GEMM {m}x{n}x{k} (bf16, f32 accumulation) on {ws.get_target()}: relative error "
          f"{err:.1e} {'ok' if err < 1e-2 else 'MISMATCH'}")
    return err


if __name__ == "__main__":
    main()
