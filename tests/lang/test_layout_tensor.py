"""ws.layout tensors in kernels, run in the simulator against numpy: gmem tiles partitioned over
threads, a swizzled smem tile, register tensors and the wgmma/mma accumulator TV layouts;
golden IR for static folding; layouts crossing @ws.jit calls, dynamic if/loops and kernel
parameters; ws.explain. tests/lang/test_layout_gpu.py runs the same kernels on the GPU."""
import re

import numpy as np
import pytest

import warpstage as ws

L = ws.layout
TILE_M, TILE_N = 32, 16
THREADS = L.make_layout((8, 4), (4, 1))             # 32 threads, row-major over an 8 x 4 grid


@ws.kernel
def scale_tiles(x: ws.Tensor, y: ws.Tensor, alpha: ws.Float32):
    """y = alpha * x for an (M, 16) row-major x, M a multiple of 32 (dynamic): one 32 x 16 tile
    per CTA, split over 32 threads by THREADS; each thread copies its 4 x 4 elements through
    registers."""
    gx, gy = L.make_tensor(x), L.make_tensor(y)
    bid, tid = ws.arch.block_idx()[0], ws.arch.thread_idx()[0]
    px = L.local_partition(L.local_tile(gx, (TILE_M, TILE_N), (bid, 0)), THREADS, tid)
    py = L.local_partition(L.local_tile(gy, (TILE_M, TILE_N), (bid, 0)), THREADS, tid)
    r = L.make_fragment_like(px)
    L.copy(px, r)
    for i in ws.static_range(L.size(r)):
        r[i] = r[i] * alpha
    L.copy(r, py)


@ws.kernel
def transpose_via_swizzled_smem(x: ws.Tensor, y: ws.Tensor):
    """y = x.T for a 64 x 64 bf16 tile, staged through a 128-byte swizzled smem tile addressed
    by the swizzled layout tile_to_shape(SW128 atom, (64, 64)); 128 threads."""
    s = ws.smem.allocate(ws.smem.Array(ws.BFloat16, (64, 64), swizzle=128))
    st = L.make_tensor(s.ptr, L.tile_to_shape(L.smem_layout_atom(128, ws.BFloat16), (64, 64)))
    tid = ws.arch.thread_idx()[0]
    gx, gy = L.make_tensor(x), L.make_tensor(y)
    for k in ws.static_range(32):
        r = k * 2 + tid // 64
        c = tid % 64
        st[r, c] = gx[r, c]
    ws.arch.sync_threads()
    for k in ws.static_range(32):
        r = k * 2 + tid // 64
        c = tid % 64
        gy[c, r] = s[r, c]                          # the smem array view reads the same bytes


@ws.kernel
def accumulator_positions(out: ws.Tensor):
    """out[row, col] = 1000 * thread + register for the m64n16 wgmma accumulator layout, written
    through the TV layout composed with the output tile (128 threads)."""
    tid = ws.arch.thread_idx()[0]
    tile = L.make_tensor(out, L.make_layout((64, 16), (16, 1)))
    mine = L.composition(tile, L.wgmma_accumulator_tv(16))[tid, None]
    for v in ws.static_range(L.size(mine)):
        mine[v] = ws.Float32(tid * 1000 + v)


def test_a_tiled_partitioned_copy_matches_numpy(target):
    x = np.random.default_rng(0).standard_normal((96, 16)).astype(np.float32)
    y = target.array(np.zeros_like(x))
    scale_tiles[3, 32](target.array(x), y, 2.5)
    np.testing.assert_array_equal(target.numpy(y), np.float32(2.5) * x)


def test_a_swizzled_smem_layout_agrees_with_the_swizzled_smem_array(target):
    import ml_dtypes
    x = np.arange(64 * 64, dtype=np.float32).reshape(64, 64).astype(ml_dtypes.bfloat16)
    y = target.array(np.zeros_like(x))
    transpose_via_swizzled_smem[1, 128](target.array(x), y)
    np.testing.assert_array_equal(target.numpy(y).astype(np.float32), x.T.astype(np.float32))


def test_the_wgmma_tv_layout_writes_each_register_where_accumulator_coords_says(target):
    out = target.array(np.full((64, 16), -1, np.float32))
    accumulator_positions[1, 128](out)
    out = target.numpy(out)
    want = np.full((64, 16), -1, np.float32)
    for tid in range(128):
        for v, (r, c) in enumerate(ws.wgmma.accumulator_coords(16, tid)):
            want[r, c] = tid * 1000 + v
    np.testing.assert_array_equal(out, want)


# -- static folding: golden IR ----------------------------------------------------------------
STATIC = L.make_layout((4, 8), (8, 1))


@ws.kernel
def static_at_static(out: ws.Tensor):
    assert type(STATIC(3, 5)) is int
    out[STATIC(3, 5)] = 1.0


@ws.kernel
def literal_index(out: ws.Tensor):
    out[29] = 1.0


@ws.kernel
def dynamic_extent(out: ws.Tensor, lay, i: ws.Int32, j: ws.Int32):
    out[lay(i, j)] = 1.0
    out[lay(i, 0)] = 2.0
    out[lay(0, j)] = 3.0


@ws.kernel
def decode(out: ws.Tensor, idx: ws.Int32, n: ws.Int32):
    r, c = L.idx2crd(idx, (8, n))
    out[r] = ws.Float32(c)


def ops(ir_text: str) -> list:
    """The arithmetic ops of a kernel's IR, constants excluded."""
    return [m for m in re.findall(r"= (arith\.\w+)", ir_text) if m != "arith.constant"]


def body(ir_text: str) -> list:
    return [re.sub(r"@\w+", "@k", ln.strip()) for ln in ir_text.splitlines()]


@pytest.mark.parametrize("kernel, args", [
    (scale_tiles, (ws.Tensor[ws.Float32, 2], ws.Tensor[ws.Float32, 2], ws.Float32)),
    (transpose_via_swizzled_smem, (ws.Tensor[ws.BFloat16, 2], ws.Tensor[ws.BFloat16, 2])),
])
def test_layout_kernels_compile_to_cubin(kernel, args):
    ck = ws.compile(kernel, *args)
    assert ".entry" in ck.ptx
    if ck.cubin is not None:
        assert ck.cubin[:4] == b"\x7fELF"


def test_a_static_layout_at_a_static_coordinate_emits_no_ir():
    t = ws.Tensor[ws.Float32, 1]
    assert body(ws.compile(static_at_static, t).ir) == body(ws.compile(literal_index, t).ir)


def test_a_dynamic_extent_emits_only_the_needed_multiply_adds():
    lay = L.make_layout((ws.Int32(4), ws.Int32(8)), (ws.Int32(8), 1))   # (M, N):(ldm, 1)
    ck = ws.compile(dynamic_extent, ws.Tensor[ws.Float32, 1], lay, ws.Int32, ws.Int32)
    # (i, j): i*ldm + j; (i, 0): i*ldm; (0, j): j -- and nothing for the unit stride; the
    # second i*ldm repeats the first and the CSE pass (passes/cse.py) merges them
    assert ops(ck.ir) == ["arith.mul", "arith.add"]


def test_idx2crd_by_a_power_of_two_is_a_shift_and_a_mask():
    ck = ws.compile(decode, ws.Tensor[ws.Float32, 1], ws.Int32, ws.Int32)
    assert sorted(o for o in ops(ck.ir) if o != "arith.cast") == ["arith.and", "arith.shr"]


# -- binding time ---------------------------------------------------------------------------
@ws.jit
def index_of(lay, i, j):
    return lay(i, j)


@ws.kernel
def carried(x: ws.Tensor, out: ws.Tensor, lay):
    """Reads x at lay(i, j) for thread (i, j) of a 4 x 8 grid, with the layout carried through
    a dynamic if (one path rebuilds it), a @ws.jit call and a dynamic loop."""
    tid = ws.arch.thread_idx()[0]
    here = lay
    if tid < 8:
        here = L.make_layout(lay.shape, lay.stride)
    acc = 0
    for _ in range(2):
        acc = acc + index_of(here, tid % 4, tid // 4)
    out[tid] = x[acc // 2]


def test_a_mixed_host_layout_crosses_parameters_calls_branches_and_loops(target):
    ld = 16
    lay = L.make_layout((4, 8), (ws.Int32(ld), 1))     # the row stride is dynamic
    x = np.arange(4 * ld, dtype=np.float32)
    out = target.array(np.zeros(32, np.float32))
    carried[1, 32](target.array(x), out, lay)
    want = [x[(t % 4) * ld + t // 4] for t in range(32)]
    np.testing.assert_array_equal(target.numpy(out), want)
    text = ws.explain(carried, x, out, lay, print_table=False)
    row = next(ln for ln in text.splitlines() if ln.strip().startswith("lay"))
    assert "mixed" in row and "Layout (4,8):(?16,1)" in row and "static (4,8):(?,1)" in row
    assert "stride[0]:i32" in row


def test_the_recompile_reason_shows_both_static_skeletons():
    import warnings

    @ws.kernel(max_specializations=1)
    def k(out: ws.Tensor, lay):
        out[0] = ws.Float32(lay(1, 1))

    out = np.zeros(1, np.float32)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        k[1, 32](out, L.make_layout((4, 8), (ws.Int32(8), 1)))
        k[1, 32](out, L.make_layout((4, 8), (8, 1)))
    msgs = [str(w.message) for w in rec if issubclass(w.category, ws.RecompileWarning)]
    assert len(msgs) == 1 and out[0] == 9.0
    assert "lay: static (4,8):(?,1); 1 dynamic -> static (4,8):(8,1); 0 dynamic" in msgs[0]


def test_a_different_dynamic_part_reuses_the_kernel_and_a_static_part_recompiles():
    x = np.arange(64, dtype=np.float32)
    out = np.zeros(32, np.float32)
    carried[1, 32](x, out, L.make_layout((4, 8), (ws.Int32(16), 1)))
    before = carried.trace_count
    carried[1, 32](x, out, L.make_layout((4, 8), (ws.Int32(8), 1)))
    assert carried.trace_count == before
    np.testing.assert_array_equal(out, [x[(t % 4) * 8 + t // 4] for t in range(32)])
    carried[1, 32](x, out, L.make_layout((4, 8), (8, 1)))          # the stride is static now
    assert carried.trace_count == before + 1
    np.testing.assert_array_equal(out, [x[(t % 4) * 8 + t // 4] for t in range(32)])


def test_register_tensors_need_static_coordinates():
    @ws.kernel
    def dyn_register(out: ws.Tensor, i: ws.Int32):
        r = L.make_fragment((2, 2), ws.Float32)
        out[0] = r[i, 0]

    with pytest.raises(ws.OperandError, match="registers cannot be indexed dynamically"):
        dyn_register[1, 32](np.zeros(1, np.float32), 1)


def test_identity_tensor_gives_global_coordinates_of_a_partition():
    @ws.kernel
    def coords(out: ws.Tensor):
        tid = ws.arch.thread_idx()[0]
        cx = L.local_partition(L.local_tile(L.make_identity_tensor((64, 16)), (32, 16), (1, 0)),
                               THREADS, tid)
        gout = L.make_tensor(out)
        for v in ws.static_range(L.size(cx)):
            r, c = cx[v]
            gout[tid, v] = ws.Float32(r * 100 + c)

    out = np.zeros((32, 16), np.float32)
    coords[1, 32](out)
    for t in (0, 5, 31):
        i, j = t // 4, t % 4
        want = [(32 + i + 8 * a) * 100 + j + 4 * b for b in range(4) for a in range(4)]
        assert list(out[t]) == want
