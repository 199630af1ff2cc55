"""ws.layout kernels on a real GPU: the simulator tests' own kernels (tests/lang/
test_layout_tensor.py) with CUDA tensors, checked against the same references, so the
simulator and the H200 agree on layout-built addressing (gmem tiles partitioned over threads,
a 128-byte swizzled smem tile, the wgmma accumulator TV layout, a mixed host layout)."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

import warpstage as ws  # noqa: E402
from test_layout_tensor import (accumulator_positions, carried, scale_tiles,  # noqa: E402
                                transpose_via_swizzled_smem)

pytestmark = [pytest.mark.gpu, pytest.mark.filterwarnings("ignore::warpstage.RecompileWarning")]
L = ws.layout


def test_tiled_partitioned_copy_on_the_gpu():
    x = torch.randn(96 * 8, 16, device="cuda")
    y = torch.zeros_like(x)
    scale_tiles[96 * 8 // 32, 32](x, y, 2.5)
    torch.cuda.synchronize()
    np.testing.assert_array_equal(y.cpu().numpy(), np.float32(2.5) * x.cpu().numpy())


def test_swizzled_smem_layout_on_the_gpu():
    x = torch.arange(64 * 64, dtype=torch.float32).reshape(64, 64).to(torch.bfloat16).cuda()
    y = torch.zeros_like(x)
    transpose_via_swizzled_smem[1, 128](x, y)
    torch.cuda.synchronize()
    assert torch.equal(y.cpu(), x.cpu().T)


def test_wgmma_accumulator_tv_layout_on_the_gpu():
    out = torch.full((64, 16), -1.0, device="cuda")
    accumulator_positions[1, 128](out)
    torch.cuda.synchronize()
    want = np.full((64, 16), -1, np.float32)
    for tid in range(128):
        for v, (r, c) in enumerate(ws.wgmma.accumulator_coords(16, tid)):
            want[r, c] = tid * 1000 + v
    np.testing.assert_array_equal(out.cpu().numpy(), want)


def test_mixed_host_layout_parameter_on_the_gpu():
    ld = 16
    x = torch.arange(4 * ld, dtype=torch.float32, device="cuda")
    out = torch.zeros(32, device="cuda")
    carried[1, 32](x, out, L.make_layout((4, 8), (ws.Int32(ld), 1)))
    torch.cuda.synchronize()
    xs = x.cpu().numpy()
    np.testing.assert_array_equal(out.cpu().numpy(), [xs[(t % 4) * ld + t // 4] for t in range(32)])
