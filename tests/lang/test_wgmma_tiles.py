"""ws.wgmma.TileLayout as a ws.layout (lang/wgmma_tiles.py): its element_layout against the
definition of the tile (column blocks one swizzle span wide, each row-major, under the hardware
swizzle of ir/swizzle.py), its TMA box and column blocks, and ws.tma.load_tile, which loads a
tile of several column blocks box by box, run in the simulator."""
import ml_dtypes
import numpy as np
import pytest

import warpstage as ws
from warpstage.ir.swizzle import swizzle_offset
from warpstage.lang.wgmma import TileLayout

from tma_kit import init_barrier

L = ws.layout


def definition_byte_offset(rows, cols, esize, swizzle, r, c):
    """The tile's definition: block c // (span / esize) of rows x span bytes, row r of it,
    byte (c % (span / esize)) esize, then the swizzle."""
    span = swizzle or 16
    per = span // esize
    return swizzle_offset((c // per) * rows * span + r * span + (c % per) * esize, swizzle)


@pytest.mark.parametrize("rows, cols, dtype, swizzle", [
    (64, 64, ws.BFloat16, 128), (128, 256, ws.BFloat16, 128), (64, 128, ws.Float16, 64),
    (16, 64, ws.Float16, 32), (8, 32, ws.BFloat16, 0), (64, 64, ws.Float32, 128)])
def test_element_layout_is_the_tile_definition(rows, cols, dtype, swizzle):
    lay = TileLayout(rows, cols, dtype, swizzle)
    esize = dtype.ir_type.nbytes
    for r in range(rows):
        for c in range(cols):
            want = definition_byte_offset(rows, cols, esize, swizzle, r, c)
            assert lay.element_layout(r, c) * esize == want == lay.byte_offset(r, c)
            assert lay.offset(r, c) == want // esize
    assert L.size(lay.element_layout) == rows * cols


def test_element_layout_is_cutes_tiled_swizzle_atom():
    one = TileLayout(128, 64, ws.BFloat16, 128)        # one 128-byte column block
    two = TileLayout(64, 128, ws.BFloat16, 128)        # two blocks side by side
    assert repr(one.element_layout) == "Sw<3,3,3> o (128,64):(64,1)"
    assert repr(two.element_layout) == "Sw<3,3,3> o (64,(64,2)):(64,(1,4096))"
    assert one.element_layout == L.tile_to_shape(L.smem_layout_atom(128, ws.BFloat16), (128, 64))


def test_box_and_blocks():
    lay = TileLayout(64, 256, ws.BFloat16, 128)
    assert (lay.box, lay.blocks, lay.block_cols) == ((64, 64), 4, 64)
    assert TileLayout(128, 64, ws.Float16, 128).box == (128, 64)
    assert TileLayout(64, 64, ws.Float32, 128).box == (64, 32)
    assert TileLayout(128, 64, ws.BFloat16, 128).block("tile", 0) == "tile"   # one block: itself


LAYOUT = TileLayout(64, 128, ws.BFloat16, 128)         # two boxes of 64 x 64


class TwoBoxes:
    Storage = ws.smem.make_storage("TwoBoxes", tile=ws.smem.Array(ws.BFloat16, LAYOUT.shape,
                                                                  swizzle=128),
                                   bar=ws.smem.MbarrierArray[1])


@ws.kernel
def load_two_boxes(cfg: ws.Static[TwoBoxes], desc, out: ws.Tensor, r0: ws.Int32, c0: ws.Int32):
    """out = the 64 x 128 tile of desc's tensor at (r0, c0), loaded by ws.tma.load_tile and read
    back through LAYOUT.element_layout (logical (r, c) -> swizzled element offset)."""
    s = ws.smem.allocate(cfg.Storage)
    tid = ws.arch.thread_idx()[0]
    init_barrier(s.bar[0], tid)
    if tid == 0:
        s.bar[0].arrive_expect_tx(LAYOUT.nbytes)
        ws.tma.load_tile(desc, LAYOUT, s.tile, (r0, c0), s.bar[0])
    s.bar[0].wait(0)
    tile = L.make_tensor(s.tile[0].ptr, LAYOUT.element_layout)
    for k in range(tid, 64 * 128, ws.arch.block_dim()[0]):
        out[k // 128, k % 128] = tile[k // 128, k % 128]


def test_load_tile_loads_each_column_block_and_the_layout_reads_it_back():
    x = (np.arange(96 * 200) % 251).astype(np.float32).reshape(96, 200).astype(ml_dtypes.bfloat16)
    out = np.zeros((64, 128), ml_dtypes.bfloat16)
    desc = ws.tma.TensorDescriptor(x, LAYOUT.box, swizzle=128)
    load_two_boxes[1, 128](TwoBoxes(), desc, out, 16, 40)
    np.testing.assert_array_equal(out.astype(np.float32), x[16:80, 40:168].astype(np.float32))


@ws.kernel
def load_tile_misuse(desc):
    s = ws.smem.allocate(TwoBoxes.Storage)
    ws.tma.load_tile(desc, (64, 128), s.tile, (0, 0), s.bar[0])


def test_load_tile_names_a_layout_that_is_not_a_tile_layout():
    x = np.zeros((64, 128), ml_dtypes.bfloat16)
    with pytest.raises(ws.OperandError) as ei:
        load_tile_misuse[1, 32](ws.tma.TensorDescriptor(x, LAYOUT.box, swizzle=128))
    msg = str(ei.value)
    assert "ws.tma.load_tile()'s layout" in msg and "TileLayout" in msg and "Fix:" in msg
    assert "test_wgmma_tiles.py" in msg
