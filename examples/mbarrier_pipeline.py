"""A warp-specialized producer/consumer pipeline through shared memory, guarded by mbarriers.

The CTA has two warpgroups (256 threads). Warpgroup 0 is the producer: it gives its registers
away (``setmaxnreg_decrease``) and streams tiles of ``x`` from global memory into a ring of
``stages`` shared-memory buffers. Warpgroup 1 is the consumer: it takes the registers
(``setmaxnreg_increase``), waits for each tile, computes ``out = x * 2 + 1`` and hands the buffer
back. Each stage has two mbarriers: ``full`` (the producer's 128 threads arrive when their part of
the tile has landed) and ``empty`` (the consumer's 128 threads arrive when they are done reading).
Both sides track the phase parity of the ring: the consumer waits ``full`` with parity 0 on its
first pass, the producer waits ``empty`` with parity 1 (an mbarrier counts its "previous" phase as
complete), and both flip parity each time around.

``copy='cp.async'`` moves the data with ``cp.async`` 16-byte copies that arrive on ``full`` when
they land (``cp.async.mbarrier.arrive.noinc``); ``copy='ld/st'`` uses ordinary loads and shared
stores followed by ``full.arrive()``.

Run: python examples/mbarrier_pipeline.py
"""
import numpy as np

import warpstage as ws

THREADS = 256      # two warpgroups


class Pipeline:
    """Static configuration (a plain object: static by rule 7, part of the kernel's key)."""

    def __init__(self, stages=2, tile=512, copy="cp.async", producer_regs=40, consumer_regs=232):
        if tile % 512:
            raise ValueError("tile must be a multiple of 512 floats (128 threads x 16 bytes)")
        self.stages = stages
        self.tile = tile
        self.copy = copy
        self.producer_regs = producer_regs
        self.consumer_regs = consumer_regs
        self.Storage = ws.smem.make_storage(
            "PipelineStorage",
            buf=ws.smem.Array[ws.Float32, (stages, tile), 128],
            full=ws.smem.MbarrierArray[stages],
            empty=ws.smem.MbarrierArray[stages])

    @ws.jit
    def produce(self, x, storage, first_tile, n_tiles, t):
        for i in range(n_tiles):
            s = i % self.stages
            storage.empty[s].wait(((i // self.stages) & 1) ^ 1)
            base = (first_tile + i) * self.tile
            if ws.static(self.copy == "cp.async"):
                for j in ws.static_range(self.tile // 512):
                    e = (j * 128 + t) * 4
                    ws.copy.cp_async(storage.buf[s].ptr + e, x.ptr + (base + e), 16)
                ws.copy.cp_async_mbarrier_arrive(storage.full[s])
            else:
                for j in ws.static_range(self.tile // 128):
                    e = j * 128 + t
                    storage.buf[s, e] = x[base + e]
                storage.full[s].arrive()

    @ws.jit
    def consume(self, out, storage, first_tile, n_tiles, t):
        for i in range(n_tiles):
            s = i % self.stages
            storage.full[s].wait((i // self.stages) & 1)
            base = (first_tile + i) * self.tile
            for j in ws.static_range(self.tile // 128):
                e = j * 128 + t
                out[base + e] = storage.buf[s, e] * 2.0 + 1.0
            storage.empty[s].arrive()


@ws.kernel
def pipeline(cfg: ws.Static[Pipeline], x: ws.Tensor, out: ws.Tensor, tiles_per_cta: ws.Int32):
    storage = ws.smem.allocate(cfg.Storage)
    tid = ws.arch.thread_idx()[0]
    if tid == 0:
        for s in ws.static_range(cfg.stages):
            storage.full[s].init(128)       # one arrival per producer thread
            storage.empty[s].init(128)      # one arrival per consumer thread
        ws.arch.fence_mbarrier_init()
    ws.arch.sync_threads()
    first_tile = ws.arch.block_idx()[0] * tiles_per_cta
    warpgroup = ws.arch.make_warp_uniform(ws.arch.warpgroup_idx())
    if warpgroup == 0:
        ws.arch.setmaxnreg_decrease(cfg.producer_regs)
        cfg.produce(x, storage, first_tile, tiles_per_cta, tid % 128)
    else:
        ws.arch.setmaxnreg_increase(cfg.consumer_regs)
        cfg.consume(out, storage, first_tile, tiles_per_cta, tid % 128)


def smem_bytes(cfg: Pipeline) -> int:
    """Dynamic shared memory the kernel needs (its only allocation is ``cfg.Storage``)."""
    return ws.smem.size_of(cfg.Storage)


def launch(cfg: Pipeline, x, out, ctas: int):
    """out = x * 2 + 1 for 1-D float32 ``x`` of ``ctas * tiles * cfg.tile`` elements."""
    tiles = x.shape[0] // (ctas * cfg.tile)
    pipeline[ctas, THREADS, smem_bytes(cfg)](cfg, x, out, tiles)


def main(stages: int = 3, ctas: int = 2, tiles: int = 5):
    cfg = Pipeline(stages=stages)
    x = np.random.default_rng(0).standard_normal(ctas * tiles * cfg.tile).astype(np.float32)
    if ws.get_target() == "cuda":
        import torch
        tx = torch.from_numpy(x).cuda()
        out = torch.empty_like(tx)
        launch(cfg, tx, out, ctas)
        torch.cuda.synchronize()
        got = out.cpu().numpy()
    else:
        got = np.full_like(x, np.nan)
        launch(cfg, x, got, ctas)
    ok = np.array_equal(got, x * 2 + 1)
    print(f"{stages}-stage pipeline, {ctas} CTAs x {tiles} tiles on {ws.get_target()}: "
          f"{'ok' if ok else 'MISMATCH'}")


if __name__ == "__main__":
    main()
