"""ws.ops.scaled_matmul (FP8) in the CPU simulator against float64 numpy on the decoded inputs:
odd M, N, K (tails in every dimension, one and several 128-wide K steps, several tiles per
persistent CTA), e4m3 and e5m2 (mixed too), per-tensor and row/column-wise scales, bias, the
output dtypes, ``out=``, split-K, layouts that are copied K-major, and the argument errors."""
import warnings

import numpy as np
import pytest

import warpstage as ws
from warpstage.ops import MatmulCopyWarning

ml_dtypes = pytest.importorskip("ml_dtypes")
pytestmark = [pytest.mark.usefixtures("sim_target"),
              pytest.mark.filterwarnings("ignore::warpstage.RecompileWarning")]
E4M3, E5M2 = ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2


def fp8(shape, dtype, seed):
    return (np.random.default_rng(seed).standard_normal(shape) * 3).astype(dtype)


def operands(m, n, k, da=E4M3, db=E4M3, rowwise=False, bias=False, seed=0):
    """a (M, K) row-major, b (K, N) as the transpose of an (N, K) weight, scales, bias."""
    rng = np.random.default_rng(seed + 7)
    a, w = fp8((m, k), da, seed), fp8((n, k), db, seed + 1)
    sa = rng.uniform(0.5, 2, (m, 1) if rowwise else ()).astype(np.float32)
    sb = rng.uniform(0.5, 2, (1, n) if rowwise else (1,)).astype(np.float32)
    bb = rng.standard_normal(n).astype(np.float32) if bias else None
    return a, w.T, sa, sb, bb


def reference(a, b, sa, sb, bias=None):
    ref = (a.astype(np.float64) @ b.astype(np.float64)) * sa.astype(np.float64) \
        * sb.astype(np.float64)
    return ref if bias is None else ref + bias


def relative_error(c, ref) -> float:
    return float(np.linalg.norm(c.astype(np.float64) - ref) / max(np.linalg.norm(ref), 1e-30))


TOL = {np.float32: 1e-6, ml_dtypes.bfloat16: 1e-2, np.float16: 2e-3}
# (M, N, K, A dtype, B dtype, row-wise scales, bias, out dtype, policy overrides)
CASES = [
    (1, 64, 16, E4M3, E4M3, False, False, np.float32, {}),             # M = 1, one short K step
    (17, 72, 48, E4M3, E4M3, False, True, ml_dtypes.bfloat16, {}),      # N tail, bias
    (130, 200, 272, E4M3, E4M3, True, True, np.float32, {}),           # 2 x 4 tiles, 3 K steps
    (40, 64, 128, E5M2, E5M2, False, False, np.float16, {}),
    (33, 80, 160, E4M3, E5M2, True, False, np.float32, dict(tile_n=128)),
    (64, 136, 144, E5M2, E4M3, False, True, np.float32, dict(schedule="pingpong")),
    (17, 64, 520, E4M3, E4M3, True, True, np.float32, dict(splits=3)),  # split-K, 5 K steps
]


def ids(case):
    m, n, k, da, db, rw, bias, odt, pol = case
    return (f"{m}x{n}x{k}-{np.dtype(da).name[7:]}-{np.dtype(db).name[7:]}"
            f"{'-rowwise' if rw else ''}{'-bias' if bias else ''}-{np.dtype(odt).name}"
            + "".join(f"-{key}{v}" for key, v in pol.items()))


@pytest.mark.parametrize("case", CASES, ids=ids)
def test_scaled_matmul_matches_numpy(case):
    m, n, k, da, db, rowwise, bias, odt, pol = case
    a, b, sa, sb, bb = operands(m, n, k, da, db, rowwise, bias)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MatmulCopyWarning)     # rows of K bytes (K % 16 != 0)
        c = ws.ops.scaled_matmul(a, b, sa, sb, bias=bb, out_dtype=odt, **pol)
    assert c.shape == (m, n) and c.dtype == np.dtype(odt)
    ref = reference(a, b, sa, sb, bb)
    assert relative_error(c, ref) < TOL[odt]
    assert np.abs(ref).max() > 1.0                               # not a trivial product


def test_out_and_default_dtype():
    a, b, sa, sb, _ = operands(24, 64, 128, seed=3)
    out = np.full((24, 64), np.nan, ml_dtypes.bfloat16)
    got = ws.ops.scaled_matmul(a, b, sa, sb, out=out)
    assert got is out
    assert relative_error(out, reference(a, b, sa, sb)) < 1e-2
    assert ws.ops.scaled_matmul(a, b, sa, sb).dtype == ml_dtypes.bfloat16   # torch's default


def test_row_major_b_is_copied_k_major():
    a, b, sa, sb, _ = operands(16, 64, 128, seed=4)
    b_rows = np.ascontiguousarray(b)                             # (K, N) row-major: N-major
    with pytest.warns(MatmulCopyWarning, match="K-major"):
        c = ws.ops.scaled_matmul(a, b_rows, sa, sb, out_dtype=np.float32)
    assert relative_error(c, reference(a, b_rows, sa, sb)) < 1e-6


def test_saturated_inputs_and_zero_k():
    """Inputs at the format's max and a K of 0 (zeros, then the scales and bias)."""
    a = np.full((8, 32), 448.0, np.float32).astype(E4M3)
    b = np.full((32, 16), -448.0, np.float32).astype(E4M3)
    one = np.ones((1,), np.float32)
    c = ws.ops.scaled_matmul(a, b, one, one, out_dtype=np.float32)
    assert (c == -448.0 * 448.0 * 32).all()
    bias = np.arange(16, dtype=np.float32)
    z = ws.ops.scaled_matmul(a[:, :0], b[:0], one, one, bias=bias, out_dtype=np.float32)
    assert (z == bias).all()


@pytest.mark.parametrize("what, args, needle", [
    ("bf16 a", lambda a, b, s: (a.astype(ml_dtypes.bfloat16), b, s, s), "float8_e4m3fn"),
    ("3-d b", lambda a, b, s: (a, b[None], s, s), "2-d tensor"),
    ("no chain", lambda a, b, s: (a, b[:16], s, s), "do not chain"),
    ("f16 scale", lambda a, b, s: (a, b, s.astype(np.float16), s), "float32 tensor"),
    ("bad row scale", lambda a, b, s: (a, b, np.ones((5, 1), np.float32), s), "(8, 1)"),
], ids=lambda v: v if isinstance(v, str) else "")
def test_argument_errors(what, args, needle):
    a, b, sa, sb, _ = operands(8, 64, 32, seed=5)
    with pytest.raises(ws.ArgumentError) as e:
        ws.ops.scaled_matmul(*args(a, b, sa))
    assert needle in str(e.value) and "Fix:" in str(e.value)
    assert "ws.ops.scaled_matmul" in str(e.value)


def test_matmul_points_fp8_to_scaled_matmul():
    a, b, _, _, _ = operands(8, 64, 32, seed=6)
    with pytest.raises(ws.ArgumentError, match="scaled_matmul"):
        ws.ops.matmul(a, b)
