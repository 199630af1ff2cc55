"""ws.wgmma from kernel code in the simulator: m64nNk16 products against numpy for several N,
both dtypes, A from shared memory and from registers, every swizzle mode, K-major and MN-major
tiles, scale-d static and dynamic, K loops (static and dynamic) with commit/wait. The GPU tests
(tests/lang/test_wgmma_gpu.py) run these same kernels on the H200."""
import numpy as np
import pytest

import warpstage as ws
from warpstage.lang.wgmma import TileLayout

from example_loader import load_example

pytestmark = pytest.mark.filterwarnings("ignore::warpstage.RecompileWarning")


class Case:
    """A static configuration of ``wgmma_tile``: D (64 x n) = A (64 x k) @ B (k x n) (+ C).

    ``a_major``/``b_major``: "K" stores A as (64, k) and B as (n, k) (K contiguous); "MN"
    stores A^T (k, 64) and B (k, n). ``a_regs`` loads A into register fragments. ``scale_d``:
    True (D = A@B + C), False (D = A@B) or "dynamic" (the kernel's ``accumulate`` flag).
    ``loop``: "static" (all k16 steps in one group) or "dynamic" (a run-time loop, one
    fence/mma/commit/wait per step). ``acc``: the accumulator dtype (Float32 or Float16)."""

    def __init__(self, n=64, k=16, dtype=ws.BFloat16, a_major="K", b_major="K", swizzle_a=128,
                 swizzle_b=128, a_regs=False, scale_d=True, loop="static", scale_a=1, scale_b=1,
                 acc=ws.Float32):
        self.n, self.k, self.dtype, self.acc = n, k, dtype, acc
        self.a_major, self.b_major, self.a_regs = a_major, b_major, a_regs
        self.scale_d, self.loop, self.scale_a, self.scale_b = scale_d, loop, scale_a, scale_b
        self.la = TileLayout(*((64, k) if a_major == "K" else (k, 64)), dtype, swizzle_a)
        self.lb = TileLayout(*((n, k) if b_major == "K" else (k, n)), dtype, swizzle_b)
        self.Storage = ws.smem.make_storage("WgmmaTiles", a=self.la.spec, b=self.lb.spec)

    def __repr__(self):
        return (f"Case(n={self.n}, k={self.k}, {self.dtype.__name__}, A {self.a_major}"
                f"{'/regs' if self.a_regs else ''} sw{self.la.swizzle}, B {self.b_major} "
                f"sw{self.lb.swizzle}, scale_d={self.scale_d}, {self.loop}"
                + (f", acc {self.acc.__name__})" if self.acc is not ws.Float32 else ")"))


@ws.jit
def stage(tile, layout: ws.Static[TileLayout], g):
    """cp.async the (rows, cols) global matrix ``g`` into ``tile`` in ``layout``: one 16-byte
    chunk (8 elements of one row of a 16-bit dtype, 16 of fp8) per copy; the swizzle permutes
    whole chunks."""
    tid = ws.arch.thread_idx()[0]
    per = 16 // layout.eb
    per_row = layout.cols // per
    chunks = layout.rows * per_row
    for it in ws.static_range((chunks + 127) // 128):
        q = tid + it * 128
        if q < chunks:
            r = q // per_row
            c = (q % per_row) * per
            ws.copy.cp_async(tile.ptr + layout.offset(r, c), g.ptr + (r * layout.cols + c))


def stage_tiles(case, a_g, b_g):
    """(Traced inline, a plain function.) The case's smem storage with A and B staged (``stage``), waited for, made visible to
    the async proxy (wgmma) and synchronized across the CTA."""
    return staged(case.Storage, [("a", case.la, a_g), ("b", case.lb, b_g)])


def staged(storage, tiles):
    """(Traced inline.) ``storage`` allocated, each (field, layout, global matrix) of ``tiles``
    staged into its field (``stage``), waited for, fenced for the async proxy and synchronized."""
    st = ws.smem.allocate(storage)
    for name, layout, g in tiles:
        stage(getattr(st, name), layout, g)
    ws.copy.commit_group()
    ws.copy.wait_group(0)
    ws.arch.fence_proxy_async()
    ws.arch.sync_threads()
    return st


@ws.jit
def a_fragment(case: ws.Static[Case], tile, kk):
    """This thread's A fragment of k16 step ``kk`` (static or dynamic), read from ``tile``."""
    vals = []
    for r, c in ws.wgmma.a_fragment_coords():
        vals.append(tile.ptr[case.la.offset(r, c + kk * 16)])
    return ws.wgmma.Fragment(case.dtype, vals)


@ws.kernel
def wgmma_tile(case: ws.Static[Case], a_g: ws.Tensor, b_g: ws.Tensor, c_g: ws.Tensor,
               d_g: ws.Tensor, accumulate: ws.Int32):
    st = stage_tiles(case, a_g, b_g)
    a = ws.wgmma.tile_descriptor(st.a, major=case.a_major, swizzle=case.la.swizzle)
    b = ws.wgmma.tile_descriptor(st.b, major=case.b_major, swizzle=case.lb.swizzle)
    coords = ws.wgmma.accumulator_coords(case.n)
    acc = ws.wgmma.zeros(case.n, case.acc)
    for i in ws.static_range(case.n // 2):
        acc[i] = c_g[coords[i][0], coords[i][1]]
    scale_d = (accumulate != 0) if case.scale_d == "dynamic" else case.scale_d
    steps = case.k // 16
    if case.loop == "static":
        if case.a_regs:
            frags = [a_fragment(case, st.a, kk) for kk in ws.static_range(steps)]
            acc, *frags = ws.wgmma.fence(acc, *frags)
        else:
            acc = ws.wgmma.fence(acc)
        for kk in ws.static_range(steps):
            a_op = frags[kk] if case.a_regs else a.k_step(kk)
            acc = ws.wgmma.mma(a_op, b.k_step(kk), acc, scale_d=scale_d if kk == 0 else True,
                               scale_a=case.scale_a, scale_b=case.scale_b)
        ws.wgmma.commit_group()
        acc = ws.wgmma.wait_group(0, acc)
    else:
        for kk in range(steps):
            if case.a_regs:
                acc, frag = ws.wgmma.fence(acc, a_fragment(case, st.a, kk))
                a_op = frag
            else:
                acc = ws.wgmma.fence(acc)
                a_op = a.k_step(kk)
            acc = ws.wgmma.mma(a_op, b.k_step(kk), acc, scale_d=(kk > 0) | scale_d,
                               scale_a=case.scale_a, scale_b=case.scale_b)
            ws.wgmma.commit_group()
            acc = ws.wgmma.wait_group(0, acc)
    for i in ws.static_range(case.n // 2):
        d_g[coords[i][0], coords[i][1]] = acc[i]


# -- host side ----------------------------------------------------------------------------------
def bf16_bits(x: np.ndarray) -> np.ndarray:
    """float32 values (exactly representable in bf16) -> their bf16 bit patterns."""
    return (x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)


def make_inputs(case: Case, seed=0, integers=True):
    """(a_host, b_host, c, expected-function inputs): A (64, k), B (k, n) as float64 values
    representable in the dtype, and their host arrays in the case's storage order."""
    rng = np.random.default_rng(seed)
    if integers and case.acc is ws.Float16:     # every partial sum exact in f16 as well
        a = rng.integers(-4, 5, (64, case.k)) / 4
        b = rng.integers(-4, 5, (case.k, case.n)) / 4
        c = rng.integers(-16, 17, (64, case.n)).astype(np.float32)
    elif integers:        # small integers / 4: every product and sum is exact in f32
        a = rng.integers(-8, 9, (64, case.k)) / 4
        b = rng.integers(-8, 9, (case.k, case.n)) / 4
        c = rng.integers(-64, 65, (64, case.n)).astype(np.float32)
    else:
        a, b = rng.standard_normal((64, case.k)), rng.standard_normal((case.k, case.n))
        c = rng.standard_normal((64, case.n)).astype(np.float32)
    if case.dtype is ws.BFloat16:
        a = bf16_to_f64(bf16_bits(a.astype(np.float32)))
        b = bf16_to_f64(bf16_bits(b.astype(np.float32)))
    else:
        a, b = a.astype(np.float16).astype(np.float64), b.astype(np.float16).astype(np.float64)
    return a, b, c


def bf16_to_f64(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def host_arrays(case: Case, a, b):
    """A and B as the kernel reads them from global memory (storage order, element bits)."""
    a_st = a if case.a_major == "K" else a.T
    b_st = b.T if case.b_major == "K" else b
    conv = ((lambda x: bf16_bits(x.astype(np.float32))) if case.dtype is ws.BFloat16
            else (lambda x: x.astype(np.float16)))
    return np.ascontiguousarray(conv(a_st)), np.ascontiguousarray(conv(b_st))


def expected(case: Case, a, b, c, accumulate=1):
    d = (case.scale_a * a) @ (case.scale_b * b)
    use_c = case.scale_d is True or (case.scale_d == "dynamic" and accumulate)
    return d + c if use_c else d


def run_case(case: Case, seed=0, integers=True, accumulate=1):
    a, b, c = make_inputs(case, seed, integers)
    a_h, b_h = host_arrays(case, a, b)
    d = np.full((64, case.n), np.nan, np.float32)
    wgmma_tile[1, 128](case, a_h, b_h, c, d, accumulate)
    return d, expected(case, a, b, c, accumulate)


CASES = [
    Case(n=64, k=64),
    Case(n=8, k=16, dtype=ws.Float16, swizzle_a=32, swizzle_b=32),
    Case(n=256, k=16, swizzle_a=32, b_major="MN", swizzle_b=64),
    Case(n=24, k=64, swizzle_a=64, swizzle_b=32),
    Case(n=128, k=32, dtype=ws.Float16, swizzle_a=0, swizzle_b=0),
    Case(n=64, k=32, a_major="MN", b_major="MN"),
    Case(n=32, k=32, a_major="MN", b_major="MN", swizzle_a=0, swizzle_b=0),
    Case(n=16, k=48, a_major="MN", swizzle_a=32, swizzle_b=0),
    Case(n=64, k=64, a_regs=True),
    Case(n=40, k=16, a_regs=True, dtype=ws.Float16, swizzle_a=32, b_major="MN", swizzle_b=0),
    Case(n=64, k=64, scale_d=False),
    Case(n=64, k=64, loop="dynamic", swizzle_a=32, swizzle_b=64),
    Case(n=32, k=48, loop="dynamic", a_regs=True, swizzle_a=32, b_major="MN", swizzle_b=64),
    Case(n=64, k=64, scale_a=-1),
    Case(n=8, k=32, scale_b=-1, dtype=ws.Float16, swizzle_a=64, b_major="MN", swizzle_b=0),
    Case(n=32, k=16, dtype=ws.Float16, swizzle_a=32, swizzle_b=32, acc=ws.Float16),
    Case(n=64, k=32, dtype=ws.Float16, swizzle_a=64, b_major="MN", swizzle_b=128,
         loop="dynamic", a_regs=True, acc=ws.Float16),
]


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_wgmma_tile_matches_numpy(case):
    got, want = run_case(case)
    assert np.array_equal(got, want.astype(np.float32)), np.argwhere(got != want)[:5]


@pytest.mark.parametrize("accumulate", [0, 1])
def test_wgmma_dynamic_scale_d(accumulate):
    case = Case(n=16, k=32, scale_d="dynamic", swizzle_a=64, swizzle_b=64)
    got, want = run_case(case, accumulate=accumulate)
    assert np.array_equal(got, want.astype(np.float32))


@pytest.mark.parametrize("dtype", [ws.BFloat16, ws.Float16])
def test_wgmma_random_inputs(dtype):
    case = Case(n=128, k=64, dtype=dtype)
    got, want = run_case(case, seed=5, integers=False)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


LA2 = TileLayout(128, 64, ws.BFloat16, 128)
LB2 = TileLayout(64, 64, ws.BFloat16, 128)
TwoGroups = ws.smem.make_storage("TwoGroups", a=LA2.spec, b=LB2.spec)


@ws.kernel
def two_warpgroups(a_g: ws.Tensor, b_g: ws.Tensor, d_g: ws.Tensor):
    """256 threads: warpgroup g computes rows [64g, 64g + 64) of D (128 x 64) = A @ B^T from one
    128-row A tile (its descriptor advanced with ``at(row=64 * g)``), K = 64 in 4 k16 steps."""
    st = ws.smem.allocate(TwoGroups)
    tid = ws.arch.thread_idx()[0]
    for it in ws.static_range(4):                    # A: 1024 chunks, B: 512, 256 threads
        q = tid + it * 256
        ws.copy.cp_async(st.a.ptr + LA2.offset(q // 8, q % 8 * 8), a_g.ptr + q * 8)
        if it < 2:
            ws.copy.cp_async(st.b.ptr + LB2.offset(q // 8, q % 8 * 8), b_g.ptr + q * 8)
    ws.copy.commit_group()
    ws.copy.wait_group(0)
    ws.arch.fence_proxy_async()
    ws.arch.sync_threads()
    g = ws.arch.make_warp_uniform(ws.arch.warpgroup_idx())
    a = ws.wgmma.tile_descriptor(st.a, "K", 128).at(row=g * 64)
    b = ws.wgmma.tile_descriptor(st.b, "K", 128)
    acc = ws.wgmma.fence(ws.wgmma.zeros(64))
    for kk in ws.static_range(4):
        acc = ws.wgmma.mma(a.k_step(kk), b.k_step(kk), acc, scale_d=kk > 0)
    ws.wgmma.commit_group()
    acc = ws.wgmma.wait_group(0, acc)
    for i, (row, col) in enumerate(ws.wgmma.accumulator_coords(64)):
        d_g[g * 64 + row, col] = acc[i]


def two_warpgroup_inputs(seed=1):
    rng = np.random.default_rng(seed)
    a = rng.integers(-8, 9, (128, 64)) / 4
    b = rng.integers(-8, 9, (64, 64)) / 4
    return a, b, (a @ b.T).astype(np.float32)


def test_two_warpgroups_share_a_tile():
    a, b, want = two_warpgroup_inputs()
    d = np.full((128, 64), np.nan, np.float32)
    two_warpgroups[1, 256](bf16_bits(a), bf16_bits(b), d)
    assert np.array_equal(d, want)


@pytest.mark.parametrize("m, n, k, bn", [(128, 256, 192, 128), (64, 64, 64, 64),
                                         (64, 256, 128, 256)])
def test_gemm_example(m, n, k, bn):
    gemm = load_example("wgmma_gemm", "sim_ex_wgmma_gemm")
    rng = np.random.default_rng(m + n + k)
    a = gemm.bf16_bits(rng.standard_normal((m, k)))
    b = gemm.bf16_bits(rng.standard_normal((k, n)))
    c = np.full((m, n), np.nan, np.float32)
    gemm.launch(gemm.Gemm(bn=bn), a, b, c)
    want = bf16_to_f64(a) @ bf16_to_f64(b)
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-4)


def test_gemm_example_rejects_shapes_off_the_tile():
    gemm = load_example("wgmma_gemm", "sim_ex_wgmma_gemm")
    a, b = np.zeros((64, 100), np.uint16), np.zeros((100, 128), np.uint16)
    with pytest.raises(ValueError, match="K=100 of bk=64"):
        gemm.launch(gemm.Gemm(), a, b, np.zeros((64, 128), np.float32))
