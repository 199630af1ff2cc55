"""The errors of ws.layout tensors and of dynamic layout leaves in the wrong place: each says
what was expected and the fix."""
import numpy as np
import pytest

import warpstage as ws

L = ws.layout


def test_make_tensor_of_a_pointer_needs_a_layout_and_rejects_other_engines():
    @ws.kernel
    def k(x: ws.Tensor):
        L.make_tensor(x.ptr)

    with pytest.raises(ws.OperandError, match="make_tensor\\(ptr, layout\\)"):
        k[1, 32](np.zeros(4, np.float32))
    with pytest.raises(ws.OperandError, match="a ws.Pointer, a ws.Tensor parameter"):
        L.make_tensor([1, 2, 3])


def test_copy_of_unequal_sizes_and_store_of_a_slice_are_errors():
    @ws.kernel
    def k(x: ws.Tensor, which: ws.Static[int]):
        a = L.make_fragment((2, 2), ws.Float32)
        b = L.make_fragment((4, 2), ws.Float32)
        if ws.static(which == 0):
            L.copy(a, b)
        else:
            a[None, 0] = 1.0

    x = np.zeros(1, np.float32)
    with pytest.raises(ws.OperandError, match="tensors of equal size"):
        k[1, 32](x, 0)
    with pytest.raises(ws.OperandError, match="a full coordinate"):
        k[1, 32](x, 1)


def test_a_dynamic_size_where_a_static_one_is_needed():
    @ws.kernel
    def k(x: ws.Tensor):
        L.make_tensor(x).fill(0.0)

    with pytest.raises(ws.OperandError, match="tile it first"):
        k[1, 32](np.zeros(4, np.float32))


def test_a_tiler_of_higher_rank_than_the_tensor():
    with pytest.raises(ws.OperandError, match="at most 1 modes"):
        L.zipped_divide(L.make_layout(16), (4, 4))


def test_a_host_dynamic_leaf_smuggled_through_a_static_object():
    class Config:                                # a plain object: static (rule 7)
        lay = L.make_layout((4, 8), (ws.Int32(8), 1))

    @ws.kernel
    def k(out: ws.Tensor, cfg):
        i = ws.arch.thread_idx()[0]
        out[0] = ws.Float32(cfg.lay(i, 1))

    with pytest.raises(ws.BindingTimeError, match="pass the layout .* as a kernel argument"):
        k[1, 32](np.zeros(1, np.float32), Config())
