"""A tensor-core GEMM with mma.sync: C = A @ B, A (M x K) and B (K x N) row-major bf16 or f16,
C (M x N) f32.

With the default ``GemmConfig`` each CTA computes a 64 x 64 tile of C with 4 warps (2 x 2, a
32 x 32 block each: 2 x 4 m16n8k16 accumulators of 4 f32 per lane). The K loop moves 64 x 32
tiles of A and 32 x 64 tiles of B into shared memory with 16-byte ``cp.async`` copies through a
ring of ``stages`` buffers: the copies of step k + stages - 1 are in flight while step k
computes; ``wait_group(stages - 2)`` then one ``sync_threads`` per step hands a stage over (and
frees the one computed in the step before). ``LARGE`` is 128 x 128 x 32 with 8 warps and 3
stages. Fragments come from shared memory by ``ldmatrix``: ``.x4`` for a 16 x 16 block of A,
``.x4.trans`` for a 16 x 16 block of B (two n8 fragments: B is K x N in memory, mma.sync wants
it "col"). Shared rows are padded by 8 elements (16 bytes) so the 8 row addresses of an
ldmatrix fall in different banks.

M, N and K must be multiples of the tile (no tail handling: this is an example of the
instructions, not a library GEMM).

Run: python examples/mma_gemm.py   (the GPU if present, else the CPU simulator at a small size)
"""
import numpy as np

import warpstage as ws

PAD = 8                      # elements of padding per shared row (bank-conflict-free ldmatrix)


class GemmConfig:
    """The static tiling (a plain object: static by rule 7, part of the kernel's key): a
    ``bm`` x ``bn`` tile of C per CTA, ``bk`` columns of A per K step, ``warps_m`` x ``warps_n``
    warps (each a (bm / warps_m) x (bn / warps_n) block, a multiple of 16 x 16), ``stages``
    shared-memory buffers for the cp.async pipeline."""

    def __init__(self, bm=64, bn=64, bk=32, warps_m=2, warps_n=2, stages=2):
        self.bm, self.bn, self.bk, self.stages = bm, bn, bk, stages
        self.warps_m, self.warps_n = warps_m, warps_n
        self.threads = 32 * warps_m * warps_n
        self.wm, self.wn = bm // warps_m, bn // warps_n
        if self.wm % 16 or self.wn % 16 or bk % 16 or stages < 2:
            raise ValueError("warp blocks must be multiples of 16 x 16, bk of 16, stages >= 2")
        if (bm * bk // 8) % self.threads or (bk * bn // 8) % self.threads:
            raise ValueError("each thread must copy whole 16-byte chunks of both tiles")

    def __repr__(self):
        return (f"{self.bm}x{self.bn}x{self.bk} tiles, {self.warps_m}x{self.warps_n} warps, "
                f"{self.stages} stages")


DEFAULT = GemmConfig()                                   # 64 x 64 x 32, 4 warps, 2 stages
LARGE = GemmConfig(128, 128, 32, warps_m=2, warps_n=4, stages=3)


@ws.jit
def load_stage(cfg, a, b, sa, sb, stage, m0, n0, k0, tid):
    """Issue this thread's cp.async copies of the (m0, k0) A tile and (k0, n0) B tile, as one
    group."""
    for j in ws.static_range(cfg.bm * cfg.bk // 8 // cfg.threads):     # 16-byte chunks of A
        idx = tid + j * cfg.threads
        row, col = idx // (cfg.bk // 8), idx % (cfg.bk // 8) * 8
        ws.copy.cp_async(sa[stage, row].ptr + col, a.ptr + ((m0 + row) * a.strides[0] + k0 + col))
    for j in ws.static_range(cfg.bk * cfg.bn // 8 // cfg.threads):     # 16-byte chunks of B
        idx = tid + j * cfg.threads
        row, col = idx // (cfg.bn // 8), idx % (cfg.bn // 8) * 8
        ws.copy.cp_async(sb[stage, row].ptr + col, b.ptr + ((k0 + row) * b.strides[0] + n0 + col))
    ws.copy.commit_group()


@ws.jit
def mma_stage(cfg, sa, sb, stage, acc, wm, wn, lane):
    """acc += the warp's (wm, wn) block of A_stage @ B_stage; returns the new accumulators
    (``acc[mi * n_tiles + ni]``: the m16n8 tile at rows wm + 16 mi, columns wn + 8 ni)."""
    m_tiles, n_tiles = cfg.wm // 16, cfg.wn // 8
    for kk in ws.static_range(cfg.bk // 16):
        # A: lanes 0-15 address rows 0-15 at column 16 kk, lanes 16-31 the same rows at + 8
        fa = [ws.mma.ldmatrix(sa[stage, wm + mi * 16 + lane % 16].ptr + (kk * 16 + lane // 16 * 8), 4)
              for mi in ws.static_range(m_tiles)]
        fb = []
        for nj in ws.static_range(n_tiles // 2):    # B: 16 rows (k) x 16 columns = 2 n8 tiles
            krow = kk * 16 + lane % 8 + lane // 8 % 2 * 8
            f = ws.mma.ldmatrix(sb[stage, krow].ptr + (wn + nj * 16 + lane // 16 * 8), 4, trans=True)
            fb += [f[0:4], f[4:8]]
        acc = [ws.mma.mma_sync(fa[i // n_tiles], fb[i % n_tiles], acc[i])
               for i in ws.static_range(m_tiles * n_tiles)]
    return acc


@ws.kernel
def gemm(cfg: ws.Static[GemmConfig], a: ws.Tensor, b: ws.Tensor, c: ws.Tensor,
         k_tiles: ws.Int32):
    sa = ws.smem.allocate(ws.smem.Array[a.dtype, (cfg.stages, cfg.bm, cfg.bk + PAD), 128])
    sb = ws.smem.allocate(ws.smem.Array[b.dtype, (cfg.stages, cfg.bk, cfg.bn + PAD), 128])
    tid = ws.arch.thread_idx()[0]
    lane = ws.arch.lane_idx()
    warp = ws.arch.make_warp_uniform(ws.arch.warp_idx())
    wm, wn = warp // cfg.warps_n * cfg.wm, warp % cfg.warps_n * cfg.wn
    m0, n0 = ws.arch.block_idx()[1] * cfg.bm, ws.arch.block_idx()[0] * cfg.bn
    n_tiles = cfg.wn // 8
    acc = [ws.mma.accumulator() for _ in ws.static_range(cfg.wm // 16 * n_tiles)]
    for s in ws.static_range(cfg.stages - 1):                   # prologue: stages - 1 groups
        if s < k_tiles:
            load_stage(cfg, a, b, sa, sb, s, m0, n0, s * cfg.bk, tid)
        else:
            ws.copy.commit_group()
    for kt in range(k_tiles):
        ws.copy.wait_group(cfg.stages - 2)                      # step kt's copies landed
        ws.arch.sync_threads()      # ... for every thread; and step kt - 1's stage is free
        nxt = kt + cfg.stages - 1
        if nxt < k_tiles:
            load_stage(cfg, a, b, sa, sb, nxt % cfg.stages, m0, n0, nxt * cfg.bk, tid)
        else:
            ws.copy.commit_group()                              # keep one group per step
        acc = mma_stage(cfg, sa, sb, kt % cfg.stages, acc, wm, wn, lane)
    for i in ws.static_range(len(acc)):
        ws.mma.store_fragment(c, acc[i], row0=m0 + wm + i // n_tiles * 16,
                              col0=n0 + wn + i % n_tiles * 8)


def launch(a, b, c, cfg: GemmConfig = DEFAULT):
    """c = a @ b; ``a`` (M x K), ``b`` (K x N): bf16 or f16 (torch or numpy), ``c`` f32."""
    (m, k), (k2, n) = a.shape, b.shape
    if k != k2 or tuple(c.shape) != (m, n):
        raise ValueError(f"shapes do not chain: a {tuple(a.shape)}, b {tuple(b.shape)}, "
                         f"c {tuple(c.shape)}")
    if m % cfg.bm or n % cfg.bn or k % cfg.bk:
        raise ValueError(f"this example needs M, N multiples of {cfg.bm}, {cfg.bn} and K of "
                         f"{cfg.bk}; got M={m}, N={n}, K={k}")
    gemm[(n // cfg.bn, m // cfg.bm), cfg.threads](cfg, a, b, c, k // cfg.bk)


def tflops(m, n, k, seconds):
    return 2 * m * n * k / seconds / 1e12


def main(m=128, n=64, k=96):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    want = a.astype(np.float64) @ b.astype(np.float64)
    if ws.get_target() == "cuda":
        import torch
        ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
        tc = torch.empty(m, n, device="cuda")
        launch(ta, tb, tc)
        torch.cuda.synchronize()
        got = tc.cpu().numpy()
    else:
        got = np.full((m, n), np.nan, np.float32)
        launch(a, b, got)
    err = np.abs(got - want).max() / np.abs(want).max()
    print(f"mma.sync GEMM {m}x{n}x{k} (f16 -> f32) on {ws.get_target()}: max relative error "
          f"{err:.2e} {'ok' if err < 1e-5 else 'MISMATCH'}")


if __name__ == "__main__":
    main()
