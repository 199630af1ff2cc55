"""The per-shape plan of ``ws.ops.matmul``: tile rows, tile width and K splits, chosen by an
estimate of the device time fitted to the H200's measurements (docs/matmul.md, "Choosing the
tile by shape"; the figures: benchmarks/RESULTS.md, session 6's small-M policy rows and the
``benchmarks/gemm_plan.py`` sweep of 05:10 UTC, 12 shapes x 10 configurations, which refitted
the constants: the plan's pick is the fastest measured 256- or 128-wide configuration at
every swept shape).

A persistent CTA streams its work units' A and B tiles through TMA; what bounds it is whichever
is slowest of:

- **the SM's own intake**: a CTA pulls about ``SM_BYTES_PER_US`` (145 GB/s) of A and B tiles
  from L2, whatever the tile, after ``FIXED_US`` (4 us: launch, the ring's first round trip,
  the last store) once per kernel; so a unit's time is its bytes over that rate and more CTAs
  with fewer bytes each is what small M needs (the 04:10 fit without the fixed term read
  95 GB/s: 64 x 128 tiles, 64 K steps of 24 KiB, 16.2-17.0 us with 32, 64 or 128 CTAs);
- **its tensor cores**: ``SM_FMA_PER_US`` (2048 bf16 FMA per clock at ~1.9 GHz) on the unit's
  tile_m x tile_n x K; the two overlap imperfectly (``OVERLAP``: 128 x 256 at M = 128 ran 42
  us for 33 of bytes and 34 of wgmma);
- **HBM**: every byte of A, B and C once, at ``HBM_BYTES_PER_US`` (3.8 TB/s achieved of 4.8);
- **split-K's second pass**: the f32 workspace written and read back (splits x M x N x 4 bytes
  each way, at HBM rate) plus ``SPLIT_US`` for the reduction kernel's launch, its ramp and the
  extra kernel boundary. Measured at 128 x 4096 x 4096: 2 splits cost 11 us more than the GEMM
  part alone, 8 splits 17-21 us, which is why split-K at M >= 64 rarely wins: the whole
  product takes 16 us unsplit.

Each wave of units also pays ``WAVE_US``. The plan takes the least estimate; ties
go to no split, then the fewest rows past M, then 128 rows, then the wider tile. ``tune=True`` measures instead.

**Stream-K** (``plan_stream_k``, ``estimate_stream_k_us``): the tiles of the last partial wave
(``stream_k_tiles``) are cut by K steps evenly over the CTAs, after the full waves, so every CTA
does the same number of K steps; a CTA pays per K step what a data-parallel unit does, plus the
fix-up of its partial tiles: at most two partials written and the others of a tile read back by
the last arriver, each ``tile_m x tile_n x 4`` bytes at ``FIXUP_BYTES_PER_US`` (an
unmeasured guess: the intake rate). ``ws.ops.matmul`` takes it when ``STREAM_K_AUTO`` is on and
its estimate is below the data-parallel plan's by more than ``STREAM_K_GAIN`` (off: measured
slower everywhere, see ``STREAM_K_AUTO``).
"""
from __future__ import annotations

__all__ = ["plan", "estimate_us", "plan_stream_k", "estimate_stream_k_us", "stream_k_tiles",
           "FIXUP_BYTES_PER_US", "STREAM_K_AUTO", "STREAM_K_GAIN", "even_splits", "MAX_SPLITS", "SM_BYTES_PER_US",
           "SM_FMA_PER_US", "HBM_BYTES_PER_US", "SPLIT_US", "WAVE_US", "OVERLAP", "FIXED_US", "TIE"]

MAX_SPLITS = 16
SM_BYTES_PER_US = 145e3
"""A and B bytes one CTA takes in per microsecond (145 GB/s, ~75 bytes per clock), fitted with
``FIXED_US`` to the H200 sweep of 05:10 UTC (the 64 K-step and 172 K-step rows together:
64 x 128 tiles took 16.2 us for 64 steps on 64 CTAs and 36.7 us for 172 steps on 128)."""
SM_FMA_PER_US = 2048 * 1.9e3
"""bf16 multiply-adds per microsecond of one SM's tensor cores (989 TFLOP/s / 132 SMs)."""
HBM_BYTES_PER_US = 3.8e6
"""Achieved HBM bandwidth (3.8 TB/s of the H200's 4.8): 64 x 4096 x 4096, 32 MiB of weight,
took 16.9 us unsplit but 8 us is the floor of the bytes; 128 x 8192 x 8192 (128 MiB) 38 us."""
SPLIT_US = 6.0
"""Fixed device cost of a split (the reduction kernel's launch and ramp, the kernel boundary),
fitted with ``FIXED_US`` (the 04:10 fit without it read 8): 64 x 4096 x 4096, 64 x 128 tiles,
1 / 2 / 4 splits: 16.9 / 17.3 / 18.5 us where the GEMM part alone drops to 8.6 (HBM-bound) and
the workspace is 0.5-2 MiB."""
WAVE_US = 0.3
"""Per wave of work units: a unit's own drain and store."""
OVERLAP = 0.2
"""The share of the smaller of (intake, tensor-core) time that does not hide under the larger."""
FIXED_US = 4.0
"""Once per kernel: the launch, the ring's first TMA round trip, the last unit's store."""


def even_splits(k_tiles: int, s: int) -> int:
    """The number of non-empty ranges when ``k_tiles`` K steps are cut into ranges of
    ceil(k_tiles / s) (what the kernel does): at most ``s``."""
    per = -(-k_tiles // s)
    return -(-k_tiles // per)


def estimate_us(m: int, n: int, k: int, batches: int, sms: int, tile_m: int, tile_n: int,
                splits: int, k_step: int = 64, out_bytes: int = 2) -> float:
    """Estimated device time in microseconds of a (batches x) M x N x K GEMM with
    ``tile_m x tile_n`` tiles and ``splits`` K ranges on ``sms`` SMs (the module docstring's
    model). ``k_step``: K per stage (64 for 16-bit inputs, 128 for fp8: either way 128 bytes
    of a row); ``out_bytes``: C's element size."""
    k_tiles = max(1, -(-k // k_step))
    per = -(-k_tiles // splits)
    units = -(-m // tile_m) * -(-n // tile_n) * batches * splits
    waves = -(-units // sms)
    unit = per * _step_us(tile_m, tile_n, k_step) + WAVE_US
    t = max(FIXED_US + waves * unit, _hbm_us(m, n, k, batches, k_step, out_bytes))
    if splits > 1:
        t += SPLIT_US + 2 * batches * splits * m * n * 4 / HBM_BYTES_PER_US
    return t


def _step_us(tile_m: int, tile_n: int, k_step: int) -> float:
    """One K step of a tile_m x tile_n unit on one SM: the larger of its intake and wgmma time
    plus ``OVERLAP`` of the smaller."""
    elem = 128 // k_step
    intake = (tile_m + tile_n) * k_step * elem / SM_BYTES_PER_US
    wgmma = tile_m * tile_n * k_step / (SM_FMA_PER_US * (2 if elem == 1 else 1))
    return max(intake, wgmma) + OVERLAP * min(intake, wgmma)


def _hbm_us(m, n, k, batches, k_step, out_bytes) -> float:
    """Every byte of A, B and C once at ``HBM_BYTES_PER_US``."""
    elem = 128 // k_step
    return batches * (m * k * elem + n * k * elem + m * n * out_bytes) / HBM_BYTES_PER_US


FIXUP_BYTES_PER_US = SM_BYTES_PER_US
"""The rate at which one CTA writes or reads back an f32 partial tile through L2 in the
stream-K fix-up (a guess until measured: ``scripts/gpu_gemm7.sh``)."""
STREAM_K_GAIN = 0.01
"""Stream-K replaces the data-parallel plan only when estimated faster by more than this
share (the two estimates share their per-step cost, so their difference is the wave
quantization and the fix-up; not the ``TIE`` of the model's absolute error)."""
STREAM_K_AUTO = False
"""Whether ``ws.ops.matmul`` picks stream-K by itself (``stream_k=None``). Off: measured on the
H200 (benchmarks/RESULTS.md, "Session 8, stream-K"), the stream-K kernel ran 4-30% slower than
the data-parallel one at every swept shape, the model's picks included (256 x 11008 x 4096: 413
against 612 TFLOP/s; 8192^3: 767 against 809), even at the same tile where the fix-up is a
small share (4096^3, 128 x 256: 702 against 791). The K loops are data-parallel's (SASS); the
loss was L2 reuse: in tile order every CTA read its own K slab (docs/matmul.md, "Why the CTAs
walk in K step"), fixed in ``ws.sched.stream_k_unit`` and not yet measured, so still off.
``stream_k=True`` still runs it."""
INT32_LIMIT = 1 << 31


def stream_k_tiles(tiles: int, ctas: int, k_tiles: int) -> int:
    """How many tiles (the first of the tile order) a stream-K launch on ``ctas`` CTAs splits
    by K steps: those of the last partial wave (``tiles % ctas``; all of them with fewer tiles
    than CTAs), one full wave more when that would leave each CTA less than half a tile (a
    tile's partials would come from more than three CTAs: CUTLASS's "DP + one SK wave"); 0
    when the waves are full, when there are fewer than half as many tiles as CTAs (a tile's
    many partials added by one CTA while the others idle: docs/matmul.md, "Why a second pass"),
    when a CTA would get no K step, or past the kernel's Int32 arithmetic
    (``ws.sched.StreamKScheduler``)."""
    sk = tiles % ctas
    if sk == 0 or 2 * tiles < ctas:
        return 0
    if tiles > ctas and 2 * sk < ctas:
        sk += ctas
    if sk * k_tiles < ctas or (sk * k_tiles + 1) * ctas >= INT32_LIMIT:
        return 0
    return sk


def estimate_stream_k_us(m: int, n: int, k: int, batches: int, sms: int, tile_m: int,
                         tile_n: int, k_step: int = 64, out_bytes: int = 2):
    """Estimated device time in microseconds of the stream-K launch (``sms`` CTAs; the module
    docstring's model), or None when it would have no stream-K tile (``stream_k_tiles``)."""
    k_tiles = max(1, -(-k // k_step))
    tiles = -(-m // tile_m) * -(-n // tile_n) * batches
    sk = stream_k_tiles(tiles, sms, k_tiles)
    if sk == 0:
        return None
    per = -(-sk * k_tiles // sms)                         # K steps of the busiest CTA
    contributors = -(-k_tiles // max(1, sk * k_tiles // sms)) + 1
    step = _step_us(tile_m, tile_n, k_step)
    waves = (tiles - sk) // sms
    fixup = (2 + contributors - 1) * tile_m * tile_n * 4 / FIXUP_BYTES_PER_US
    t = FIXED_US + waves * (k_tiles * step + WAVE_US) + per * step + 2 * WAVE_US + fixup
    return max(t, _hbm_us(m, n, k, batches, k_step, out_bytes))


def plan_stream_k(m: int, n: int, k: int, batches: int, sms: int, widths=(256, 192, 128),
                  rows=(128,), k_step: int = 64, out_bytes: int = 2):
    """(estimate, tile_m, tile_n) of the least ``estimate_stream_k_us`` among ``rows`` x
    ``widths`` (ties to the wider tile), or None when none has a stream-K tile."""
    found = [(t, -tm, -tn) for tm in rows for tn in widths
             if (t := estimate_stream_k_us(m, n, k, batches, sms, tm, tn, k_step,
                                           out_bytes)) is not None]
    if not found:
        return None
    t, tm, tn = min(found)
    return t, -tm, -tn


TIE = 0.03
"""Estimates within this share of the least count as ties (the model's error on the swept
shapes is about +-5%): a near-tie goes to the simpler configuration, not to the model's noise
(4096 x 11008 x 4096: 128 x 128 tiles estimated 1% below 128 x 256, measured 3% slower at
4096^3)."""


def plan(m: int, n: int, k: int, batches: int, sms: int, widths=(256, 128),
         rows=(128, 64), split: bool = True, k_step: int = 64, out_bytes: int = 2) -> tuple:
    """(tile_m, tile_n, splits) of least ``estimate_us`` among ``rows`` x ``widths`` x K splits
    (``split`` False: 1 only; else 1 and every non-empty split count up to ``MAX_SPLITS``,
    tried only while the output has fewer tiles than SMs). Estimates within ``TIE`` of the least
    are ties, broken by: no split, then fewer rows computed past M, then more rows, then the
    wider tile, then the estimate. The default widths are the two measured at small M; 64 (and
    192) are the caller's to pass."""
    k_tiles = max(1, -(-k // k_step))
    found = []
    for tm in rows:
        for tn in widths:
            tiles = -(-m // tm) * -(-n // tn) * batches
            counts = ([1] if tiles >= sms or not split else
                      sorted({even_splits(k_tiles, s)
                              for s in range(1, min(MAX_SPLITS, k_tiles) + 1)}))
            for s in counts:
                t = estimate_us(m, n, k, batches, sms, tm, tn, s, k_step, out_bytes)
                found.append((t, s, -(-m // tm) * tm - m, -tm, -tn))
    least = min(t for t, *_ in found)
    t, s, _, tm, tn = min((f for f in found if f[0] <= least * (1 + TIE)),
                          key=lambda f: (f[1:], f[0]))
    return -tm, -tn, s
