"""ws.tma in the simulator: tile loads into swizzled shared memory (every swizzle, element size,
out-of-bounds fill, element strides, padded row strides), the raw shared-memory layout against
an independent numpy model of the swizzle, TMA stores clipped at the tensor's edge, bulk copies,
when the asynchronous data becomes visible, one compiled kernel for every tensor size, and the
trace-time errors. The ``run_*`` helpers take ``make``/``back`` converters so the GPU tests
(tests/lang/test_tma_gpu.py) run the same kernels on device tensors."""
import inspect

import numpy as np
import pytest

import warpstage as ws

from example_loader import load_example

pytestmark = pytest.mark.filterwarnings("ignore::warpstage.RecompileWarning")


def host(a):
    return a


def line_of(marker: str) -> int:
    lines = inspect.getsource(inspect.getmodule(line_of)).splitlines()
    return next(i + 1 for i, ln in enumerate(lines) if marker in ln and "line_of(" not in ln)


def numpy_swizzle(byte_offsets, span):
    """The Hopper swizzle as CUTLASS writes it (``Swizzle<B, 4, 3>``, B = log2(span / 16)), in
    terms of chunks: the 16-byte chunk index within a ``span`` (c = bits [4, 4+B)) is XORed with
    the index of the 128-byte line modulo span / 16 (bits [7, 7+B)). (For 32- and 64-byte spans
    several consecutive rows share a line.) The GPU tests check this against the hardware."""
    if span == 0:
        return byte_offsets
    per = span // 16
    chunk = (byte_offsets // 16) % per
    line = (byte_offsets // 128) % per
    return byte_offsets - chunk * 16 + (chunk ^ line) * 16


def box_reference(x, coords, box, estrides=None, fill=0):
    """The box of ``x`` at ``coords`` as TMA reads it: elements outside ``x`` are ``fill``."""
    estrides = estrides or (1,) * x.ndim
    shape = tuple(-(-b // e) for b, e in zip(box, estrides))
    out = np.full(shape, fill, x.dtype)
    for idx in np.ndindex(*shape):
        pos = tuple(c + i * e for c, i, e in zip(coords, idx, estrides))
        if all(0 <= p < n for p, n in zip(pos, x.shape)):
            out[idx] = x[pos]
    return out


def raw_reference(tile, span):
    """Shared memory after TMA wrote ``tile`` with swizzle ``span`` (elements, flat)."""
    esize = tile.dtype.itemsize
    e = np.arange(tile.size)
    dest = numpy_swizzle(e * esize, span) // esize
    raw = np.empty(tile.size, tile.dtype)
    raw[dest] = tile.ravel()
    return raw


# -- a 2-D tile load: read back through the swizzled view and raw -------------------------------
class Tile:
    """Static config: one box of ``dtype`` in a ``swizzle``d array, and an mbarrier."""

    def __init__(self, dtype, shape, swizzle, prefetch=True):
        self.shape = shape
        self.swizzle = swizzle
        self.prefetch = prefetch
        self.Storage = ws.smem.make_storage(
            "TmaTile", tile=ws.smem.Array(dtype, shape, align=128, swizzle=swizzle),
            bar=ws.smem.MbarrierArray[1])


@ws.kernel
def tile_load(cfg: ws.Static[Tile], desc, out: ws.Tensor, raw: ws.Tensor, r0: ws.Int32,
              c0: ws.Int32):
    s = ws.smem.allocate(cfg.Storage)
    tid = ws.arch.thread_idx()[0]
    if tid == 0:
        s.bar[0].init(1)
        ws.arch.fence_mbarrier_init()
    ws.arch.sync_threads()
    if tid == 0:
        if ws.static(cfg.prefetch):
            ws.tma.prefetch_descriptor(desc)
        s.bar[0].arrive_expect_tx(desc.smem_bytes)
        ws.tma.load(desc, s.tile, (r0, c0), s.bar[0])
    s.bar[0].wait(0)
    rows, cols = cfg.shape
    for k in range(tid, rows * cols, ws.arch.block_dim()[0]):
        out[k // cols, k % cols] = s.tile[k // cols, k % cols]     # logical element (swizzle undone)
        raw[k // cols, k % cols] = s.tile.ptr[k]                    # what TMA wrote where


def run_tile_load(dtype, shape, box, swizzle, coords, pad=0, estrides=None, oob_fill="zero",
                  make=host, back=host):
    """Load one box of a ``shape`` tensor at ``coords``; its rows are padded to a multiple of 16
    bytes (TMA's stride rule) plus ``pad`` elements. Returns (out, raw, expected tile, expected
    raw), all numpy."""
    rng = np.random.default_rng(len(shape) + sum(box) + pad)
    per16 = 16 // np.dtype(dtype).itemsize
    cols = -(-shape[1] // per16) * per16 + pad
    base = (rng.standard_normal((shape[0], cols)) * 100).astype(dtype)
    x_host = base[:, :shape[1]]
    x = make(base)[:, :shape[1]]
    desc = ws.tma.TensorDescriptor(x, box, swizzle, element_strides=estrides, oob_fill=oob_fill)
    tile_shape = desc.smem_shape
    out = make(np.zeros(tile_shape, dtype))
    raw = make(np.zeros(tile_shape, dtype))
    tile_load[1, 128](Tile(_ws_dtype(dtype), tile_shape, swizzle), desc,
                      out, raw, *coords)
    fill = np.nan if oob_fill == "nan" else 0
    want = box_reference(x_host, coords, box, estrides, fill)
    return back(out), back(raw), want, raw_reference(want, swizzle).reshape(tile_shape)


def _ws_dtype(np_dtype):
    return {np.float32: ws.Float32, np.float16: ws.Float16, np.uint8: ws.Uint8,
            np.int64: ws.Int64, np.float64: ws.Float64}[np.dtype(np_dtype).type]


LOAD_CASES = [  # dtype, shape, box, swizzle, coords (innermost: a multiple of 16 bytes)
    (np.float32, (40, 70), (16, 32), 128, (30, 48)),      # runs off the bottom and the right
    (np.float32, (40, 70), (8, 16), 64, (-3, -4)),        # starts before the tensor
    (np.float16, (33, 100), (16, 64), 128, (5, 40)),
    (np.float16, (33, 100), (32, 16), 32, (1, 88)),
    (np.uint8, (50, 300), (8, 128), 128, (4, 96)),
    (np.uint8, (50, 300), (24, 32), 0, (40, 288)),        # no swizzle
    (np.int64, (20, 20), (8, 8), 64, (3, 2)),
    (np.float32, (64, 64), (64, 16), 64, (0, 48)),        # inner extent < swizzle span: 8 rows
]


@pytest.mark.parametrize("dtype,shape,box,swizzle,coords", LOAD_CASES)
def test_tma_load_reads_the_box_in_the_swizzled_layout(dtype, shape, box, swizzle, coords):
    out, raw, want, want_raw = run_tile_load(dtype, shape, box, swizzle, coords)
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(raw, want_raw)


def test_padded_row_stride_element_strides_and_nan_fill():
    out, raw, want, want_raw = run_tile_load(np.float32, (30, 37), (8, 32), 128, (26, 0), pad=4,
                                             estrides=(2, 1), oob_fill="nan")
    assert out.shape == (4, 32) and np.isnan(out[2:]).all()
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(raw, want_raw)


# -- a TMA store, clipped at the tensor's edge ---------------------------------------------------
@ws.kernel
def tile_store(cfg: ws.Static[Tile], desc, src: ws.Tensor, r0: ws.Int32, c0: ws.Int32):
    s = ws.smem.allocate(cfg.Storage)
    tid = ws.arch.thread_idx()[0]
    rows, cols = cfg.shape
    for k in range(tid, rows * cols, ws.arch.block_dim()[0]):
        s.tile[k // cols, k % cols] = src[k // cols, k % cols]    # written through the swizzle
    ws.arch.fence_proxy_async()             # st.shared writes -> visible to the TMA unit
    ws.arch.sync_threads()
    if tid == 0:
        ws.tma.store(desc, s.tile, (r0, c0))
        ws.tma.commit_group()
        ws.tma.wait_group(0)


def run_tile_store(dtype, shape, box, swizzle, coords, make=host, back=host):
    rng = np.random.default_rng(sum(shape))
    src = (rng.standard_normal(box) * 100).astype(dtype)
    dst = np.full(shape, 7, dtype)
    want = dst.copy()
    for i, j in np.ndindex(*box):
        r, c = coords[0] + i, coords[1] + j
        if 0 <= r < shape[0] and 0 <= c < shape[1]:
            want[r, c] = src[i, j]
    d = make(dst)
    desc = ws.tma.TensorDescriptor(d, box, swizzle)
    tile_store[1, 96](Tile(_ws_dtype(dtype), box, swizzle), desc, make(src), *coords)
    return back(d), want


STORE_CASES = [
    (np.float32, (40, 52), (16, 32), 128, (30, 28)),
    (np.float16, (20, 72), (8, 64), 128, (14, 8)),
    (np.uint8, (9, 64), (16, 32), 32, (0, 32)),
]


@pytest.mark.parametrize("dtype,shape,box,swizzle,coords", STORE_CASES)
def test_tma_store_writes_the_box_inside_the_tensor(dtype, shape, box, swizzle, coords):
    got, want = run_tile_store(dtype, shape, box, swizzle, coords)
    np.testing.assert_array_equal(got, want)


# -- bulk copy -----------------------------------------------------------------------------------
class Bulk:
    Storage = ws.smem.make_storage("TmaBulk", buf=ws.smem.Array[ws.Float32, (256,), 16],
                                   bar=ws.smem.MbarrierArray[1])


@ws.kernel
def bulk(cfg: ws.Static[Bulk], x: ws.Tensor, out: ws.Tensor, offset: ws.Int32):
    s = ws.smem.allocate(cfg.Storage)
    tid = ws.arch.thread_idx()[0]
    if tid == 0:
        s.bar[0].init(1)
        ws.arch.fence_mbarrier_init()
    ws.arch.sync_threads()
    if tid == 0:
        s.bar[0].arrive_expect_tx(1024)
        ws.tma.bulk_copy(s.buf, x.ptr + offset, 1024, s.bar[0])
    s.bar[0].wait(0)
    for k in range(tid, 256, ws.arch.block_dim()[0]):
        out[k] = s.buf[k] + 1.0


def run_bulk(make=host, back=host):
    x = np.arange(600, dtype=np.float32)
    out = make(np.zeros(256, np.float32))
    bulk[1, 64](Bulk(), make(x), out, 12)
    return back(out), x[12:268] + 1


def test_bulk_copy_delivers_its_bytes():
    got, want = run_bulk()
    np.testing.assert_array_equal(got, want)


# -- when the data becomes visible (simulator semantics) -----------------------------------------
@ws.kernel
def stale(cfg: ws.Static[Tile], desc, early: ws.Tensor, late: ws.Tensor):
    s = ws.smem.allocate(cfg.Storage)
    tid = ws.arch.thread_idx()[0]
    if tid == 0:
        s.bar[0].init(1)
        ws.arch.fence_mbarrier_init()
    for r in ws.static_range(8):
        s.tile[r, tid] = -1.0
    ws.arch.sync_threads()
    if tid == 0:
        s.bar[0].arrive_expect_tx(desc.smem_bytes)
        ws.tma.load(desc, s.tile, (0, 0), s.bar[0])
    for r in ws.static_range(8):
        early[r * 32 + tid] = s.tile[r, tid]          # a race: no wait yet
    s.bar[0].wait(0)
    for r in ws.static_range(8):
        late[r * 32 + tid] = s.tile[r, tid]


def test_a_read_before_the_mbarrier_wait_sees_stale_shared_memory():
    x = np.arange(8 * 32, dtype=np.float32).reshape(8, 32)
    early, late = np.zeros(256, np.float32), np.zeros(256, np.float32)
    stale[1, 32](Tile(ws.Float32, (8, 32), 128), ws.tma.TensorDescriptor(x, (8, 32)), early,
                 late)
    assert (early == -1).all()
    np.testing.assert_array_equal(late, x.ravel())


@ws.kernel
def store_then_read(cfg: ws.Static[Tile], desc, dst: ws.Tensor, seen: ws.Tensor):
    s = ws.smem.allocate(cfg.Storage)
    tid = ws.arch.thread_idx()[0]
    s.tile[tid // 32, tid % 32] = 5.0
    ws.arch.fence_proxy_async()
    ws.arch.sync_threads()
    if tid == 0:
        ws.tma.store(desc, s.tile, (0, 0))
        ws.tma.commit_group()
        ws.tma.wait_group(0, read=True)             # the source may be reused; not yet visible
        seen[0] = dst[0, 0]
        ws.tma.wait_group(0)
        seen[1] = dst[0, 0]


def test_a_tma_store_lands_at_its_wait_group():
    dst = np.zeros((8, 32), np.float32)
    seen = np.full(2, -1, np.float32)
    store_then_read[1, 256](Tile(ws.Float32, (8, 32), 128), ws.tma.TensorDescriptor(dst, (8, 32)),
                            dst, seen)
    assert seen.tolist() == [0.0, 5.0] and (dst == 5).all()


def test_other_tensor_sizes_reuse_the_compiled_kernel():
    cfg = Tile(ws.Float32, (16, 32), 128)
    before = tile_load.trace_count
    for rows, cols in ((40, 72), (100, 36), (17, 200)):
        x = np.arange(rows * cols, dtype=np.float32).reshape(rows, cols)
        out, raw = np.zeros((16, 32), np.float32), np.zeros((16, 32), np.float32)
        tile_load[1, 128](cfg, ws.tma.TensorDescriptor(x, (16, 32)), out, raw, 3, 4)
        np.testing.assert_array_equal(out, box_reference(x, (3, 4), (16, 32)))
    assert tile_load.trace_count - before <= 1


def test_ptx_has_the_tma_instructions_and_a_grid_constant_descriptor():
    x = np.zeros((64, 64), np.float32)
    ck = ws.compile(tile_load, Tile(ws.Float32, (16, 32), 128), ws.tma.TensorDescriptor(
        x, (16, 32)), ws.Tensor[ws.Float32, 2], ws.Tensor[ws.Float32, 2], ws.Int32, ws.Int32)
    assert ".param .align 64 .b8" in ck.ptx and "cvta.param.u64" in ck.ptx
    assert ("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
            in ck.ptx)
    assert "tma.load" in ck.ir and "!tensormap" in ck.ir


# -- errors ----------------------------------------------------------------------------------------
class Wrong:
    def __init__(self, field):
        self.Storage = ws.smem.make_storage("TmaWrong", bar=ws.smem.MbarrierArray[1], tile=field)


@ws.kernel
def load_into(cfg: ws.Static[Wrong], desc):
    s = ws.smem.allocate(cfg.Storage)
    ws.tma.load(desc, s.tile, (0, 0), s.bar[0])  # marker: load_into


@pytest.mark.parametrize("field,message", [
    (ws.smem.Array(ws.Float32, (16, 16), swizzle=128), r"destination's size: expected 2048 "
     r"bytes, one box \(16, 32\) of Float32, got '1024 bytes \(shape \(16, 16\)\)'"),
    (ws.smem.Array(ws.Float32, (16, 32)), r"destination's swizzle: expected the descriptor's "
     r"swizzle 128"),
    (ws.smem.Array(ws.Float16, (16, 64), swizzle=128), r"destination's dtype: expected the "
     r"descriptor's Float32"),
])
def test_a_mismatched_destination_is_a_trace_time_error(field, message):
    x = np.zeros((64, 64), np.float32)
    with pytest.raises(ws.OperandError, match=message) as ei:
        load_into[1, 32](Wrong(field), ws.tma.TensorDescriptor(x, (16, 32)))
    assert "Fix: declare it as ws.smem.Array(Float32, (16, 32), swizzle=128)" in str(ei.value)
    assert ei.value.where.endswith(f"test_tma.py:{line_of('marker: load_into')}")


def test_an_unaligned_destination_is_a_trace_time_error():
    x = np.zeros((64, 64), np.float32)
    field = ws.smem.Array[ws.Float32, (16, 32), 64]      # after the mbarrier: offset 64
    with pytest.raises(ws.OperandError, match=r"alignment: expected a multiple of 128 bytes"):
        load_into[1, 32](Wrong(field), ws.tma.TensorDescriptor(x, (16, 32), swizzle=0))


@ws.kernel
def wrong_coords(cfg: ws.Static[Tile], desc):
    s = ws.smem.allocate(cfg.Storage)
    ws.tma.load(desc, s.tile, (0, 0, 0), s.bar[0])


@ws.kernel
def unaligned_column(cfg: ws.Static[Tile], desc):
    s = ws.smem.allocate(cfg.Storage)
    ws.tma.load(desc, s.tile, (0, 2), s.bar[0])


def test_a_static_innermost_coordinate_must_be_16_byte_aligned():
    x = np.zeros((64, 64), np.float32)
    with pytest.raises(ws.OperandError, match=r"innermost coordinate: expected a multiple of 4 "
                                              r"elements \(16 bytes of Float32\)"):
        unaligned_column[1, 32](Tile(ws.Float32, (16, 32), 128),
                                ws.tma.TensorDescriptor(x, (16, 32)))


def test_a_dynamic_innermost_coordinate_is_checked_when_run():
    with pytest.raises(ws.SimulatorError, match=r"innermost coordinate 50 is 200 bytes into a "
                                                r"row, not a multiple of 16"):
        run_tile_load(np.float32, (40, 70), (16, 32), 128, (0, 50))


def test_a_tma_store_at_negative_coordinates_is_an_error():
    with pytest.raises(ws.SimulatorError, match=r"stores need non-negative coordinates"):
        run_tile_store(np.float32, (40, 52), (16, 32), 128, (-2, 0))


@ws.kernel
def store_before_start(cfg: ws.Static[Tile], desc):
    s = ws.smem.allocate(cfg.Storage)
    ws.tma.store(desc, s.tile, (-16, 0))


def test_a_static_negative_store_coordinate_is_a_trace_time_error():
    with pytest.raises(ws.OperandError, match=r"coordinates: expected non-negative coordinates"):
        store_before_start[1, 32](Tile(ws.Float32, (16, 32), 128),
                                  ws.tma.TensorDescriptor(np.zeros((64, 64), np.float32), (16, 32)))


def test_coordinates_must_match_the_rank():
    x = np.zeros((64, 64), np.float32)
    with pytest.raises(ws.OperandError, match=r"expected 2 coordinates"):
        wrong_coords[1, 32](Tile(ws.Float32, (16, 32), 128), ws.tma.TensorDescriptor(x, (16, 32)))


GLOBAL_DESC = ws.tma.TensorDescriptor(np.zeros((64, 64), np.float32), (16, 32))


@ws.kernel
def global_desc(cfg: ws.Static[Tile]):
    s = ws.smem.allocate(cfg.Storage)
    ws.tma.load(GLOBAL_DESC, s.tile, (0, 0), s.bar[0])


def test_a_descriptor_must_be_a_kernel_argument():
    with pytest.raises(ws.OperandError, match=r"(?s)the kernel's TensorDescriptor parameter.*"
                                              r"pass the descriptor to the kernel"):
        global_desc[1, 32](Tile(ws.Float32, (16, 32), 128))


@ws.kernel
def row_view(cfg: ws.Static[Tile], out: ws.Tensor):
    s = ws.smem.allocate(cfg.Storage)
    row = s.tile[1]
    out[0] = row[0]


def test_a_sub_view_inside_a_swizzle_period_is_an_error():
    with pytest.raises(ws.OperandError, match=r"sub-views starting at multiples of 1024 bytes"):
        row_view[1, 32](Tile(ws.Float32, (16, 32), 128), np.zeros(1, np.float32))


def test_swizzled_arrays_are_aligned_to_the_period_and_keyed_by_swizzle():
    a = ws.smem.Array(ws.BFloat16, (64, 64), swizzle=128)
    assert a.align == 1024 and a.swizzle == 128
    assert ws.smem.Array[ws.BFloat16, (64, 64), 16, 64].align == 512
    assert a.key() != ws.smem.Array(ws.BFloat16, (64, 64), align=1024).key()
    with pytest.raises(ws.OperandError, match=r"swizzle: expected one of \(0, 32, 64, 128\)"):
        ws.smem.Array(ws.Float32, (8, 8), swizzle=16)


def test_the_transpose_example():
    example = load_example("tma_copy")
    x = np.random.default_rng(1).standard_normal((70, 36)).astype(np.float32)
    out = np.full((36, 72), np.nan, np.float32)[:, :70]     # a padded (strided) destination
    example.launch(x, out)
    np.testing.assert_array_equal(out, x.T)


# -- messages a first-time user meets (the fresh-user review) --------------------------------------
@ws.kernel
def copy_tile(cfg: ws.Static[Tile], src, out: ws.Tensor):
    s = ws.smem.allocate(cfg.Storage)
    if ws.arch.thread_idx()[0] == 0:
        s.bar[0].init(1)
        s.bar[0].arrive_expect_tx(src.smem_bytes)  # marker: smem_bytes of an array
        ws.tma.load(src, s.tile, (0, 0), s.bar[0])
    out[0] = 1.0


@ws.kernel
def load_from_array(cfg: ws.Static[Tile], src):
    s = ws.smem.allocate(cfg.Storage)
    if ws.arch.thread_idx()[0] == 0:
        ws.tma.load(src, s.tile, (0, 0), s.bar[0])  # marker: load from an array


@ws.kernel
def store_to_array(cfg: ws.Static[Tile], src):
    s = ws.smem.allocate(cfg.Storage)
    if ws.arch.thread_idx()[0] == 0:
        ws.tma.store(src, s.tile, (0, 0))  # marker: store to an array


@ws.kernel
def prefetch_array(cfg: ws.Static[Tile], src):
    if ws.arch.thread_idx()[0] == 0:
        ws.tma.prefetch_descriptor(src)  # marker: prefetch an array


@pytest.mark.parametrize("kern,marker,what", [
    (copy_tile, "marker: smem_bytes of an array", "src.smem_bytes"),
    (load_from_array, "marker: load from an array", "ws.tma.load()'s descriptor"),
    (store_to_array, "marker: store to an array", "ws.tma.store()'s descriptor"),
    (prefetch_array, "marker: prefetch an array", "ws.tma.prefetch_descriptor()'s descriptor"),
])
def test_an_array_passed_for_a_descriptor_is_named_at_the_users_line(kern, marker, what):
    import traceback
    x = np.zeros((64, 64), np.float32)
    args = (Tile(ws.Float32, (16, 32), 128), x) + ((np.zeros(1, np.float32),)
                                                   if kern is copy_tile else ())
    with pytest.raises(ws.OperandError) as ei:
        kern[1, 32](*args)
    msg = str(ei.value)
    assert msg.startswith(f"{what}: expected a ws.tma.TensorDescriptor (passed as a kernel "
                          "argument), got")
    assert "a tensor (ws.Tensor of Float32, 2-d" in msg
    assert "Fix: build the descriptor on the host, ws.tma.TensorDescriptor(x, box=" in msg
    assert ei.value.where.endswith(f"test_tma.py:{line_of(marker)}")
    frames = traceback.extract_tb(ei.value.__traceback__)
    user = [f for f in frames if "/warpstage/" not in f.filename]
    assert user[-1].lineno == line_of(marker) and user[-1].name == kern.__name__
    assert not any(f.name.startswith("__ws_") for f in frames), [f.name for f in frames]
    assert [f.name for f in user].count(kern.__name__) == 1     # no call site of the `if` body
    assert not any("/warpstage/frontend/" in f.filename or "/warpstage/lang/" in f.filename
                   for f in frames)


@pytest.mark.parametrize("kwargs,message", [
    (dict(box=(0, 32)), r"dimension 0 is 0(?s:.*)Fix: give every box dimension at least 1"),
    (dict(box=(-1, 32)), r"dimension 0 is -1(?s:.*)Fix: give every box dimension at least 1"),
    (dict(box=(300, 32)), r"Fix: copy a larger tile with several TMA copies of at most 256"),
])
def test_descriptor_box_fix_texts_fit_the_mistake(kwargs, message):
    with pytest.raises(ws.OperandError, match=message):
        ws.tma.TensorDescriptor(np.zeros((64, 64), np.float32), **kwargs)


def test_a_negative_stride_is_not_told_to_pad_its_rows():
    with pytest.raises(ws.ArgumentError) as ei:
        ws.tma.TensorDescriptor(np.zeros((64, 64), np.float32)[::-1], (16, 32))
    msg = str(ei.value)
    assert "dimension 0 has a negative stride (-64 elements" in msg
    assert "np.ascontiguousarray(x)" in msg and "pad the rows" not in msg


def test_a_non_contiguous_inner_dimension_fix_names_numpy_too():
    with pytest.raises(ws.ArgumentError, match=r"np\.ascontiguousarray\(x\) for numpy, "
                                               r"x\.contiguous\(\) for torch"):
        ws.tma.TensorDescriptor(np.zeros((64, 64), np.float32).T, (16, 32))


# -- compiling from types ------------------------------------------------------------------------
def test_the_descriptor_class_is_refused_with_both_fixes():
    for cls in (ws.tma.TensorDescriptor, ws.tma.TmaDescriptor):
        for entry in (ws.compile, ws.explain):
            with pytest.raises(ws.ArgumentError) as ei:
                entry(tile_load, Tile(ws.Float32, (16, 32), 128), cls,
                      ws.Tensor[ws.Float32, 2], ws.Tensor[ws.Float32, 2], ws.Int32, ws.Int32)
            msg = str(ei.value)
            assert f"parameter 'desc': got the class ws.tma.{cls.__name__}, not a descriptor" \
                in msg
            assert "ws.tma.TensorDescriptor.spec(ws.Float32, box=(32, 32), swizzle=128)" in msg


def test_a_kernel_compiles_from_a_descriptor_spec_like_from_a_descriptor():
    cfg = Tile(ws.Float32, (16, 32), 128)
    types = (ws.Tensor[ws.Float32, 2], ws.Tensor[ws.Float32, 2], ws.Int32, ws.Int32)
    spec = ws.tma.TensorDescriptor.spec(ws.Float32, (16, 32), swizzle=128)
    real = ws.tma.TensorDescriptor(np.zeros((100, 70 + 2), np.float32), (16, 32))
    from_spec = ws.compile(tile_load, cfg, spec, *types)
    from_value = ws.compile(tile_load, cfg, real, *types)
    assert from_spec is from_value                       # one specialization key
    assert ("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
            in from_spec.ptx)
    other = ws.compile(tile_load, Tile(ws.BFloat16, (16, 64), 128),
                       ws.tma.TensorDescriptor.spec(ws.BFloat16, (16, 64)), *types)
    assert other is not from_spec and "tma.load" in other.ir
    with pytest.raises(ws.OperandError, match=r"box: dimension 1 is 0"):
        ws.tma.TensorDescriptor.spec(ws.Float32, (16, 0))
    with pytest.raises(ws.OperandError, match=r"expected a warpstage dtype"):
        ws.tma.TensorDescriptor.spec(np.float32, (16, 32))
    with pytest.raises(ws.ArgumentError, match=r"made by TensorDescriptor.spec\(\) describes "
                                               r"types only"):
        tile_load[1, 128](cfg, spec, np.zeros((16, 32), np.float32),
                          np.zeros((16, 32), np.float32), 0, 0)


def test_explain_describes_a_descriptor_in_words():
    text = ws.explain(tile_load, Tile(ws.BFloat16, (16, 64), 128),
                      ws.tma.TensorDescriptor.spec(ws.BFloat16, (16, 64), oob_fill="nan",
                                                   l2_promotion=256),
                      ws.Tensor[ws.Float32, 2], ws.Tensor[ws.Float32, 2], ws.Int32, ws.Int32,
                      print_table=False)
    row = next(ln for ln in text.splitlines() if ln.strip().startswith("desc "))
    assert "ws.tma.TensorDescriptor[BFloat16, rank 2]" in row
    assert "box=(16, 64) swizzle=128 oob_fill=nan l2_promotion=256" in row
    assert "..." not in row and "tensormap:!tensormap" in row


# -- a ring of swizzled stages ------------------------------------------------------------------
class Ring:
    def __init__(self, shape):
        self.Storage = ws.smem.make_storage("TmaRing", ring=ws.smem.Array(ws.Float32, shape,
                                                                           swizzle=128))


@ws.kernel
def ring_stage(cfg: ws.Static[Ring], out: ws.Tensor, stage: ws.Int32):
    s = ws.smem.allocate(cfg.Storage)
    out[0] = s.ring[stage][0, 0]


def test_a_ring_of_stages_smaller_than_the_swizzle_period_says_what_fits():
    with pytest.raises(ws.OperandError) as ei:
        ring_stage[1, 32](Ring((3, 4, 32)), np.zeros(1, np.float32), 1)
    msg = str(ei.value)
    assert "got 'stages of 512 bytes'" in msg
    assert ("each stage (the trailing dims (4, 32)) to be a whole number of swizzle periods "
            "(1024 bytes for a 128-byte swizzle)") in msg
    assert "Fix: make each stage a multiple of 1024 bytes (8 rows of 128 bytes), e.g. shape " \
        "(3, 8, 32)" in msg
    out = np.zeros(1, np.float32)
    ring_stage[1, 32](Ring((3, 8, 32)), out, 1)           # whole periods: accepted
