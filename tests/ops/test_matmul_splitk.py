"""warpstage/ops/matmul_splitk.py on the CPU: K ranges never empty and the reduction kernel
compiled for sm_90a by ptxas (the plan that picks the splits: test_matmul_plan.py). Its numerics run in the simulator through ws.ops.matmul (tests/ops/test_matmul_sim.py)."""
import numpy as np
import pytest

import warpstage as ws
from warpstage.backend import find_ptxas
from warpstage.options import CompileOptions
from warpstage.ops.matmul_splitk import even_splits, splitk_reduce


@pytest.mark.parametrize("k_tiles, asked, got", [(4, 3, 2), (16, 3, 3), (65, 16, 13), (1, 8, 1),
                                                  (64, 8, 8)])
def test_even_splits_leave_no_range_empty(k_tiles, asked, got):
    assert even_splits(k_tiles, asked) == got
    per = -(-k_tiles // got)
    assert (got - 1) * per < k_tiles <= got * per          # the last range has >= 1 step


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
