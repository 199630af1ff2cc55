"""Transpose a matrix tile by tile through TMA: each CTA loads a 32 x 32 tile with one TMA copy
into 128-byte-swizzled shared memory (completing on an mbarrier), transposes it into a second
swizzled tile with ordinary shared-memory reads and writes, and writes that back with one TMA
store. The edges need no special code: a load reads zeros outside the matrix and a store does
not write outside it.

    python examples/tma_copy.py        # the GPU if present, else the CPU simulator
"""
import numpy as np

import warpstage as ws

TILE = 32                                     # 32 f32 = 128 bytes: one swizzle row


class Transpose:
    """Static config of the kernel: its shared storage."""

    Storage = ws.smem.make_storage(
        "TransposeStorage",
        a=ws.smem.Array(ws.Float32, (TILE, TILE), swizzle=128),
        b=ws.smem.Array(ws.Float32, (TILE, TILE), swizzle=128),
        bar=ws.smem.MbarrierArray[1])


@ws.kernel
def transpose(cfg: ws.Static[Transpose], src, dst):
    s = ws.smem.allocate(cfg.Storage)
    tid = ws.arch.thread_idx()[0]
    col0 = ws.arch.block_idx()[0] * TILE
    row0 = ws.arch.block_idx()[1] * TILE
    if tid == 0:
        s.bar[0].init(1)
        ws.arch.fence_mbarrier_init()
    ws.arch.sync_threads()
    if tid == 0:
        s.bar[0].arrive_expect_tx(src.smem_bytes)
        ws.tma.load(src, s.a, (row0, col0), s.bar[0])
    s.bar[0].wait(0)
    for k in range(tid, TILE * TILE, ws.arch.block_dim()[0]):
        s.b[k % TILE, k // TILE] = s.a[k // TILE, k % TILE]
    ws.arch.fence_proxy_async()               # make the st.shared writes visible to TMA
    ws.arch.sync_threads()
    if tid == 0:
        ws.tma.store(dst, s.b, (col0, row0))
        ws.tma.commit_group()
        ws.tma.wait_group(0)


def launch(x, out):
    """``out[j, i] = x[i, j]`` for a 2-D float32 ``x`` (rows a multiple of 16 bytes) and ``out``
    of the transposed shape (torch CUDA tensors on the GPU, numpy arrays in the simulator)."""
    rows, cols = x.shape
    grid = (-(-cols // TILE), -(-rows // TILE))
    transpose[grid, 256](Transpose(), ws.tma.TensorDescriptor(x, (TILE, TILE)),
                         ws.tma.TensorDescriptor(out, (TILE, TILE)))


if __name__ == "__main__":
    x = np.random.default_rng(0).standard_normal((100, 72)).astype(np.float32)
    out = np.zeros((72, 100), np.float32)
    launch(x, out)
    assert np.array_equal(out, x.T)
    print(f"transposed a {x.shape} matrix through TMA on the '{ws.get_target()}' target")
