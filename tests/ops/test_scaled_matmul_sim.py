"""ws.ops.scaled_matmul (FP8) in the CPU simulator against float64 numpy on the decoded inputs:
odd M, N, K (tails in every dimension, one and several 128-wide K steps, several tiles per
persistent CTA), e4m3 and e5m2 (mixed too), per-tensor and row/column-wise scales, bias, the
output dtypes, ``out=``, split-K, layouts that are copied K-major, batched operands (per batch
against numpy), and the argument errors."""
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
    (17, 72, 272, E4M3, E4M3, True, False, np.float32, dict(tile_m=128)),  # M <= 64: 128 rows
    (100, 64, 144, E4M3, E4M3, False, True, np.float32, dict(tile_m=64)),  # 2 tiles of 64 rows
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
    ("4-d b", lambda a, b, s: (a, b[None, None], s, s), "2-d or 3-d"),
    ("batched row scale", lambda a, b, s: (a[None], b[None], np.ones((8, 1), np.float32), s),
     "(1, 8, 1)"),
    ("batches differ", lambda a, b, s: (np.stack([a, a]), np.stack([b] * 3), s, s),
     "do not chain"),
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


# (B, M, N, K, A batched, B batched, row-wise scales, bias, policy overrides)
BATCHED = [
    (3, 17, 72, 48, True, True, False, True, {}),                # tails in M, N and K
    (2, 130, 64, 272, True, True, True, False, {}),              # two M tiles, 3 K steps, rows
    (2, 33, 80, 160, True, False, True, True, {}),               # (B, M, K) @ (K, N): folded
    (3, 9, 64, 40, False, True, False, False, {}),               # a 2-D a broadcast (a copy)
    (2, 17, 64, 520, True, True, True, True, dict(splits=3)),    # split-K over the batches
]


@pytest.mark.parametrize("case", BATCHED, ids=lambda c: "x".join(map(str, c[:4]))
                         + f"-a{'3' if c[4] else '2'}b{'3' if c[5] else '2'}"
                         + ("-rowwise" if c[6] else "") + ("-bias" if c[7] else "")
                         + "".join(f"-{k}{v}" for k, v in c[8].items()))
def test_batched_scaled_matmul_matches_numpy_per_batch(case):
    bs, m, n, k, a3, b3, rowwise, bias, pol = case
    rng = np.random.default_rng(bs * m + k)
    a = fp8((bs, m, k) if a3 else (m, k), E4M3, m)
    w = fp8((bs, n, k) if b3 else (n, k), E4M3, n)
    b = np.swapaxes(w, -1, -2)                                   # w.mT: K-major, no copy
    sa = rng.uniform(0.5, 2, (bs, m, 1) if rowwise else ()).astype(np.float32)
    sb = rng.uniform(0.5, 2, (1, n) if rowwise else (1,)).astype(np.float32)
    bb = rng.standard_normal(n).astype(np.float32) if bias else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MatmulCopyWarning)     # the broadcast a is copied
        c = ws.ops.scaled_matmul(a, b, sa, sb, bias=bb, out_dtype=np.float32, **pol)
    assert c.shape == (bs, m, n) and c.dtype == np.float32
    for i in range(bs):
        ai, bi = (a[i] if a3 else a), (b[i] if b3 else b)
        ref = reference(ai, bi, sa[i] if rowwise else sa, sb, bb)
        assert relative_error(c[i], ref) < 1e-6, i
        assert np.abs(ref).max() > 1.0


def test_batched_out():
    a, w = fp8((2, 24, 128), E4M3, 1), fp8((2, 64, 128), E4M3, 2)
    one = np.ones((), np.float32)
    out = np.full((2, 24, 64), np.nan, ml_dtypes.bfloat16)
    assert ws.ops.scaled_matmul(a, np.swapaxes(w, 1, 2), one, one, out=out) is out
    for i in range(2):
        assert relative_error(out[i], reference(a[i], w[i].T, one, one)) < 1e-2


def test_matmul_points_fp8_to_scaled_matmul():
    a, b, _, _, _ = operands(8, 64, 32, seed=6)
    with pytest.raises(ws.ArgumentError, match="scaled_matmul"):
        ws.ops.matmul(a, b)
