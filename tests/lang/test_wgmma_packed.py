"""Packed A fragments (``Fragment.pack``, ``ws.wgmma.PackedFragment``,
``accumulator_to_a(..., packed=True)``): in the simulator, a GEMM chain D = bf16(A B) C whose
second wgmma reads the first one's accumulator as packed b32 registers, against numpy; the
register bits of ``cvt.rn.bf16x2.f32`` / ``.f16x2.f32`` against numpy's rounding; on the CPU,
the PTX (one ``cvt.rn.bf16x2.f32`` per pair, no ``mov.b32 {..}`` packing) and the SASS (no
halfword ``PRMT`` on the path); the errors."""
import re
import warnings

import numpy as np
import pytest

import warpstage as ws
from warpstage.lang.wgmma import TileLayout

from test_wgmma import bf16_to_f64, staged

pytestmark = pytest.mark.filterwarnings("ignore::warpstage.RecompileWarning")


class Chain:
    """D (64 x n) = round(A (64 x k) @ B (k x m), dtype) @ C (m x n): the first product in an
    f32 accumulator, fed to the second as the A operand from registers (the attention P V
    pattern). A, B^T, C^T are staged K-major. ``packed``: A fragments as PackedFragments (True)
    or 16-bit Fragments (False). ``loop``: carry the A fragments through a dynamic loop of
    ``reps`` iterations that re-issues the second product (D accumulates reps times)."""

    def __init__(self, k=16, m=32, n=16, dtype=ws.BFloat16, packed=True, reps=1):
        self.k, self.m, self.n, self.dtype, self.packed, self.reps = k, m, n, dtype, packed, reps
        self.la = TileLayout(64, k, dtype, 32 if k == 16 else 64)
        self.lb = TileLayout(m, k, dtype, 32 if k == 16 else 64)
        self.lc = TileLayout(n, m, dtype, 64 if m == 32 else 128)
        self.Storage = ws.smem.make_storage("Chain", a=self.la.spec, b=self.lb.spec,
                                            c=self.lc.spec)

    def __repr__(self):
        return (f"Chain(k={self.k}, m={self.m}, n={self.n}, {self.dtype.__name__}, "
                f"packed={self.packed}, reps={self.reps})")


@ws.kernel
def chain(case: ws.Static[Chain], a_g: ws.Tensor, bt_g: ws.Tensor, ct_g: ws.Tensor,
          d_g: ws.Tensor, reps: ws.Int32):
    st = staged(case.Storage, [("a", case.la, a_g), ("b", case.lb, bt_g), ("c", case.lc, ct_g)])
    da = ws.wgmma.tile_descriptor(st.a, major="K", swizzle=case.la.swizzle)
    db = ws.wgmma.tile_descriptor(st.b, major="K", swizzle=case.lb.swizzle)
    dc = ws.wgmma.tile_descriptor(st.c, major="K", swizzle=case.lc.swizzle)
    ws.wgmma.fence()
    s = ws.wgmma.mma(da.k_step(0), db.k_step(0), None, n=case.m, scale_d=False)
    for kk in ws.static_range(1, case.k // 16):
        s = ws.wgmma.mma(da.k_step(kk), db.k_step(kk), s)
    ws.wgmma.commit_group()
    s = ws.wgmma.wait_group(0, s)
    p = [ws.wgmma.accumulator_to_a(s, kk, case.dtype, packed=case.packed)
         for kk in ws.static_range(case.m // 16)]
    acc = ws.wgmma.zeros(case.n)
    for _ in range(reps):                  # p is carried through a dynamic loop
        acc, *p = ws.wgmma.fence(acc, *p)
        for kk in ws.static_range(case.m // 16):
            acc = ws.wgmma.mma(p[kk], dc.k_step(kk), acc)
        ws.wgmma.commit_group()
        acc = ws.wgmma.wait_group(0, acc)
    coords = ws.wgmma.accumulator_coords(case.n)
    for i in ws.static_range(case.n // 2):
        d_g[coords[i][0], coords[i][1]] = acc[i]


def _values(dtype, x):
    """float64 values of x rounded to dtype (bf16 to nearest even), and their storage bits."""
    if dtype is ws.BFloat16:
        bits = bf16_bits_rne(x)
        return bf16_to_f64(bits), bits
    h = x.astype(np.float16)
    return h.astype(np.float64), h


def bf16_bits_rne(x):
    b = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)


def run_chain(case: Chain, seed=0):
    rng = np.random.default_rng(seed)
    a, a_h = _values(case.dtype, rng.standard_normal((64, case.k)))
    b, b_h = _values(case.dtype, rng.standard_normal((case.k, case.m)))
    c, c_h = _values(case.dtype, rng.standard_normal((case.m, case.n)))
    d = np.full((64, case.n), np.nan, np.float32)
    chain[1, 128](case, np.ascontiguousarray(a_h), np.ascontiguousarray(b_h.T),
                  np.ascontiguousarray(c_h.T), d, case.reps)
    s = (a @ b).astype(np.float32)                      # the f32 accumulator
    p, _ = _values(case.dtype, s)                       # rounded once, to nearest even
    return d, case.reps * (p @ c)


@pytest.mark.parametrize("case", [Chain(), Chain(k=32, m=64, n=32, dtype=ws.Float16),
                                  Chain(packed=False), Chain(m=32, n=8, reps=3)], ids=repr)
def test_chain_matches_numpy(case):
    d, want = run_chain(case)
    np.testing.assert_allclose(d, want, rtol=1e-5, atol=1e-4)


@ws.kernel
def pack_bits(x_g: ws.Tensor, out_g: ws.Tensor, back_g: ws.Tensor, bf16: ws.Static[bool]):
    """Thread t packs x[t, 0:4] into 2 registers (out[t, :]) and unpacks them (back[t, :])."""
    t = ws.arch.thread_idx()[0]
    frag = ws.wgmma.Fragment(ws.Float32, [x_g[t, j] for j in ws.static_range(4)])
    packed = frag.pack(ws.BFloat16 if bf16 else ws.Float16)
    for i in ws.static_range(2):
        out_g[t, i] = packed.registers[i]
    back = packed.unpack()
    for j in ws.static_range(4):
        back_g[t, j] = ws.Float32(back[j])


@pytest.mark.parametrize("bf16", [True, False])
def test_pack_register_bits_match_numpy(bf16):
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((32, 4)) * 100).astype(np.float32)
    x[0, :] = [1.0 + 2 ** -8, 1.0 + 3 * 2 ** -8, -0.0, np.inf]     # ties to even, signs, inf
    out = np.zeros((32, 2), np.uint32)
    back = np.zeros((32, 4), np.float32)
    pack_bits[1, 32](x, out, back, bf16)
    bits = (bf16_bits_rne(x) if bf16 else x.astype(np.float16).view(np.uint16)).astype(np.uint32)
    np.testing.assert_array_equal(out, bits[:, 0::2] | (bits[:, 1::2] << 16))
    rounded = bf16_to_f64(bits.astype(np.uint16)) if bf16 else x.astype(np.float16)
    np.testing.assert_array_equal(back, np.asarray(rounded, np.float32))


def _compiled(case):
    t = ws.Tensor[case.dtype, 2]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ws.RecompileWarning)
        return ws.compile(chain, case, t, t, t, ws.Tensor[ws.Float32, 2], ws.Int32, block=128)


_MOV_PACK = re.compile(r"mov\.b32\s+%r\d+,\s*\{%rs")


def test_packed_ptx_converts_pairs_and_never_repacks(ptxas_path):
    ck = _compiled(Chain(m=64, n=16))
    ptx = ck.ptx
    # 64 columns of P: 16 registers per thread, one cvt.rn.bf16x2.f32 each
    assert ptx.count("cvt.rn.bf16x2.f32") == 16
    assert not _MOV_PACK.search(ptx)
    assert "cvt.rn.bf16.f32" not in ptx
    assert "C7519" not in ck.ptxas_log and "C7517" not in ck.ptxas_log, ck.ptxas_log
    old = _compiled(Chain(m=64, n=16, packed=False)).ptx
    assert _MOV_PACK.search(old)            # the 16-bit path packs with mov.b32 {%rs, %rs}


def test_packed_sass_has_no_halfword_swaps(ptxas_path):
    ck = _compiled(Chain(m=64, n=16, reps=2))
    sass = ck.sass
    if sass is None:
        pytest.skip("nvdisasm is not installed")
    assert len(re.findall(r"\bF2FP\.BF16\.F32\.PACK_AB\b", sass)) == 16
    assert not re.search(r"\bPRMT\b.*0x5432", sass)
