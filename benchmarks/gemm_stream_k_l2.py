"""A CPU model of the GEMM's L2 reuse, data-parallel against stream-K (no GPU): which A and B
K slabs the CTAs read at the same time, and how many bytes an LRU L2 must fetch from HBM.

    PYTHONPATH=. python benchmarks/gemm_stream_k_l2.py [--l2-mib 50] [--shape M,N,K,TILE_N ...]

Model: every CTA of the persistent grid does one K step (a ``tile_m x 64`` slab of A and a
``tile_n x 64`` slab of B, bf16) per time step, in its unit order (``ws.sched``: the same
functions the kernel runs); the CTAs of one time step read in CTA order through one LRU cache of
``--l2-mib`` MiB (the H200's L2 is 50 MiB in two halves; the model ignores the halves, the
fix-up's traffic and the output). Per schedule it prints the HBM bytes fetched, the reads' hit
rate, the busiest window's HBM demand as a share of the HBM's (4.8 TB/s, against a K step of
the tile at 800 TFLOP/s), and the K spread: the distinct (operand panel, K slab) pairs read per
time step over the number of reads (1/CTAs when every CTA reads one slab all share; 1 when no
two CTAs share one). A model of locality, not a timing; nothing is asserted.
"""
from __future__ import annotations

import argparse
import os
import sys
from collections import OrderedDict

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from warpstage.lang.sched import stream_k_unit, stream_k_units, tile_coords  # noqa: E402
from warpstage.ops.matmul_plan import stream_k_tiles  # noqa: E402

SHAPES = [(4096, 4096, 4096, 256), (8192, 8192, 8192, 256), (4096, 4096, 11008, 256),
          (256, 11008, 4096, 256), (256, 11008, 4096, 128), (4096, 11008, 4096, 256)]
"""(M, N, K, tile_n): the shapes of benchmarks/gemm_stream_k.py where stream-K lost."""
TILE_M, TILE_K, SMS = 128, 64, 132


def cta_steps(m, n, k, tile_n, stream_k: bool, ctas=SMS, raster="M", group=8) -> list:
    """Per CTA, its (m_blk, n_blk, K step) sequence."""
    tm, tn, kt = -(-m // TILE_M), -(-n // tile_n), -(-k // TILE_K)
    tiles = tm * tn
    sk = stream_k_tiles(tiles, ctas, kt) if stream_k else 0
    grid = min(ctas, tiles) if not sk else ctas
    out = []
    for c in range(grid):
        seq = []
        if sk:
            units = [stream_k_unit(c, j, grid, tiles, kt, sk)
                     for j in range(stream_k_units(c, grid, tiles, kt, sk))]
        else:
            units = [(t, 0, kt) for t in range(c, tiles, grid)]
        for t, k0, count in units:
            mb, nb, _ = tile_coords(t, tm, tn, raster, group)
            seq.extend((mb, nb, q) for q in range(k0, k0 + count))
        out.append(seq)
    return out, sk


def simulate(steps, tile_n, l2_bytes) -> dict:
    a_bytes, b_bytes = TILE_M * TILE_K * 2, tile_n * TILE_K * 2
    cache, used = OrderedDict(), 0
    fetched = reads = hits = 0
    spread, window = [], []
    for tau in range(max(len(s) for s in steps)):
        now, got = set(), 0
        for seq in steps:
            if tau >= len(seq):
                continue
            mb, nb, q = seq[tau]
            for key, size in ((("A", mb, q), a_bytes), (("B", nb, q), b_bytes)):
                reads += 1
                now.add(key)
                if key in cache:
                    hits += 1
                    cache.move_to_end(key)
                    continue
                fetched += size
                got += size
                cache[key] = size
                used += size
                while used > l2_bytes:
                    used -= cache.popitem(last=False)[1]
        active = sum(tau < len(s) for s in steps)
        spread.append(len(now) / (2 * active))
        window.append(got)
    step_s = 2 * TILE_M * tile_n * TILE_K / (800e12 / SMS)       # one K step at 800 TFLOP/s
    worst = max(sum(window[i:i + 8]) for i in range(max(1, len(window) - 7))) / (8 * step_s)
    return dict(fetched=fetched, hit=hits / reads, demand=worst / 4.8e12,
                spread=sum(spread) / len(spread), steps=len(window))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--l2-mib", type=float, default=50.0)
    ap.add_argument("--shape", action="append", help="M,N,K,TILE_N")
    args = ap.parse_args(argv)
    shapes = [tuple(int(x) for x in s.split(",")) for s in args.shape] if args.shape else SHAPES
    print(f"{'shape':>22s} {'sched':>4s} {'sk tiles':>8s} {'steps':>6s} {'HBM MiB':>8s} "
          f"{'L2 hit':>7s} {'peak HBM':>9s} {'K spread':>8s}")
    for m, n, k, tile_n in shapes:
        for sk_on in (False, True):
            steps, sk = cta_steps(m, n, k, tile_n, sk_on)
            if sk_on and not sk:
                continue
            r = simulate(steps, tile_n, args.l2_mib * 2 ** 20)
            print(f"{f'{m}x{n}x{k} /{tile_n}':>22s} {'sk' if sk_on else 'dp':>4s} {sk:8d} "
                  f"{r['steps']:6d} {r['fetched'] / 2 ** 20:8.0f} {r['hit']:7.1%} "
                  f"{r['demand']:8.0%} {r['spread']:8.3f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
