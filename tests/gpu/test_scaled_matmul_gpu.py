"""FP8 on the H200: the e4m3/e5m2 conversions bit for bit against ``ir.fp8`` (what the
simulator computes), the fp8 wgmma tile kernel of tests/lang/test_wgmma_fp8.py exactly, and
``ws.ops.scaled_matmul`` against the f32 product of the decoded inputs (and torch._scaled_mm):
squares, tails, LLM shapes (split-K at small M), e4m3/e5m2, row-wise scales, bias, out dtypes,
batched operands (per batch against torch._scaled_mm) and the tuned launch function.
The output is poisoned with NaN first, so unwritten elements fail."""
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import warpstage as ws  # noqa: E402
from warpstage.ir.fp8 import FORMATS  # noqa: E402
from test_wgmma_fp8 import Fp8Case, reference, wgmma_fp8  # noqa: E402

pytestmark = [pytest.mark.gpu, pytest.mark.filterwarnings("ignore::warpstage.RecompileWarning")]
TORCH = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}
WS = {"e4m3": ws.Float8E4M3FN, "e5m2": ws.Float8E5M2}


@ws.kernel
def convert(x: ws.Tensor, q: ws.Tensor, y: ws.Tensor, n: ws.Int32):
    i = ws.arch.block_idx()[0] * 256 + ws.arch.thread_idx()[0]
    if i < n:
        q[i] = x[i]                                      # cvt.rn.satfinite.<fp8>x2.f32
        y[i] = ws.Float32(q[i])                          # cvt.rn.f16x2.<fp8>x2


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_conversions_are_bit_exact(name):
    fmt = FORMATS[name]
    rng = np.random.default_rng(0)
    bits = rng.integers(0, 2 ** 32, 1 << 16, dtype=np.uint64).astype(np.uint32)
    specials = np.array([0.0, -0.0, 448.0, 460.0, 464.0, 500.0, 57344.0, 61440.0, 1e30,
                         math.inf, -math.inf, math.nan, -math.nan, 2.0 ** -10, 2.0 ** -17,
                         1.0625, 1.1875, 1.125, 1.375], np.float32)
    x = np.concatenate([specials, bits.view(np.float32),
                        rng.standard_normal(1 << 14).astype(np.float32) * 100])
    n = len(x)
    q = torch.zeros(n, dtype=TORCH[name], device="cuda")
    y = torch.zeros(n, device="cuda")
    convert[(-(-n // 256), 1, 1), 256](torch.from_numpy(x).cuda(), q, y, n)
    got = q.view(torch.uint8).cpu().numpy()
    want = np.array([fmt.encode(float(v)) for v in x], np.uint8)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, [(float(x[i]), hex(got[i]), hex(want[i])) for i in bad[:8]]
    dec = np.array([fmt.decode(int(b)) for b in want], np.float32)
    np.testing.assert_array_equal(y.cpu().numpy(), dec)


def test_all_codes_decode():
    for name, fmt in FORMATS.items():
        codes = torch.arange(256, dtype=torch.uint8, device="cuda")
        y = torch.zeros(256, device="cuda")
        x = codes.view(TORCH[name]).float()              # torch decodes, for the input
        convert[(1, 1, 1), 256](x, torch.zeros(256, dtype=TORCH[name], device="cuda"), y, 256)
        np.testing.assert_array_equal(y.cpu().numpy(), np.array(
            [fmt.decode(fmt.encode(float(v))) for v in x.cpu().numpy()], np.float32))


@pytest.mark.parametrize("case", [Fp8Case(n=256), Fp8Case(n=8),
                                  Fp8Case(n=64, k=64, swizzle=64),
                                  Fp8Case(n=24, k=32, swizzle=0),
                                  Fp8Case(n=32, k=64, a_dtype=ws.Float8E4M3FN,
                                          b_dtype=ws.Float8E5M2, swizzle=64)], ids=repr)
def test_wgmma_fp8_tile(case):
    """Half-integers in [-4, 4] (exact in both formats): every sum is exact in f32, so the
    tensor cores' result equals the reference bit for bit."""
    rng = np.random.default_rng(1)

    def operand(rows, dtype):
        vals = rng.integers(-8, 9, (rows, case.k)) / 2.0
        t = torch.from_numpy(vals.astype(np.float32)).to(TORCH[dtype.ir_type.name])
        return t.cuda(), t.float().numpy()
    (a, av), (bt, bv) = operand(64, case.a_dtype), operand(case.n, case.b_dtype)
    d = torch.full((64, case.n), float("nan"), device="cuda")
    wgmma_fp8[(1, 1, 1), 128](case, a, bt, d)
    np.testing.assert_array_equal(d.cpu().numpy(), reference(av, bv, case.k))


def operands(m, n, k, da="e4m3", db="e4m3", rowwise=False, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    a = (torch.randn(m, k, device="cuda", generator=g) * 2).to(TORCH[da])
    b = (torch.randn(n, k, device="cuda", generator=g) * 2).to(TORCH[db]).T  # column-major
    sa = torch.rand((m, 1) if rowwise else (), device="cuda", generator=g) + 0.5
    sb = torch.rand((1, n) if rowwise else (), device="cuda", generator=g) + 0.5
    return a, b, sa, sb


def reference_mm(a, b, sa, sb, bias=None):
    torch.backends.cuda.matmul.allow_tf32 = False
    ref = (a.float() @ b.float()) * sa * sb
    return ref if bias is None else ref + bias.float()


def relative_error(c, ref) -> float:
    return float((c.float() - ref).norm() / ref.norm().clamp_min(1e-30))


TOL = {torch.bfloat16: 1e-2, torch.float16: 2e-3, torch.float32: 1e-3}


def check(m, n, k, out_dtype=torch.bfloat16, bias=False, against_torch=True, **kw):
    da, db = kw.pop("da", "e4m3"), kw.pop("db", "e4m3")
    a, b, sa, sb = operands(m, n, k, da, db, kw.pop("rowwise", False))
    bb = torch.randn(n, device="cuda").to(torch.bfloat16) if bias else None
    out = torch.full((m, n), float("nan"), dtype=out_dtype, device="cuda")
    got = ws.ops.scaled_matmul(a, b, sa, sb, bias=bb, out=out, out_dtype=out_dtype, **kw)
    assert got is out and not torch.isnan(out).any(), "unwritten (NaN) elements"
    ref = reference_mm(a, b, sa, sb, bb)
    err = relative_error(out, ref)
    assert err < TOL[out_dtype], err
    if against_torch:
        try:
            theirs = torch._scaled_mm(a, b, sa, sb, bias=bb,
                                      out_dtype=out_dtype)
        except (RuntimeError, TypeError, ValueError):    # a shape or dtype cuBLAS refuses
            # (torch 2.11: "Multiplication of two Float8_e5m2 matrices is not supported")
            return err
        assert relative_error(out, theirs.float()) < 2 * TOL[out_dtype] + relative_error(
            theirs, ref)
    return err


@pytest.mark.parametrize("m, n, k", [(256, 256, 256), (1000, 1000, 1008), (4096, 4096, 4096),
                                     (8192, 8192, 8192), (16384, 16384, 16384),
                                     (1, 4096, 16), (17, 136, 48),
                                     (129, 264, 200), (1000, 56, 1000)], ids=str)
def test_squares_and_tails(m, n, k):
    check(m, n, k)


@pytest.mark.parametrize("m, n, k", [(1, 4096, 4096), (16, 11008, 4096), (128, 4096, 11008),
                                     (4096, 11008, 4096), (4096, 4096, 4096),
                                     (16, 128256, 4096), (128, 128256, 4096),
                                     (16384, 4096, 11008), (16384, 128256, 4096)], ids=str)
def test_llm_shapes(m, n, k):
    """The LLM rows of issue 13 (an nn.Linear weight as B = W.T), the vocabulary projection
    (N = 128256) and 16384 tokens included, against the whole f32 product and
    torch._scaled_mm (16384 x 128256 x 4096: ~17 GB of f32 reference and temporaries)."""
    check(m, n, k, bias=True)


@pytest.mark.parametrize("da, db, rowwise, odt", [
    ("e4m3", "e5m2", False, torch.float32), ("e5m2", "e4m3", True, torch.bfloat16),
    ("e4m3", "e4m3", True, torch.float16), ("e5m2", "e5m2", False, torch.bfloat16)])
def test_dtypes_and_scales(da, db, rowwise, odt):
    check(512, 384, 640, odt, da=da, db=db, rowwise=rowwise, bias=rowwise)


@pytest.mark.parametrize("kw", [dict(tile_n=128), dict(schedule="pingpong", tile_n=128),
                                dict(splits=4), dict(raster="N", group=4)], ids=str)
def test_policies(kw):
    check(640, 768, 1024, **kw)


def test_row_major_b_is_copied():
    a, b, sa, sb = operands(256, 256, 512)
    with pytest.warns(ws.ops.MatmulCopyWarning):
        c = ws.ops.scaled_matmul(a, b.contiguous(), sa, sb)
    assert relative_error(c, reference_mm(a, b, sa, sb)) < 1e-2


@pytest.mark.parametrize("bs, m, n, k, a3, rowwise", [
    (4, 1000, 1000, 1008, True, False), (3, 17, 136, 48, True, True),
    (8, 128, 4096, 4096, True, False), (2, 4096, 4096, 4096, True, True),
    (4, 512, 384, 640, False, False)], ids=str)
def test_batched_per_batch_against_scaled_mm(bs, m, n, k, a3, rowwise):
    """(B, M, K) @ (B, K, N) (B as w.mT of a (B, N, K) weight), and a 2-D a broadcast; each
    batch against torch._scaled_mm of that batch and the f32 product."""
    g = torch.Generator(device="cuda").manual_seed(bs * m)
    a = (torch.randn((bs, m, k) if a3 else (m, k), device="cuda", generator=g) * 2).to(
        torch.float8_e4m3fn)
    b = (torch.randn(bs, n, k, device="cuda", generator=g) * 2).to(torch.float8_e4m3fn).mT
    sa = torch.rand((bs, m, 1) if rowwise else (), device="cuda", generator=g) + 0.5
    sb = torch.rand((1, n) if rowwise else (), device="cuda", generator=g) + 0.5
    out = torch.full((bs, m, n), float("nan"), dtype=torch.bfloat16, device="cuda")
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ws.ops.MatmulCopyWarning)   # the broadcast a: a copy
        assert ws.ops.scaled_matmul(a, b, sa, sb, out=out) is out
    assert not torch.isnan(out).any(), "unwritten (NaN) elements"
    for i in range(bs):
        ai = a[i] if a3 else a
        si = sa[i] if rowwise else sa
        ref = reference_mm(ai, b[i], si, sb)
        assert relative_error(out[i], ref) < TOL[torch.bfloat16], i
        try:
            theirs = torch._scaled_mm(ai, b[i], si, sb, out_dtype=torch.bfloat16)
        except (RuntimeError, TypeError, ValueError):  # a shape cuBLAS refuses (N % 16 != 0)
            continue
        assert relative_error(out[i], theirs.float()) < 2e-2 + relative_error(theirs, ref), i


def test_the_tuned_fp8_gemm_times_its_candidates_and_matches(tmp_path, monkeypatch):
    """The FP8 tuning space's launch function under ws.autotune, three candidates (one split-K)
    timed on the GPU; the winner's result against the f32 product."""
    monkeypatch.setenv("WARPSTAGE_CACHE_DIR", str(tmp_path))
    from warpstage.ops import tune_spaces as ts
    a, b, sa, sb = operands(128, 4096, 4096, seed=5)
    space = [ts.MatmulTuning(256, 4, 4), ts.MatmulTuning(128, 6, 4, splits=4),
             ts.MatmulTuning(128, 5, 8, "M", "pingpong")]
    tuned = ws.autotune(space, key=ts.scaled_matmul_shape_class, progress=False)(
        ts.tuned_scaled_matmul)
    out = torch.full((128, 4096), float("nan"), device="cuda", dtype=torch.bfloat16)
    tuned(a, b, sa, sb, out)
    assert tuned.report.count("timed") == 3 and tuned.report.best.ms > 0
    assert relative_error(out, reference_mm(a, b, sa, sb)) < TOL[torch.bfloat16]
