"""warpstage/ops/matmul_splitk.py on the CPU: the split plan per shape (ranges never empty, only
when the output has fewer tiles than SMs) and the reduction kernel compiled for sm_90a by
ptxas. Its numerics run in the simulator through ws.ops.matmul (tests/ops/test_matmul_sim.py)."""
import numpy as np
import pytest

import warpstage as ws
from warpstage.backend import find_ptxas
from warpstage.options import CompileOptions
from warpstage.ops.matmul_splitk import MAX_SPLITS, even_splits, plan, splitk_reduce


@pytest.mark.parametrize("k_tiles, asked, got", [(4, 3, 2), (16, 3, 3), (65, 16, 13), (1, 8, 1),
                                                  (64, 8, 8)])
def test_even_splits_leave_no_range_empty(k_tiles, asked, got):
    assert even_splits(k_tiles, asked) == got
    per = -(-k_tiles // got)
    assert (got - 1) * per < k_tiles <= got * per          # the last range has >= 1 step


@pytest.mark.parametrize("m, n, k", [(1, 4096, 4096), (128, 11008, 4096), (16, 4096, 11008),
                                     (4096, 4096, 4096), (128, 128256, 4096), (17, 72, 24)])
def test_plan_splits_only_what_leaves_sms_idle(m, n, k):
    tn, splits = plan(m, n, k, 1, 132)
    tiles = -(-m // 128) * -(-n // tn)
    assert 1 <= splits <= MAX_SPLITS and even_splits(-(-k // 64), splits) == splits
    if tiles >= 132:
        assert splits == 1
    else:
        assert tiles * splits <= 2 * 132                  # at most two waves of work units


def test_reduce_kernel_compiles_with_an_epilogue():
    if find_ptxas(CompileOptions()) is None:
        pytest.skip("no ptxas")
    work = np.zeros((6, 17, 72), np.float32)
    c = np.zeros((2, 17, 72), np.float16)
    bias = np.zeros(72, np.float32)
    epi = ws.ops.BiasGelu(bias)
    ck = ws.compile(splitk_reduce, epi, work, c, ws.Int32, ws.Int32, ws.Int32, ws.Int32,
                    epi.operands(), block=(256, 1, 1))
    assert "ld.global.b32" in ck.ptx and "st.global.b16" in ck.ptx     # f32 partials, f16 out
    assert ck.resources.spill_stores == 0
