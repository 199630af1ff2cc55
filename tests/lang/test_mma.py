"""ws.mma in the simulator: mma.sync for each shape and type against numpy, a K loop, ldmatrix
with and without .trans feeding mma.sync (a 16 x 8 x K GEMM tile), stmatrix, the fragment
coordinate helpers against the PTX ISA's formulas, and the errors. The kernels are module-level
so tests/lang/test_mma_gpu.py runs the same ones on the GPU."""
import inspect
import traceback

import numpy as np
import pytest

import warpstage as ws
from dtypes_helper import cast, numpy_dtype, to_float64

try:                    # only the GPU tests (tests/lang/test_mma_gpu.py) and torch interop need it
    import torch
except ImportError:
    torch = None

pytestmark = pytest.mark.filterwarnings("ignore::warpstage.RecompileWarning")

TORCH = {} if torch is None else {
    "f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32, "s8": torch.int8,
    "u8": torch.uint8, "s32": torch.int32}
# (shape, A/B type, C/D type): the combinations ws.mma supports
COMBOS = [("m16n8k16", "bf16", "f32"), ("m16n8k16", "f16", "f32"), ("m16n8k16", "f16", "f16"),
          ("m16n8k8", "bf16", "f32"), ("m16n8k8", "f16", "f32"), ("m16n8k8", "f16", "f16"),
          ("m16n8k8", "f32", "f32"), ("m16n8k32", "s8", "s32"), ("m16n8k32", "u8", "s32")]
K_OF = {"m16n8k8": 8, "m16n8k16": 16, "m16n8k32": 32}


def no_compiler_frames(exc):
    frames = traceback.extract_tb(exc.__traceback__)
    return not any("/warpstage/frontend/" in f.filename or "/warpstage/lang/" in f.filename
                   for f in frames)


def operands(shape, ab, acc, k_tiles=1, seed=0, device=None, small=True):
    """A (16 x K*k_tiles), B (K*k_tiles x 8), C (16 x 8) as numpy arrays (bf16: ml_dtypes) or,
    with ``device`` ('cpu', 'cuda'), as torch tensors there; and their float64 / int64 numpy
    copies. ``small``: integers in [-4, 4] (exact in every type, sums exact)."""
    rng = np.random.default_rng(seed)
    k = K_OF[shape] * k_tiles
    if ab in ("s8", "u8"):
        lo, hi = (-128, 128) if ab == "s8" else (0, 256)
        a, b = rng.integers(lo, hi, (16, k)), rng.integers(lo, hi, (k, 8))
        c = rng.integers(-2**20, 2**20, (16, 8))
    elif small:
        a, b = rng.integers(-4, 5, (16, k)), rng.integers(-4, 5, (k, 8))
        c = rng.integers(-8, 9, (16, 8))
    else:
        a, b, c = rng.standard_normal((16, k)), rng.standard_normal((k, 8)), rng.standard_normal((16, 8))
    if device is None:
        a_h, b_h, c_h = cast(a, ab), cast(b, ab), cast(c, acc)
        to_np = (lambda x: x.astype(np.int64)) if acc == "s32" else to_float64
    else:                # torch rounds (the GPU machine may lack ml_dtypes)
        a_h, b_h = (torch.from_numpy(np.asarray(x)).to(TORCH[ab]) for x in (a, b))
        c_h = torch.from_numpy(np.asarray(c)).to(TORCH[acc])
        to_np = (lambda t: t.to(torch.int64).numpy()) if acc == "s32" else to_float64
    if ab == "f32":      # tf32: the inputs the tensor core reads (low 13 mantissa bits dropped)
        a_h, b_h = ((np.asarray(x).view(np.uint32) & 0xFFFFE000).view(np.float32)
                    for x in (a_h, b_h))
        if device is not None:
            a_h, b_h = torch.from_numpy(a_h), torch.from_numpy(b_h)
    copies = tuple(to_np(x) for x in (a_h, b_h, c_h))
    if device is not None:
        a_h, b_h, c_h = (t.to(device) for t in (a_h, b_h, c_h))
    return (a_h, b_h, c_h), copies


def reference(shape, ab, acc, a, b, c):
    d = a @ b + c
    if acc == "s32":
        return ((d + 2**31) % 2**32) - 2**31
    return d


# -- kernels -------------------------------------------------------------------------------------
@ws.kernel
def gemm_fragments(a: ws.Tensor, b: ws.Tensor, c: ws.Tensor, d: ws.Tensor,
                   shape: ws.Static[str], k_tiles: ws.Int32):
    """D = A @ B + C for one 16 x 8 tile, K = k_tiles * the shape's k, fragments loaded from
    global memory by the coordinate helpers; the accumulator is carried by a dynamic loop."""
    kk = K_OF[shape]
    acc = ws.mma.load_fragment(c, "c", shape)
    for kt in range(k_tiles):
        fa = ws.mma.load_fragment(a, "a", shape, col0=kt * kk)
        fb = ws.mma.load_fragment(b, "b", shape, row0=kt * kk)
        acc = ws.mma.mma_sync(fa, fb, acc)
    ws.mma.store_fragment(d, acc, shape)


@ws.kernel
def gemm_ldmatrix(a: ws.Tensor, b: ws.Tensor, d: ws.Tensor, K: ws.Static[int],
                  a_km: ws.Static[bool], b_nk: ws.Static[bool]):
    """D = A @ B for a 16 x 8 x K bf16 tile: A and B staged in shared memory with plain loads,
    fragments loaded by ldmatrix. ``a``: A (16 x K), or A^T (K x 16) with ``a_km`` (ldmatrix
    .trans); ``b``: B (K x 8) (ldmatrix .trans), or B^T (8 x K) with ``b_nk`` (no .trans)."""
    lane = ws.arch.lane_idx()
    a_shape = (K, 16) if a_km else (16, K)
    b_shape = (8, K) if b_nk else (K, 8)
    sa = ws.smem.allocate(ws.smem.Array[ws.BFloat16, a_shape])
    sb = ws.smem.allocate(ws.smem.Array[ws.BFloat16, b_shape])
    for i in range(lane, 16 * K, 32):
        sa[i // a_shape[1], i % a_shape[1]] = a[i // a_shape[1], i % a_shape[1]]
    for i in range(lane, 8 * K, 32):
        sb[i // b_shape[1], i % b_shape[1]] = b[i // b_shape[1], i % b_shape[1]]
    ws.arch.sync_warp()
    acc = ws.mma.accumulator()
    for kt in ws.static_range(K // 16):
        k0 = kt * 16
        if a_km:    # matrices (k 0-7, m 0-7), (k 0-7, m 8-15), (k 8-15, m 0-7), (k 8-15, m 8-15)
            row = k0 + lane % 8 + 8 * (lane // 16)
            fa = ws.mma.ldmatrix(sa[row].ptr + 8 * (lane // 8 % 2), 4, trans=True)
        else:       # lanes 0-15: rows 0-15 at column k0; lanes 16-31: the same rows at k0 + 8
            fa = ws.mma.ldmatrix(sa[lane % 16].ptr + (k0 + 8 * (lane // 16)), 4)
        if b_nk:    # B^T rows n = 0..7 at columns k0 and k0 + 8
            fb = ws.mma.ldmatrix(sb[lane % 8].ptr + (k0 + 8 * (lane // 8 % 2)), 2)
        else:       # B rows k0..k0+15, transposed on the way
            fb = ws.mma.ldmatrix(sb[k0 + lane % 16].ptr, 2, trans=True)
        acc = ws.mma.mma_sync(fa, fb, acc)
    ws.mma.store_fragment(d, acc)


@ws.kernel
def mma_stmatrix(a: ws.Tensor, b: ws.Tensor, out: ws.Tensor, trans: ws.Static[bool]):
    """out = (A @ B) as bf16 (16 x 8), or its transpose (8 x 16) with ``trans``, written through
    shared memory by stmatrix .x2."""
    lane = ws.arch.lane_idx()
    shape = (8, 16) if trans else (16, 8)
    s = ws.smem.allocate(ws.smem.Array[ws.BFloat16, shape])
    acc = ws.mma.mma_sync(ws.mma.load_fragment(a, "a"), ws.mma.load_fragment(b, "b"),
                          ws.mma.accumulator())
    frag = acc.to(ws.BFloat16)
    if trans:       # D rows 0-7 -> D^T columns 0-7, D rows 8-15 -> D^T columns 8-15
        ws.mma.stmatrix(s[lane % 8].ptr + 8 * (lane // 8 % 2), frag, trans=True)
    else:
        ws.mma.stmatrix(s[lane % 16].ptr, frag)
    ws.arch.sync_warp()
    for i in range(lane, 128, 32):
        out[i // shape[1], i % shape[1]] = s[i // shape[1], i % shape[1]]


@ws.kernel
def ldmatrix_raw(src: ws.Tensor, out: ws.Tensor, num: ws.Static[int], trans: ws.Static[bool]):
    """out[lane, e] = element e of ldmatrix .x<num> over src's 8*num rows (lane l -> row l)."""
    lane = ws.arch.lane_idx()
    s = ws.smem.allocate(ws.smem.Array[ws.Float16, (8 * num, 8)])
    for i in range(lane, 64 * num, 32):
        s[i // 8, i % 8] = src[i // 8, i % 8]
    ws.arch.sync_warp()
    frag = ws.mma.ldmatrix(s[lane % (8 * num)].ptr, num, trans)
    for e in ws.static_range(2 * num):
        out[lane, e] = frag[e]


def ldmatrix_expected(src, num, trans):
    """What the PTX ISA's ldmatrix description gives: lane l, matrix m, element j holds row
    l // 4, column 2 (l % 4) + j of matrix m (rows 8m..8m+7 of src), or of its transpose."""
    out = np.zeros((32, 2 * num), src.dtype)
    for lane in range(32):
        for m in range(num):
            mat = src[8 * m:8 * m + 8]
            mat = mat.T if trans else mat
            for j in range(2):
                out[lane, 2 * m + j] = mat[lane // 4, 2 * (lane % 4) + j]
    return out


# -- numerics ----------------------------------------------------------------------------------
@pytest.mark.parametrize("shape,ab,acc", COMBOS)
def test_mma_sync_each_shape_and_type_matches_numpy(shape, ab, acc):
    (a, b, c), (an, bn, cn) = operands(shape, ab, acc)
    d = np.zeros((16, 8), numpy_dtype(acc))
    gemm_fragments[1, 32](a, b, c, d, shape, 1)
    got = d.astype(np.int64 if acc == "s32" else np.float64)
    np.testing.assert_array_equal(got, reference(shape, ab, acc, an, bn, cn))


@pytest.mark.parametrize("shape,ab,acc", [("m16n8k16", "bf16", "f32"), ("m16n8k8", "f16", "f16"),
                                          ("m16n8k8", "f32", "f32"), ("m16n8k32", "s8", "s32")])
def test_accumulate_over_a_k_loop(shape, ab, acc):
    (a, b, c), (an, bn, cn) = operands(shape, ab, acc, k_tiles=5, seed=1)
    d = np.zeros((16, 8), numpy_dtype(acc))
    gemm_fragments[1, 32](a, b, c, d, shape, 5)
    got = d.astype(np.int64 if acc == "s32" else np.float64)
    np.testing.assert_array_equal(got, reference(shape, ab, acc, an, bn, cn))


def test_random_bf16_inputs_round_once_to_f32():
    (a, b, c), (an, bn, cn) = operands("m16n8k16", "bf16", "f32", k_tiles=4, seed=2, small=False)
    d = np.zeros((16, 8), np.float32)
    gemm_fragments[1, 32](a, b, c, d, "m16n8k16", 4)
    want = (an @ bn + cn).astype(np.float32)          # exact products, one rounding
    np.testing.assert_allclose(d, want, rtol=1e-6, atol=1e-6)


def test_int8_accumulator_wraps_at_32_bits():
    a = np.full((16, 32), 127, np.int8)
    b = np.full((32, 8), 127, np.int8)
    c = np.full((16, 8), 2**31 - 100, np.int32)
    d = np.zeros((16, 8), np.int32)
    gemm_fragments[1, 32](a, b, c, d, "m16n8k32", 1)
    assert set(d.flatten().tolist()) == {(2**31 - 100 + 32 * 127 * 127) - 2**32}


@pytest.mark.parametrize("a_km", [False, True])
@pytest.mark.parametrize("b_nk", [False, True])
def test_ldmatrix_feeding_mma_sync_gemm_tile(a_km, b_nk):
    (a, b, _), (an, bn, _) = operands("m16n8k16", "bf16", "f32", k_tiles=3, seed=3)
    d = np.zeros((16, 8), np.float32)
    gemm_ldmatrix[1, 32](np.ascontiguousarray(a.T) if a_km else a,
                         np.ascontiguousarray(b.T) if b_nk else b, d, 48, a_km, b_nk)
    np.testing.assert_array_equal(d.astype(np.float64), an @ bn)


@ws.kernel
def stmatrix_x4(out: ws.Tensor):
    """Four 8x8 matrices (a 16 x 16 tile) by one stmatrix .x4: lane l holds elements
    (l // 4, 2 (l % 4) + j) of each matrix m, with the value 64 m + 8 (l // 4) + 2 (l % 4) + j
    (exact in bf16);
    lanes 8m..8m+7 give matrix m's row addresses (matrix m at rows 8 (m % 2), columns
    8 (m // 2)). 64 row halves of 8 bytes: more addresses than a warp has lanes."""
    lane = ws.arch.lane_idx()
    s = ws.smem.allocate(ws.smem.Array[ws.BFloat16, (16, 16)])
    vals = [ws.Float32(64 * m + 8 * (lane // 4) + 2 * (lane % 4) + j)
            for m in range(4) for j in range(2)]
    mat = lane // 8
    ws.mma.stmatrix(s[8 * (mat % 2) + lane % 8].ptr + 8 * (mat // 2),
                    ws.mma.Fragment(ws.Float32, vals).to(ws.BFloat16))
    ws.arch.sync_warp()
    for i in range(lane, 256, 32):
        out[i // 16, i % 16] = s[i // 16, i % 16]


def test_stmatrix_x4_writes_four_matrices():
    out = np.zeros((16, 16), numpy_dtype("bf16"))
    stmatrix_x4[1, 32](out)
    r, c = np.meshgrid(np.arange(16), np.arange(16), indexing="ij")
    m = (r // 8) + 2 * (c // 8)
    np.testing.assert_array_equal(to_float64(out), 64 * m + 8 * (r % 8) + c % 8)


@pytest.mark.parametrize("trans", [False, True])
def test_stmatrix_writes_the_accumulator_tile(trans):
    (a, b, _), (an, bn, _) = operands("m16n8k16", "bf16", "f32", seed=4)
    out = np.zeros((8, 16) if trans else (16, 8), numpy_dtype("bf16"))
    mma_stmatrix[1, 32](a, b, out, trans)
    want = an @ bn
    np.testing.assert_array_equal(to_float64(out), want.T if trans else want)


def test_torch_cpu_tensors_in_the_simulator():
    """torch interop: CPU torch tensors (bf16 in, f32 out) run in the simulator like numpy."""
    if torch is None:
        pytest.skip("torch interop: torch is not installed")
    (a, b, c), (an, bn, cn) = operands("m16n8k16", "bf16", "f32", k_tiles=2, seed=8,
                                       device="cpu")
    d = torch.zeros(16, 8)
    gemm_fragments[1, 32](a, b, c, d, "m16n8k16", 2)
    np.testing.assert_array_equal(d.double().numpy(), an @ bn + cn)


@pytest.mark.parametrize("num", [1, 2, 4])
@pytest.mark.parametrize("trans", [False, True])
def test_ldmatrix_layout(num, trans):
    src = np.arange(64 * num, dtype=np.float16).reshape(8 * num, 8)
    out = np.zeros((32, 2 * num), np.float16)
    ldmatrix_raw[1, 32](src, out, num, trans)
    np.testing.assert_array_equal(out, ldmatrix_expected(src, num, trans))


# -- the coordinate helpers against the PTX ISA's formulas ---------------------------------------
def test_coords_follow_the_ptx_fragment_formulas():
    for lane in range(32):
        g, t = lane // 4, lane % 4
        # m16n8k16 .bf16 A: a0 a1 (g, 2t..), a2 a3 (g+8, 2t..), a4 a5 (g, 2t+8..), a6 a7 (g+8, 2t+8..)
        assert ws.mma.a_coords("m16n8k16", ws.BFloat16, lane) == [
            (g, 2 * t), (g, 2 * t + 1), (g + 8, 2 * t), (g + 8, 2 * t + 1),
            (g, 2 * t + 8), (g, 2 * t + 9), (g + 8, 2 * t + 8), (g + 8, 2 * t + 9)]
        assert ws.mma.b_coords("m16n8k16", ws.BFloat16, lane) == [
            (2 * t, g), (2 * t + 1, g), (2 * t + 8, g), (2 * t + 9, g)]
        assert ws.mma.c_coords("m16n8k16", lane) == [
            (g, 2 * t), (g, 2 * t + 1), (g + 8, 2 * t), (g + 8, 2 * t + 1)]
        assert ws.mma.a_coords("m16n8k8", ws.Float16, lane) == [
            (g, 2 * t), (g, 2 * t + 1), (g + 8, 2 * t), (g + 8, 2 * t + 1)]
        assert ws.mma.b_coords("m16n8k8", ws.Float16, lane) == [(2 * t, g), (2 * t + 1, g)]
        # .tf32: a0 (g, t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4); b0 (t, g), b1 (t+4, g)
        assert ws.mma.a_coords("m16n8k8", ws.Float32, lane) == [
            (g, t), (g + 8, t), (g, t + 4), (g + 8, t + 4)]
        assert ws.mma.b_coords("m16n8k8", ws.Float32, lane) == [(t, g), (t + 4, g)]
        # .s8 m16n8k32: a0..a3 (g, 4t..4t+3), a4..a7 (g+8, ..), a8..a11 (g, 4t+16..), a12.. (g+8, ..)
        want_a = [(g + 8 * (i // 4 % 2), 4 * t + i % 4 + 16 * (i // 8)) for i in range(16)]
        assert ws.mma.a_coords("m16n8k32", ws.Int8, lane) == want_a
        assert ws.mma.b_coords("m16n8k32", ws.Int8, lane) == [
            (4 * t + i % 4 + 16 * (i // 4), g) for i in range(8)]


@pytest.mark.parametrize("shape,dtype", [("m16n8k16", ws.BFloat16), ("m16n8k8", ws.Float16),
                                         ("m16n8k8", ws.Float32), ("m16n8k32", ws.Uint8)])
def test_every_matrix_element_is_held_by_exactly_one_lane(shape, dtype):
    m, n, k = 16, 8, K_OF[shape]
    for which, rows, cols in (("a", m, k), ("b", k, n), ("c", m, n)):
        fn = {"a": ws.mma.a_coords, "b": ws.mma.b_coords}.get(which)
        seen = [rc for lane in range(32)
                for rc in (fn(shape, dtype, lane) if fn else ws.mma.c_coords(shape, lane))]
        assert sorted(seen) == [(r, c) for r in range(rows) for c in range(cols)]


def test_fragment_sizes():
    assert ws.mma.fragment_sizes() == (8, 4, 4)
    assert ws.mma.fragment_sizes("m16n8k8", ws.Float32) == (4, 2, 4)
    assert ws.mma.fragment_sizes("m16n8k32") == (16, 8, 4)
    assert ws.mma.Fragment is ws.lang.fragment.Fragment


# -- errors --------------------------------------------------------------------------------------
def test_mma_in_divergent_code_is_a_barrier_error_at_the_line():
    @ws.kernel
    def bad(a: ws.Tensor, b: ws.Tensor, d: ws.Tensor):
        acc = ws.mma.accumulator()
        if ws.arch.lane_idx() < 16:
            acc = ws.mma.mma_sync(ws.mma.load_fragment(a, "a"), ws.mma.load_fragment(b, "b"), acc)
        ws.mma.store_fragment(d, acc)

    (a, b, _), _ = operands("m16n8k16", "bf16", "f32")
    with pytest.raises(ws.BarrierError) as ei:
        bad[1, 32](a, b, np.zeros((16, 8), np.float32))
    msg = str(ei.value)
    line = inspect.getsourcelines(test_mma_in_divergent_code_is_a_barrier_error_at_the_line)[1] + 5
    assert f"mma.sync.aligned.m16n8k16 in divergent code at {__file__}:{line}" in msg
    assert "16 of 32 lanes" in msg and ei.value.where == f"{__file__}:{line}"


def test_compiles_to_ldmatrix_and_mma_sync_ptx_and_a_cubin(ptxas_path):
    bf = ws.Tensor[ws.BFloat16, 2]
    ck = ws.compile(gemm_ldmatrix, bf, bf, ws.Tensor[ws.Float32, 2], 32, False, False, block=32)
    ptx = ck.ptx
    assert ptx.count("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32") == 2     # K = 32
    assert "ldmatrix.sync.aligned.m8n8.x4.shared.b16" in ptx
    assert "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16" in ptx
    assert ck.cubin[:4] == b"\x7fELF"
    ck = ws.compile(mma_stmatrix, bf, bf, bf, True, block=32)
    assert "stmatrix.sync.aligned.m8n8.x2.trans.shared.b16" in ck.ptx and ck.cubin[:4] == b"\x7fELF"


def test_mma_in_a_partial_warp_is_an_error():
    (a, b, c), _ = operands("m16n8k16", "bf16", "f32")
    with pytest.raises(ws.BarrierError, match="only 16 threads"):
        gemm_fragments[1, 16](a, b, c, np.zeros((16, 8), np.float32), "m16n8k16", 1)


def test_ldmatrix_misaligned_row_address():
    @ws.kernel
    def bad(out: ws.Tensor):
        s = ws.smem.allocate(ws.smem.Array[ws.Float16, (32, 16)])
        frag = ws.mma.ldmatrix(s[ws.arch.lane_idx()].ptr + 4, 4)     # 8 bytes into the row
        out[ws.arch.lane_idx()] = frag[0]

    with pytest.raises(ws.SimulatorError) as ei:
        bad[1, 32](np.zeros(32, np.float16))
    msg = str(ei.value)
    assert "ldmatrix.sync.aligned.m8n8.x4 at" in msg and "not 16-byte aligned" in msg
    assert "lane 0" in msg and "test_mma.py" in msg and "Fix:" in msg


def test_ldmatrix_row_outside_shared_memory():
    @ws.kernel
    def bad(out: ws.Tensor):
        s = ws.smem.allocate(ws.smem.Array[ws.Float16, (16, 8)])
        frag = ws.mma.ldmatrix(s[ws.arch.lane_idx()].ptr, 4)        # rows 16..31 do not exist
        out[ws.arch.lane_idx()] = frag[0]

    with pytest.raises(ws.OutOfBoundsError) as ei:
        bad[1, 32](np.zeros(32, np.float16))
    msg = str(ei.value)
    assert "ldmatrix.sync.aligned.m8n8.x4 row" in msg and "lane 16" in msg


def test_ldmatrix_x1_reads_only_the_first_eight_lanes_addresses():
    @ws.kernel
    def k(out: ws.Tensor):
        lane = ws.arch.lane_idx()
        s = ws.smem.allocate(ws.smem.Array[ws.Float16, (8, 8)])
        for i in range(lane, 64, 32):
            s[i // 8, i % 8] = ws.Float16(i)
        ws.arch.sync_warp()
        frag = ws.mma.ldmatrix(s[lane].ptr, 1)      # lanes 8..31 point past the tile: unused
        out[lane] = frag[1]

    out = np.zeros(32, np.float16)
    k[1, 32](out)
    lanes = np.arange(32)
    assert out.tolist() == (lanes // 4 * 8 + 2 * (lanes % 4) + 1).tolist()


def trace_error(body, *args):
    """Run a one-warp kernel whose body is ``body`` and return the error it raised."""
    with pytest.raises(ws.WarpstageError) as ei:
        ws.kernel(body)[1, 32](*args)
    assert no_compiler_frames(ei.value)
    return ei.value


def test_operand_errors_name_the_call_expected_and_fix():
    z = np.zeros((16, 16), numpy_dtype("bf16"))

    def wrong_length(a: ws.Tensor):
        ws.mma.mma_sync(ws.mma.Fragment.filled(ws.BFloat16, 6, 0.0),
                        ws.mma.Fragment.filled(ws.BFloat16, 4, 0.0), ws.mma.accumulator())

    e = trace_error(wrong_length, z)
    assert isinstance(e, ws.OperandError)
    assert "ws.mma.mma_sync()'s A fragment: expected 8 elements (m16n8k16) or 4 elements " \
           "(m16n8k8), got '6 x BFloat16'" in str(e) and "Fix:" in str(e)
    assert "wrong_length" not in str(e) and "ws.mma.mma_sync(" in str(e)

    def mixed(a: ws.Tensor):
        ws.mma.mma_sync(ws.mma.Fragment.filled(ws.BFloat16, 8, 0.0),
                        ws.mma.Fragment.filled(ws.Float16, 4, 0.0), ws.mma.accumulator())

    assert "A/B dtypes: expected one of Float16, BFloat16" in str(trace_error(mixed, z))

    def int_acc(a: ws.Tensor):
        ws.mma.mma_sync(ws.mma.Fragment.filled(ws.BFloat16, 8, 0.0),
                        ws.mma.Fragment.filled(ws.BFloat16, 4, 0.0),
                        ws.mma.accumulator(dtype=ws.Int32))

    assert "C dtype for m16n8k16.bf16: expected Float32" in str(trace_error(int_acc, z))

    def wrong_b(a: ws.Tensor):
        ws.mma.mma_sync(ws.mma.Fragment.filled(ws.Float16, 8, 0.0),
                        ws.mma.Fragment.filled(ws.Float16, 2, 0.0), ws.mma.accumulator())

    assert "B fragment for m16n8k16.f16: expected 4 elements, got '2 elements'" \
        in str(trace_error(wrong_b, z))

    def global_ptr(a: ws.Tensor):
        ws.mma.ldmatrix(a.ptr, 4)

    assert "ws.mma.ldmatrix()'s row address: expected a shared pointer" \
        in str(trace_error(global_ptr, z))

    def f32_smem(a: ws.Tensor):
        s = ws.smem.allocate(ws.smem.Array[ws.Float32, (8, 8)])
        ws.mma.ldmatrix(s.ptr, 1)

    assert "a shared pointer to a 16-bit type" in str(trace_error(f32_smem, z))

    def bad_num(a: ws.Tensor):
        s = ws.smem.allocate(ws.smem.Array[ws.Float16, (8, 8)])
        ws.mma.ldmatrix(s.ptr, 3)

    assert "ws.mma.ldmatrix()'s num: expected 1, 2 or 4 (8x8 matrices), got 3" \
        in str(trace_error(bad_num, z))

    def st_dtype(a: ws.Tensor):
        s = ws.smem.allocate(ws.smem.Array[ws.Float16, (16, 8)])
        ws.mma.stmatrix(s.ptr, ws.mma.accumulator().to(ws.BFloat16))

    assert "expected Float16 elements (the pointer's type), got 'BFloat16 elements'" \
        in str(trace_error(st_dtype, z))

    def bad_shape(a: ws.Tensor):
        ws.mma.accumulator("m16n16k16")

    assert "shape: expected one of m16n8k8, m16n8k16, m16n8k32" in str(trace_error(bad_shape, z))


def test_coords_outside_a_kernel_need_a_lane():
    with pytest.raises(ws.OperandError, match="pass lane="):
        ws.mma.c_coords()
    with pytest.raises(ws.OperandError, match=r"a lane in \[0, 32\)"):
        ws.mma.a_coords(lane=32)


@ws.kernel
def fragment_param(out: ws.Tensor, f):
    out[0] = f[0]


def test_the_fragment_class_as_a_parameter_is_an_argument_error(sim_target):
    def launch():
        fragment_param[1, 32](np.zeros(4, np.float32), ws.mma.Fragment)
    for entry in (lambda: ws.compile(fragment_param, ws.Tensor[ws.Float32, 1], ws.mma.Fragment),
                  lambda: ws.explain(fragment_param, ws.Tensor[ws.Float32, 1], ws.mma.Fragment),
                  launch):
        with pytest.raises(ws.ArgumentError) as ei:
            entry()
        msg = str(ei.value)
        assert "parameter 'f': got the class ws.mma.Fragment" in msg
        assert "not a kernel parameter" in msg and "ws.mma.Fragment.filled(" in msg
