"""ws.epilogue.TmaStoreEpilogue: its layout facts and configuration errors. Its stores run in
the GEMM's simulator tests (tests/ops/test_matmul_sim.py: 16-bit outputs by stmatrix, f32 by
st.shared, one and two accumulators per warpgroup, odd sub-tile counts, the race detector) and
on the GPU (tests/ops/test_matmul_gpu.py)."""
import pytest

import warpstage as ws


@pytest.mark.parametrize("dtype, sub_cols", [(ws.BFloat16, 64), (ws.Float16, 64),
                                             (ws.Float32, 32)])
def test_sub_tiles_are_one_swizzle_span(dtype, sub_cols):
    e = ws.epilogue.TmaStoreEpilogue(dtype, 128, 256)
    assert e.sub_cols == sub_cols and e.box == (128, sub_cols)
    assert e.buffer_shape == (2, 128, sub_cols) and e.smem_bytes == 2 * 128 * 128
    assert e.threads == 256 and e.per_warpgroup == 1
    one = ws.epilogue.TmaStoreEpilogue(dtype, 128, 128, warpgroups=1)
    assert one.threads == 128 and one.per_warpgroup == 2


@pytest.mark.parametrize("dtype, swizzle, sub_cols", [(ws.BFloat16, 64, 32), (ws.Float16, 32, 16),
                                                      (ws.Float32, 64, 16)])
def test_narrower_swizzle_gives_narrower_sub_tiles(dtype, swizzle, sub_cols):
    """A 64- or 32-byte swizzle stores sub-tiles of that span (D = 96's 64 x 32 blocks); the
    buffers take that swizzle."""
    e = ws.epilogue.TmaStoreEpilogue(dtype, 64, 96, warpgroups=1, swizzle=swizzle)
    assert e.sub_cols == sub_cols and e.box == (64, sub_cols) and e.swizzle == swizzle
    assert e.buffer_spec.swizzle == swizzle and e.smem_bytes == 2 * 64 * swizzle


def test_swizzle_is_in_the_key():
    key = [ws.epilogue.TmaStoreEpilogue(ws.BFloat16, 64, 96, warpgroups=1,
                                        swizzle=sw).__static_key__() for sw in (64, 32)]
    assert key[0] != key[1]


@pytest.mark.parametrize("args, kwargs, match", [
    ((ws.BFloat16, 64, 96), dict(swizzle=16), "swizzle"),
    ((ws.Float32, 64, 96), dict(swizzle=32), "at least 16 columns"),
    ((ws.BFloat16, 64, 80), dict(swizzle=64), "of 32"),
    ((ws.Int32, 128, 256), {}, "dtype"), ((ws.BFloat16, 96, 256), {}, "tile_m"),
    ((ws.BFloat16, 128, 96), {}, "multiple of 64"), ((ws.Float32, 128, 48), {}, "of 32"),
    ((ws.BFloat16, 128, 256), dict(barrier_id=0), "barrier_id"),
    ((ws.BFloat16, 192, 256), dict(warpgroups=2), "warpgroups must divide")])
def test_configuration_errors(args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        ws.epilogue.TmaStoreEpilogue(*args, **kwargs)


EPI = ws.epilogue.TmaStoreEpilogue(ws.BFloat16, 128, 256)


@ws.kernel
def store_a_narrow_accumulator(out: ws.Tensor):
    EPI.store(ws.wgmma.zeros(64), ws.arch.thread_idx()[0], None, None, (0, 0))


def test_accumulator_shape_error_names_what_it_needs():
    with pytest.raises(ws.OperandError, match=r"1 m64n256 f32 Fragment\(s\) \(128 registers"):
        ws.compile(store_a_narrow_accumulator, ws.Tensor[ws.BFloat16, 2], block=(256, 1, 1))
