"""warpstage/ops/matmul_plan.py: the device-time estimate behind ``ws.ops.matmul``'s per-shape
tile rows, tile width and K splits. The estimate is checked against what it models (more bytes
per CTA, more waves, a split's second pass each cost time; the HBM floor holds) and the plan
against the H200 policy sweep it was fitted to (benchmarks/RESULTS.md, session 6: the best of
16 configurations per shape, device time)."""
import pytest

from warpstage.ops.matmul_plan import (FIXED_US, HBM_BYTES_PER_US, MAX_SPLITS, SPLIT_US, estimate_us,
                                       even_splits, plan)


@pytest.mark.parametrize("m, n, k", [(1, 4096, 4096), (128, 11008, 4096), (16, 4096, 11008),
                                     (4096, 4096, 4096), (128, 128256, 4096), (17, 72, 24),
                                     (300, 1000, 8)])
def test_plan_splits_only_what_leaves_sms_idle(m, n, k):
    tm, tn, splits = plan(m, n, k, 1, 132)
    tiles = -(-m // tm) * -(-n // tn)
    assert tm in (64, 128) and tn in (256, 128)
    assert 1 <= splits <= MAX_SPLITS and even_splits(-(-k // 64), splits) == splits
    if tiles >= 132:
        assert splits == 1


def test_the_estimate_charges_bytes_waves_splits_and_the_hbm_floor():
    base = estimate_us(128, 4096, 4096, 1, 132, 64, 128, 1) - FIXED_US
    assert estimate_us(128, 4096, 8192, 1, 132, 64, 128, 1) - FIXED_US > 1.9 * base  # twice K
    assert estimate_us(128, 4096, 4096, 1, 16, 64, 128, 1) - FIXED_US > 3.9 * base   # 4 waves
    split = estimate_us(128, 4096, 4096, 1, 132, 64, 128, 2)
    assert split > SPLIT_US + 2 * 2 * 128 * 4096 * 4 / HBM_BYTES_PER_US      # the second pass
    weight = 128256 * 4096 * 2 / HBM_BYTES_PER_US
    assert estimate_us(1, 128256, 4096, 1, 132, 64, 256, 1) >= weight        # HBM-bound
    fp8 = estimate_us(4096, 4096, 4096, 1, 132, 128, 256, 1, k_step=128)
    assert fp8 < estimate_us(4096, 4096, 4096, 1, 132, 128, 256, 1)          # 2x the MMA rate


# H200, 2026-12-02 04:10 UTC (benchmarks/RESULTS.md, "Small M at today's main"): the fastest of
# {128, 64} rows x {256, 128} columns x {1, 2, 4, 8} splits, kernel launched directly, device
# time
MEASURED_BEST = [((128, 4096, 4096), (64, 128, 1)), ((256, 4096, 4096), (64, 128, 1)),
                 ((128, 8192, 8192), (64, 128, 1)), ((128, 11008, 4096), (128, 128, 1)),
                 # 05:10 UTC, benchmarks/gemm_plan.py (12 shapes x 10 configurations): the
                 # fastest 256- or 128-wide one, where it beat the rest by more than the TIE
                 ((256, 4096, 11008), (64, 128, 1)), ((64, 11008, 4096), (64, 128, 1)),
                 ((64, 4096, 11008), (64, 128, 2)), ((128, 4096, 11008), (64, 128, 2)),
                 ((256, 128256, 4096), (128, 256, 1))]


@pytest.mark.parametrize("shape, best", MEASURED_BEST)
def test_the_plan_picks_the_measured_best_at_the_swept_shapes(shape, best):
    assert plan(*shape, 1, 132) == best


def test_ties_prefer_no_split_then_the_fewest_rows_past_m():
    # HBM-bound (the weight is 1 GiB): every unsplit candidate costs the same time
    assert plan(64, 128256, 4096, 1, 132) == (64, 256, 1)
    assert plan(64, 128256, 4096, 1, 132, rows=(128,)) == (128, 256, 1)


def test_given_rows_and_widths_are_the_only_candidates():
    assert plan(128, 4096, 4096, 1, 132, widths=(256,), rows=(128,))[:2] == (128, 256)
    assert plan(128, 4096, 4096, 1, 132, split=False)[2] == 1
