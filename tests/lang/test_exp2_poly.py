"""ws.math.exp2_poly (2**x on the FMA pipe: rounding split, degree-3 polynomial, exponent add)
in the simulator against numpy's float64 2**x, and its PTX (no ex2 instruction)."""
import numpy as np
import pytest

import warpstage as ws
from warpstage.backend import find_ptxas
from warpstage.options import CompileOptions


@ws.kernel
def exp2_both(x: ws.Tensor, poly: ws.Tensor, mufu: ws.Tensor, n: ws.Int32):
    i = ws.arch.block_idx()[0] * ws.arch.block_dim()[0] + ws.arch.thread_idx()[0]
    if i < n:
        poly[i] = ws.math.exp2_poly(x[i])
        mufu[i] = ws.math.exp2(x[i], approx=True)


def run(xs):
    x = np.asarray(xs, np.float32)
    poly, mufu = np.empty_like(x), np.empty_like(x)
    exp2_both[(len(x) + 127) // 128, 128](x, poly, mufu, len(x))
    return x, poly, mufu


def test_relative_error_over_the_softmax_range(sim_target):
    rng = np.random.default_rng(0)
    x, poly, _ = run(np.concatenate([rng.uniform(-126, 0, 1500), rng.uniform(-1, 1, 500),
                                     np.arange(-20, 21, 0.5)]))
    want = np.exp2(x.astype(np.float64))
    rel = np.abs(poly - want) / want
    assert rel.max() < 1.05e-4, rel.max()
    assert rel.max() > 1e-7          # a polynomial, not the exact power (the test can tell)


def test_edges_clamp_and_integers(sim_target):
    x, poly, _ = run([0.0, 1.0, -1.0, 7.0, -126.0, -127.0, -200.0, -np.inf, np.nan, 100.0,
                      -126.7])
    assert np.all(np.isfinite(poly))
    assert list(poly[[0, 1, 3, 9]]) == [1, 2, 128, 2.0 ** 100]     # integers are exact
    assert abs(poly[2] - 0.5) < 1e-4 and abs(poly[4] / 2.0 ** -126 - 1) < 1e-4
    assert list(poly[5:9]) == [0.0] * 4                           # masked scores add nothing
    assert 0 < poly[10] < 2.0 ** -126


def test_static_argument_is_exact():
    assert ws.math.exp2_poly(-3) == 0.125


def test_ptx_has_no_ex2_for_the_polynomial():
    if find_ptxas(CompileOptions()) is None:
        pytest.skip("no ptxas")

    @ws.kernel
    def only_poly(x: ws.Tensor, y: ws.Tensor):
        i = ws.arch.thread_idx()[0]
        y[i] = ws.math.exp2_poly(x[i])

    a = np.zeros(128, np.float32)
    ptx = ws.compile(only_poly, a, a, block=(128, 1, 1)).ptx
    assert "ex2" not in ptx
    assert ptx.count("fma.rn.f32") >= 3 and "shl.b32" in ptx
