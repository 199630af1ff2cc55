"""ws.tma on a real GPU, running the simulator tests' own kernels (tests/lang/test_tma.py and
test_tma_pipeline.py) on torch CUDA tensors: tile loads in every swizzle and element size with
the raw shared-memory layout compared to the numpy swizzle model, out-of-bounds and NaN fills,
element strides, stores clipped at the edges, bulk copies, the PipelineTmaAsync ring, the
transpose example, and one compiled kernel for every tensor size."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

import warpstage as ws  # noqa: E402
from example_loader import load_example  # noqa: E402

# The simulator tests' own kernels (this folder's: pytest puts it on sys.path).
import test_tma as t  # noqa: E402
import test_tma_pipeline as tp  # noqa: E402

pytestmark = [pytest.mark.gpu, pytest.mark.filterwarnings("ignore::warpstage.RecompileWarning")]


def make(a):
    return torch.from_numpy(np.ascontiguousarray(a)).cuda()


def back(x):
    torch.cuda.synchronize()
    return x.cpu().numpy()


@pytest.mark.parametrize("dtype,shape,box,swizzle,coords", t.LOAD_CASES)
def test_tma_load_on_the_gpu_matches_the_simulator_model(dtype, shape, box, swizzle, coords):
    out, raw, want, want_raw = t.run_tile_load(dtype, shape, box, swizzle, coords, make=make,
                                               back=back)
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(raw, want_raw)      # the swizzle model is the hardware's


def test_padded_rows_element_strides_and_nan_fill_on_the_gpu():
    out, raw, want, want_raw = t.run_tile_load(np.float32, (30, 37), (8, 32), 128, (26, 0),
                                               pad=4, estrides=(2, 1), oob_fill="nan",
                                               make=make, back=back)
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(raw, want_raw)


@pytest.mark.parametrize("dtype,shape,box,swizzle,coords", t.STORE_CASES)
def test_tma_store_on_the_gpu(dtype, shape, box, swizzle, coords):
    got, want = t.run_tile_store(dtype, shape, box, swizzle, coords, make=make, back=back)
    np.testing.assert_array_equal(got, want)


def test_bulk_copy_on_the_gpu():
    got, want = t.run_bulk(make=make, back=back)
    np.testing.assert_array_equal(got, want)


def test_bf16_tile():
    x = torch.randn(48, 80, device="cuda").to(torch.bfloat16)
    out = torch.zeros(16, 64, device="cuda", dtype=torch.bfloat16)
    raw = torch.zeros_like(out)
    t.tile_load[1, 128](t.Tile(ws.BFloat16, (16, 64), 128),
                        ws.tma.TensorDescriptor(x, (16, 64)), out, raw, 40, 24)
    want = torch.zeros_like(out)
    want[:8, :56] = x[40:48, 24:80]
    torch.cuda.synchronize()
    assert torch.equal(out, want)


@pytest.mark.parametrize("stages", [1, 2, 3, 4])
def test_tma_pipeline_ring_on_the_gpu(stages):
    got, want = tp.run_ring(stages, ctas=132, n_tiles=9, make=make, back=back)
    np.testing.assert_array_equal(got, want)


def test_transpose_example_on_the_gpu():
    example = load_example("tma_copy", "gpu_ex_tma_copy")
    x = torch.randn(1000, 772, device="cuda")
    out = torch.empty(772, 1000, device="cuda")
    example.launch(x, out)
    torch.cuda.synchronize()
    assert torch.equal(out, x.T)


def test_other_sizes_reuse_the_kernel_and_get_their_own_descriptor():
    cfg = t.Tile(ws.Float32, (16, 32), 128)
    before = t.tile_load.trace_count
    blobs = set()
    for rows, cols in ((40, 72), (100, 36), (17, 200)):
        x = torch.arange(rows * cols, device="cuda", dtype=torch.float32).reshape(rows, cols)
        out, raw = torch.zeros(16, 32, device="cuda"), torch.zeros(16, 32, device="cuda")
        desc = ws.tma.TensorDescriptor(x, (16, 32))
        t.tile_load[1, 128](cfg, desc, out, raw, 3, 4)
        blobs.add(desc.encode())
        want = t.box_reference(x.cpu().numpy(), (3, 4), (16, 32))
        np.testing.assert_array_equal(back(out), want)
    assert t.tile_load.trace_count - before <= 1
    assert len(blobs) == 3 and all(len(b) == 128 for b in blobs)
