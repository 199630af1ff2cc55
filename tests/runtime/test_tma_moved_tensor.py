"""A tensor reallocated in place after its TMA descriptor was built (numpy
``x.resize(..., refcheck=False)``, torch ``x.resize_`` / ``x.set_``): the descriptor's map holds
the address it was built with, so a simulator launch with it is an ArgumentError naming both
addresses (runtime/tensormap.py ``check_unmoved``, called by launch.py ``_launch_sim``); the
GPU would read the old, freed memory. A descriptor built afterwards launches and copies the new
contents."""
import numpy as np
import pytest

import warpstage as ws
from tma_kit import Tile32, init_barrier, load_box


@ws.kernel
def copy_tile(desc, out: ws.Tensor):
    s = ws.smem.allocate(Tile32)
    tid = ws.arch.thread_idx()[0]
    init_barrier(s.bar[0], tid)
    load_box(desc, s.tile, (0, 0), s.bar[0], tid)
    s.bar[0].wait(0)
    for k in range(tid, 32 * 32, 128):
        out[k // 32, k % 32] = s.tile[k // 32, k % 32]


def _moved(desc, old, new, launch):
    with pytest.raises(ws.ArgumentError) as ei:
        launch(desc)
    msg = str(ei.value)
    assert f"moved since the descriptor was built (address {old:#x} -> {new:#x})" in msg
    assert "build a new ws.tma.TensorDescriptor" in msg


def test_a_numpy_array_resized_in_place(sim_target):
    x = np.ones((32, 32), np.float32)
    d = ws.tma.TensorDescriptor(x, (32, 32))
    out = np.zeros((32, 32), np.float32)
    copy_tile[1, 128](d, out)                         # unmoved: runs
    np.testing.assert_array_equal(out, x)
    old = x.ctypes.data
    x.resize((512, 512), refcheck=False)
    x[:] = 7.0
    assert x.ctypes.data != old
    _moved(d, old, x.ctypes.data, lambda desc: copy_tile[1, 128](desc, out))
    copy_tile[1, 128](ws.tma.TensorDescriptor(x, (32, 32)), out)      # a new descriptor
    np.testing.assert_array_equal(out, np.full((32, 32), 7.0, np.float32))


@pytest.mark.parametrize("how", ["resize_", "set_"])
def test_a_torch_tensor_reallocated_in_place(sim_target, how):
    torch = pytest.importorskip("torch")
    x = torch.ones(32, 32)
    d = ws.tma.TensorDescriptor(x, (32, 32))
    old = x.data_ptr()
    if how == "resize_":
        x.resize_(1024, 1024)
    else:
        x.set_(torch.full((32, 32), 7.0))
    x.fill_(7.0)
    assert x.data_ptr() != old
    out = np.zeros((32, 32), np.float32)
    _moved(d, old, x.data_ptr(), lambda desc: copy_tile[1, 128](desc, out))
    copy_tile[1, 128](ws.tma.TensorDescriptor(x, (32, 32)), out)
    np.testing.assert_array_equal(out, np.full((32, 32), 7.0, np.float32))
