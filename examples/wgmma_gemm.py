"""A tensor-core GEMM with Hopper wgmma: C (M x N, f32) = A (M x K) @ B (K x N), bf16 or f16.

One CTA is one warpgroup (128 threads) and computes a 64 x ``bn`` tile of C. It walks K in
``bk``-wide steps through two shared-memory stages filled with ``cp.async``: while the tensor
cores multiply stage ``kt % 2``, the copies of step ``kt + 1`` fly into the other stage. Both
tiles use the 128-byte swizzle: A's (64 x bk) tile is K-major (a row-major 64 x 64 block per 64
columns of K), B's (bk x bn) tile is N-major (B is row-major K x N, so N is contiguous:
wgmma's "transposed" B, ``tnsp-b = 1``). Each step issues ``bk / 16`` m64n``bn``k16 wgmmas in
one group, commits it and waits for it before the next copy overwrites the stage.

The epilogue writes each thread's accumulator registers at the positions
``ws.wgmma.accumulator_coords`` gives. M must be a multiple of 64, N of ``bn``, K of ``bk``.

Run: python examples/wgmma_gemm.py      (on the GPU if present, else in the simulator)
"""
import numpy as np

import warpstage as ws
from warpstage.lang.wgmma import TileLayout

STAGES = 2


class Gemm:
    """Static configuration: dtype, tile width ``bn`` (N per CTA, a multiple of 64 up to 256)
    and ``bk`` (K per step, a multiple of 64)."""

    def __init__(self, dtype=ws.BFloat16, bn=128, bk=64):
        if bn % 64 or not 64 <= bn <= 256 or bk % 64:
            raise ValueError(f"bn must be 64, 128, 192 or 256 and bk a multiple of 64; got "
                             f"bn={bn}, bk={bk}")
        self.dtype, self.bn, self.bk = dtype, bn, bk
        self.la = TileLayout(64, bk, dtype, swizzle=128)      # rows M, cols K
        self.lb = TileLayout(bk, bn, dtype, swizzle=128)      # rows K, cols N
        self.Storage = ws.smem.make_storage(
            "GemmStages",
            a=ws.smem.Array[dtype, (STAGES,) + self.la.shape, self.la.align],
            b=ws.smem.Array[dtype, (STAGES,) + self.lb.shape, self.lb.align])


@ws.jit
def copy_tile(layout: ws.Static[TileLayout], tile, src, row0, col0, pitch):
    """cp.async the (rows, cols) block of a row-major global matrix at (row0, col0) (``pitch``
    elements per row) into ``tile``: 16-byte chunks, 128 threads."""
    tid = ws.arch.thread_idx()[0]
    per_row = layout.cols // 8
    for it in ws.static_range(layout.rows * per_row // 128):
        q = tid + it * 128
        r = q // per_row
        c = (q % per_row) * 8
        ws.copy.cp_async(tile.ptr + layout.offset(r, c), src.ptr + ((row0 + r) * pitch + col0 + c))


@ws.kernel
def gemm(cfg: ws.Static[Gemm], a: ws.Tensor, b: ws.Tensor, c: ws.Tensor):
    st = ws.smem.allocate(cfg.Storage)
    m0 = ws.arch.block_idx()[1] * 64
    n0 = ws.arch.block_idx()[0] * cfg.bn
    k_size, n_size = a.shape[1], b.shape[1]
    k_tiles = k_size // cfg.bk
    copy_tile(cfg.la, st.a[0], a, m0, 0, k_size)
    copy_tile(cfg.lb, st.b[0], b, 0, n0, n_size)
    ws.copy.commit_group()
    acc = ws.wgmma.zeros(cfg.bn)
    for kt in range(k_tiles):
        s = kt % STAGES
        if kt + 1 < k_tiles:                        # prefetch the next step into the other stage
            nxt = (kt + 1) % STAGES
            copy_tile(cfg.la, st.a[nxt], a, m0, (kt + 1) * cfg.bk, k_size)
            copy_tile(cfg.lb, st.b[nxt], b, (kt + 1) * cfg.bk, n0, n_size)
        ws.copy.commit_group()
        ws.copy.wait_group(1)                       # this step's tiles have landed
        ws.arch.fence_proxy_async()                 # ... and are visible to the tensor cores
        ws.arch.sync_threads()
        da = ws.wgmma.tile_descriptor(st.a[s], major="K", swizzle=128)
        db = ws.wgmma.tile_descriptor(st.b[s], major="MN", swizzle=128)
        acc = ws.wgmma.fence(acc)
        for kk in ws.static_range(cfg.bk // 16):
            acc = ws.wgmma.mma(da.k_step(kk), db.k_step(kk), acc)
        ws.wgmma.commit_group()
        acc = ws.wgmma.wait_group(0, acc)           # stage s is free again
    for i, (row, col) in enumerate(ws.wgmma.accumulator_coords(cfg.bn)):
        c[m0 + row, n0 + col] = acc[i]


def launch(cfg: Gemm, a, b, c) -> None:
    """c[:] = a @ b for a (M, K), b (K, N) of cfg.dtype and c (M, N) float32 (numpy arrays in
    the simulator, CUDA tensors on the GPU; bf16 numpy arrays are uint16 bit patterns)."""
    (m, k), (k2, n) = a.shape, b.shape
    if k2 != k or tuple(c.shape) != (m, n):
        raise ValueError(f"shapes do not chain: a {tuple(a.shape)}, b {tuple(b.shape)}, "
                         f"c {tuple(c.shape)}")
    if m % 64 or n % cfg.bn or k % cfg.bk:
        raise ValueError(f"M={m} must be a multiple of 64, N={n} of bn={cfg.bn}, K={k} of "
                         f"bk={cfg.bk}")
    gemm[(n // cfg.bn, m // 64), 128](cfg, a, b, c)


def bf16_bits(x: np.ndarray) -> np.ndarray:
    """float32 -> bf16 bit patterns (round to nearest even), as numpy has no bfloat16."""
    u = x.astype(np.float32).view(np.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def from_bf16_bits(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32)


def main(m: int = 128, n: int = 256, k: int = 192):
    cfg = Gemm()
    rng = np.random.default_rng(0)
    a_bits = bf16_bits(rng.standard_normal((m, k)))
    b_bits = bf16_bits(rng.standard_normal((k, n)))
    want = from_bf16_bits(a_bits).astype(np.float64) @ from_bf16_bits(b_bits).astype(np.float64)
    if ws.get_target() == "cuda":
        import torch
        ta = torch.from_numpy(a_bits.view(np.int16)).view(torch.bfloat16).cuda()
        tb = torch.from_numpy(b_bits.view(np.int16)).view(torch.bfloat16).cuda()
        tc = torch.empty(m, n, device="cuda")
        launch(cfg, ta, tb, tc)
        got = tc.cpu().numpy()
    else:
        got = np.full((m, n), np.nan, np.float32)
        launch(cfg, a_bits, b_bits, got)
    err = float(np.abs(got - want).max())
    print(f"wgmma GEMM {m}x{n}x{k} (bf16 -> f32) on {ws.get_target()}: max |error| {err:.2e} "
          f"{'ok' if err < 1e-3 * k else 'MISMATCH'}")


if __name__ == "__main__":
    main()
