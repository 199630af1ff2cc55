"""The race detector's proxy check: shared memory written with ordinary (generic-proxy) stores and
read by the async proxy (a TMA store's source, wgmma operands) needs a fence.proxy.async by the
writing thread, after its stores and before the barrier that hands the data over."""
import inspect

import numpy as np
import pytest

import warpstage as ws
from warpstage.lang.wgmma import TileLayout
from tma_kit import Tile32 as S, init_barrier, load_box

pytestmark = pytest.mark.filterwarnings("ignore::warpstage.RecompileWarning")

HERE = __file__


def line_of(marker: str) -> int:
    lines = inspect.getsource(inspect.getmodule(line_of)).splitlines()
    return next(i + 1 for i, ln in enumerate(lines) if marker in ln and "line_of(" not in ln)


@pytest.fixture(autouse=True)
def races():
    ws.set_target("sim", races=True)
    yield
    ws.set_target("sim", races=None)


@ws.kernel
def store_tile(desc, fence: ws.Static[str]):
    s = ws.smem.allocate(S)
    tid = ws.arch.thread_idx()[0]
    for i in range(tid, 32 * 32, 128):
        s.tile[i // 32, i % 32] = ws.Float32(i)             # THE-WRITE
    if ws.static(fence == "before"):
        ws.arch.fence_proxy_async()
    if ws.static(fence == "global"):
        ws.arch.fence_proxy_async("global")
    ws.arch.sync_threads()
    if tid == 0:
        ws.tma.store(desc, s.tile, (0, 0))                  # THE-STORE
        ws.tma.commit_group()
        ws.tma.wait_group(0)


def test_a_fenced_tile_is_stored():
    y = np.zeros((32, 32), np.float32)
    store_tile[1, 128](ws.tma.TensorDescriptor(y, (32, 32)), "before")
    np.testing.assert_array_equal(y, np.arange(1024, dtype=np.float32).reshape(32, 32))


@pytest.mark.parametrize("fence", ["none", "global"])
def test_a_tma_store_of_unfenced_stores_is_reported(fence):
    y = np.zeros((32, 32), np.float32)
    with pytest.raises(ws.RaceError) as ei:
        store_tile[1, 128](ws.tma.TensorDescriptor(y, (32, 32)), fence)
    msg = str(ei.value)
    assert "read by the async proxy without fence.proxy.async" in msg
    assert f"write by warp 0, lane 0 (thread (0,0,0)) at {HERE}:{line_of('THE-WRITE')}" in msg
    assert f"async-proxy read by warp 0, lane 0 (thread (0,0,0)) at " \
           f"{HERE}:{line_of('THE-STORE')}" in msg
    assert "Fix: call ws.arch.fence_proxy_async() in the writing threads" in msg
    assert ei.value.accesses[0][3] == (0, 4)


@ws.kernel
def load_then_store(src, dst):
    """TMA load -> TMA store of the same tile: both in the async proxy, no fence needed."""
    s = ws.smem.allocate(S)
    tid = ws.arch.thread_idx()[0]
    init_barrier(s.bar[0], tid)
    load_box(src, s.tile, (0, 0), s.bar[0], tid)
    if tid == 0:
        s.bar[0].wait(0)
        ws.tma.store(dst, s.tile, (0, 0))
        ws.tma.commit_group()
        ws.tma.wait_group(0)


def test_async_proxy_writes_need_no_proxy_fence():
    x = np.arange(1024, dtype=np.float32).reshape(32, 32)
    y = np.zeros_like(x)
    load_then_store[1, 128](ws.tma.TensorDescriptor(x, (32, 32)),
                            ws.tma.TensorDescriptor(y, (32, 32)))
    np.testing.assert_array_equal(y, x)


LA = TileLayout(64, 16, ws.BFloat16, 0)
LB = TileLayout(8, 16, ws.BFloat16, 0)
Tiles = ws.smem.make_storage("ProxyTiles", a=LA.spec, b=LB.spec)


@ws.kernel
def wgmma_of_stores(out: ws.Tensor, fenced: ws.Static[bool]):
    st = ws.smem.allocate(Tiles)
    tid = ws.arch.thread_idx()[0]
    for i in range(tid, 64 * 16, 128):
        st.a.ptr[i] = 1.0
    for i in range(tid, 8 * 16, 128):
        st.b.ptr[i] = 1.0                                   # B-WRITE
    if ws.static(fenced):
        ws.arch.fence_proxy_async()
    ws.arch.sync_threads()
    a, b = ws.wgmma.tile_descriptor(st.a, "K"), ws.wgmma.tile_descriptor(st.b, "K")
    acc = ws.wgmma.mma(a, b, ws.wgmma.fence(ws.wgmma.zeros(8)))    # THE-MMA
    ws.wgmma.commit_group()
    acc = ws.wgmma.wait_group(0, acc)
    for i, (r, c) in enumerate(ws.wgmma.accumulator_coords(8)):
        out[r, c] = acc[i]


def test_wgmma_operands_need_the_proxy_fence():
    out = np.zeros((64, 8), np.float32)
    wgmma_of_stores[1, 128](out, True)
    np.testing.assert_array_equal(out, np.full((64, 8), 16.0, np.float32))
    with pytest.raises(ws.RaceError) as ei:
        wgmma_of_stores[1, 128](out, False)
    msg = str(ei.value)
    assert f"{HERE}:{line_of('THE-MMA')}" in msg and "(wgmma.mma_async)" in msg
    assert "read by the async proxy without fence.proxy.async" in msg
    assert ei.value.accesses[0][0] == "write" and ei.value.accesses[1][0] == "async-proxy read"
