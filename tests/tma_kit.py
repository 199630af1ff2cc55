"""Test helper: the steps that the small TMA test kernels share (tests/ is on sys.path, so any
test file can ``from tma_kit import ...``).

Only steps whose source line no test asserts belong here: an error raised inside a helper names
this file's line, so a kernel whose test checks the file:line of its mbarrier init, its
arrive_expect_tx or its ``ws.tma.load`` keeps those lines in its own file."""
import warpstage as ws


class Tile32:
    """One (32, 32) Float32 box under the 128-byte swizzle, and one mbarrier."""
    tile: ws.smem.Array(ws.Float32, (32, 32), swizzle=128)
    bar: ws.smem.MbarrierArray[1]


def desc32(a):
    """A TMA descriptor of 2-D ``a`` with box (32, 32) (no swizzle)."""
    return ws.tma.TensorDescriptor(a, (32, 32))


@ws.jit
def init_barrier(bar, tid):
    """Thread ``tid == 0`` initializes mbarrier ``bar`` for one arrival and fences the init
    (``fence.mbarrier_init``); then the CTA synchronizes, so every thread may wait on it."""
    if tid == 0:
        bar.init(1)
        ws.arch.fence_mbarrier_init()
    ws.arch.sync_threads()


@ws.jit
def load_box(desc, tile, coords, bar, tid):
    """Thread ``tid == 0`` announces ``desc.smem_bytes`` on ``bar`` and issues the TMA load of
    ``desc``'s box at ``coords`` (element indices, innermost last) into shared ``tile``."""
    if tid == 0:
        bar.arrive_expect_tx(desc.smem_bytes)
        ws.tma.load(desc, tile, coords, bar)
