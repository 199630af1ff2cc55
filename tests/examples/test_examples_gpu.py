"""The examples on a real GPU against torch: sizes on and off the block, strided views, dtypes,
and the specialization cache (a second call with the same types does not retrace)."""
import pytest

torch = pytest.importorskip("torch")

import warpstage as ws  # noqa: E402
from example_loader import load_example  # noqa: E402

pytestmark = pytest.mark.gpu

vadd = load_example("vector_add")
softmax = load_example("softmax")
DTYPES = [torch.float32, torch.float16, torch.bfloat16]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [256, 1000, 4096 * 3 + 17])
def test_vector_add_matches_torch(n, dtype):
    a = torch.randn(n, device="cuda", dtype=torch.float32).to(dtype)
    b = torch.randn(n, device="cuda", dtype=torch.float32).to(dtype)
    out = torch.full_like(a, float("nan"))
    vadd.launch(a, b, out)
    torch.cuda.synchronize()
    assert torch.equal(out, a + b)


@pytest.mark.parametrize("dtype", DTYPES)
def test_vector_add_strided_views(dtype):
    base = torch.randn(3000, device="cuda").to(dtype)
    a, b = base[::2], base[1::2]          # stride 2, not contiguous
    out_base = torch.full((3000,), float("nan"), device="cuda", dtype=dtype)
    out = out_base[::2]
    vadd.launch(a, b, out)
    torch.cuda.synchronize()
    assert torch.equal(out, a + b)
    assert torch.isnan(out_base[1::2].float()).all()    # untouched between the strided elements


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(128, 64), (37, 50), (300, 1)])
def test_softmax_matches_torch(shape, dtype):
    x = torch.randn(*shape, device="cuda").to(dtype)
    out = torch.full_like(x, float("nan"))
    softmax.launch(x, out)
    torch.cuda.synchronize()
    ref = torch.softmax(x.double(), dim=1)
    tol = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1e-2}[dtype]
    assert (out.double() - ref).abs().max().item() < tol


def test_softmax_on_transposed_view():
    x = torch.randn(64, 40, device="cuda")
    xt = x.t()                              # (40, 64) with strides (1, 40)
    out = torch.empty(40, 64, device="cuda")
    softmax.launch(xt, out)
    torch.cuda.synchronize()
    assert torch.allclose(out, torch.softmax(xt, dim=1), atol=1e-5)


def test_second_call_does_not_retrace():
    a = torch.randn(1000, device="cuda")
    out = torch.empty_like(a)
    k = vadd.vector_add
    vadd.launch(a, a, out)
    before = k.trace_count
    vadd.launch(a, a, out)
    b2 = torch.randn(1000, device="cuda")       # another tensor of the same type: no retrace
    vadd.launch(b2, b2, out)
    torch.cuda.synchronize()
    assert k.trace_count == before
    assert torch.equal(out, b2 + b2)
    vadd.launch(a.double(), a.double(), out.double())  # a dtype not seen before: one new specialization
    assert k.trace_count == before + 1


def test_host_tensor_on_cuda_target_is_a_clear_error():
    import numpy as np
    a = np.zeros(10, np.float32)
    with pytest.raises(ws.ArgumentError, match="(?s)parameter 'a'.*GPU memory"):
        vadd.vector_add[1, 32](a, a, a, 10)


def test_block_over_device_limit_is_refused():
    a = torch.zeros(10, device="cuda")
    with pytest.raises(ws.LaunchError, match="1024"):
        vadd.vector_add[1, 2048](a, a, a, 10)


def test_cluster_launch_and_3d_blocks():
    @ws.kernel
    def where(out: ws.Tensor):
        tx, ty, tz = ws.arch.thread_idx()
        bx, _, _ = ws.arch.block_idx()
        nx, ny, _ = ws.arch.block_dim()
        t = tx + nx * (ty + ny * tz)
        out[bx, t] = bx * 1000 + t

    out = torch.full((4, 64), -1, device="cuda", dtype=torch.int32)
    where(out, grid=4, block=(8, 4, 2), cluster=(2, 1, 1))
    torch.cuda.synchronize()
    ref = torch.arange(4, device="cuda")[:, None] * 1000 + torch.arange(64, device="cuda")[None, :]
    assert torch.equal(out, ref.int())
