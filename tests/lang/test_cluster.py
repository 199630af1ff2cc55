"""Thread-block clusters in the simulator: the cluster special registers for 2x1 / 1x2 / 2x2
clusters and for a launch without one, the cluster barrier (a CTA sees what its peer wrote
before the barrier, and only then), a remote mbarrier arrival handing a stage to a peer, TMA
multicast (each CTA loads half of a box and both receive the whole box), the errors (a mask
past the cluster, a peer that exited, a cluster barrier a CTA never reaches), and the PTX /
SASS of the multicast form. The ``run_*`` helpers take ``make``/``back`` so the GPU tests
(test_cluster_gpu.py) run the same kernels on device tensors."""
import numpy as np
import pytest

import warpstage as ws
from warpstage.backend import find_ptxas
from warpstage.backend.ptxas import find_cuda_tool
from warpstage.errors import DeadlockError, SimulatorError
from warpstage.options import CompileOptions

pytestmark = pytest.mark.filterwarnings("ignore::warpstage.RecompileWarning")


def host(a):
    return a


# -- the cluster's special registers ------------------------------------------------------------
@ws.kernel
def cluster_registers(out: ws.Tensor):
    if ws.arch.thread_idx()[0] == 0:
        bx, by, _ = ws.arch.block_idx()
        i = by * ws.arch.grid_dim()[0] + bx
        cx, cy, _ = ws.arch.cluster_dim()
        ix, iy, _ = ws.arch.cluster_idx()
        lx, ly, _ = ws.arch.block_idx_in_cluster()
        nx, ny, _ = ws.arch.cluster_grid_dim()
        vals = (ws.arch.cluster_ctarank(), ws.arch.cluster_size(), cx, cy, ix, iy, lx, ly, nx,
                ny)
        for k in ws.static_range(10):
            out[i, k] = vals[k]


def expected_registers(grid, cluster):
    gx, gy = grid
    cx, cy = cluster
    rows = []
    for by in range(gy):
        for bx in range(gx):
            lx, ly = bx % cx, by % cy
            rows.append((lx + ly * cx, cx * cy, cx, cy, bx // cx, by // cy, lx, ly, gx // cx,
                         gy // cy))
    return np.array(rows, np.int32)


def run_registers(grid, cluster, make=host, back=host):
    out = make(np.zeros((grid[0] * grid[1], 10), np.int32))
    if cluster is None:
        cluster_registers(out, grid=grid, block=32)
    else:
        cluster_registers(out, grid=grid, block=32, cluster=cluster)
    return back(out)


@pytest.mark.parametrize("cluster", [(2, 1), (1, 2), (2, 2)])
def test_cluster_registers(cluster):
    np.testing.assert_array_equal(run_registers((4, 2), cluster),
                                  expected_registers((4, 2), cluster))


def test_without_a_cluster_each_cta_is_a_cluster_of_one():
    np.testing.assert_array_equal(run_registers((3, 2), None), expected_registers((3, 2), (1, 1)))


# -- the cluster barrier -------------------------------------------------------------------------
class Flags:
    """Static config: whether the kernel runs the cluster barrier between write and read."""

    def __init__(self, sync: bool):
        self.sync = sync


@ws.kernel
def exchange(cfg: ws.Static[Flags], data: ws.Tensor, seen: ws.Tensor):
    """Each CTA writes its id to data[cta]; after the cluster barrier it reads its peer's."""
    c = ws.arch.block_idx()[0]
    if ws.arch.thread_idx()[0] == 0:
        data[c] = c + 100
    if ws.static(cfg.sync):
        ws.arch.cluster_sync()
    if ws.arch.thread_idx()[0] == 0:
        seen[c] = ws.atomic_add(data.ptr + (c ^ 1), 0)


def run_exchange(sync, make=host, back=host):
    data, seen = make(np.zeros(4, np.int32)), make(np.zeros(4, np.int32))
    exchange(Flags(sync), data, seen, grid=4, block=64, cluster=2)
    return back(seen)


def test_cluster_barrier_orders_a_peers_writes_before_the_read():
    np.testing.assert_array_equal(run_exchange(True), [101, 100, 103, 102])


def test_without_the_barrier_the_first_cta_reads_before_its_peer_wrote():
    # the simulator runs CTA 0 until it waits: with nothing to wait on it reads data[1] first
    assert run_exchange(False)[0] == 0


@ws.kernel
def skips_the_barrier(data: ws.Tensor):
    if ws.arch.cluster_ctarank() == 0:
        ws.arch.cluster_arrive()
        ws.arch.cluster_wait()                      # marker: cluster-wait
    else:
        bar_storage = ws.smem.allocate(One)
        if ws.arch.thread_idx()[0] == 0:
            bar_storage.bar[0].init(1)
        ws.arch.sync_threads()
        bar_storage.bar[0].wait(0)                  # nobody arrives: rank 0 waits on it too
    data[0] = 1


class One:
    bar: ws.smem.MbarrierArray[1]


def test_a_cluster_barrier_a_peer_never_reaches_is_a_deadlock():
    with pytest.raises(DeadlockError, match="barrier.cluster.wait at .*test_cluster.py.* 32 of "
                                            "64 threads of the cluster"):
        skips_the_barrier(np.zeros(1, np.int32), grid=2, block=32, cluster=2)


# -- a remote mbarrier arrival ---------------------------------------------------------------------
@ws.kernel
def handoff(cfg: ws.Static[Flags], out: ws.Tensor):
    """Rank 1 arrives on rank 0's mbarrier; rank 0 waits for it, then records the arrival."""
    s = ws.smem.allocate(One)
    tid = ws.arch.thread_idx()[0]
    rank = ws.arch.cluster_ctarank()
    if tid == 0:
        s.bar[0].init(1)
        ws.arch.fence_mbarrier_init()
    ws.arch.cluster_sync()
    if rank == 1:
        if tid == 0:
            ws.arch.mbarrier_arrive_cluster(s.bar[0], 0)
    else:
        s.bar[0].wait(0)
        if tid == 0:
            out[ws.arch.cluster_idx()[0]] = 7
    if ws.static(cfg.sync):
        ws.arch.cluster_sync()


def test_a_remote_arrival_completes_the_peers_mbarrier_phase():
    out = np.zeros(3, np.int32)
    handoff(Flags(True), out, grid=6, block=32, cluster=2)
    np.testing.assert_array_equal(out, [7, 7, 7])


@ws.kernel
def arrives_on_an_exited_peer(out: ws.Tensor):
    s = ws.smem.allocate(One)
    if ws.arch.thread_idx()[0] == 0:
        s.bar[0].init(1)
    if ws.arch.cluster_ctarank() == 1:
        ws.arch.mbarrier_arrive_cluster(s.bar[0], 0)   # rank 0 has already returned
    out[0] = 1


def test_reaching_a_peer_that_exited_is_an_error():
    with pytest.raises(SimulatorError, match="CTA rank 0 of the cluster, which has already "
                                             "exited.*cluster_wait"):
        arrives_on_an_exited_peer(np.zeros(1, np.int32), grid=2, block=32, cluster=2)


# -- TMA multicast ---------------------------------------------------------------------------------
class Halves:
    """Static config: a (32, 32) box as two (16, 32) halves, each loaded by one CTA of a 2-CTA
    cluster and multicast to both with ``mask``."""

    def __init__(self, dtype, swizzle, mask=0b11):
        self.mask = mask
        self.Storage = ws.smem.make_storage(
            "Halves", top=ws.smem.Array(dtype, (16, 32), align=128, swizzle=swizzle),
            bot=ws.smem.Array(dtype, (16, 32), align=128, swizzle=swizzle),
            bar=ws.smem.MbarrierArray[1])


@ws.kernel
def multicast_halves(cfg: ws.Static[Halves], desc, out: ws.Tensor, r0: ws.Int32, c0: ws.Int32):
    s = ws.smem.allocate(cfg.Storage)
    tid = ws.arch.thread_idx()[0]
    rank = ws.arch.cluster_ctarank()
    if tid == 0:
        s.bar[0].init(1)
        ws.arch.fence_mbarrier_init()
    ws.arch.cluster_sync()                  # the peer's mbarrier is initialized
    if tid == 0:
        s.bar[0].arrive_expect_tx(2 * desc.smem_bytes)      # both halves land here
        if rank == 0:
            ws.tma.load(desc, s.top, (r0, c0), s.bar[0], multicast=cfg.mask)
        else:
            ws.tma.load(desc, s.bot, (r0 + 16, c0), s.bar[0], multicast=cfg.mask)
    s.bar[0].wait(0)
    c = ws.arch.block_idx()[0]
    for k in range(tid, 16 * 32, ws.arch.block_dim()[0]):
        out[c, k // 32, k % 32] = s.top[k // 32, k % 32]
        out[c, 16 + k // 32, k % 32] = s.bot[k // 32, k % 32]
    ws.arch.cluster_sync()                  # no peer still writes into this CTA


def run_multicast(dtype, swizzle, shape, coords, ctas=2, make=host, back=host):
    rng = np.random.default_rng(sum(shape))
    x = (rng.standard_normal(shape) * 50).astype(dtype)
    desc = ws.tma.TensorDescriptor(make(x), (16, 32), swizzle)
    out = make(np.zeros((ctas, 32, 32), dtype))
    ws_dtype = {np.float32: ws.Float32, np.float16: ws.Float16}[np.dtype(dtype).type]
    multicast_halves(Halves(ws_dtype, swizzle), desc, out, *coords, grid=ctas, block=128,
                     cluster=2)
    want = np.zeros((32, 32), dtype)
    r, c = coords
    part = x[max(r, 0):r + 32, c:c + 32]
    want[max(0, -r):max(0, -r) + part.shape[0], :part.shape[1]] = part
    return back(out), want


@pytest.mark.parametrize("dtype,swizzle,shape,coords", [
    (np.float32, 128, (70, 40), (8, 0)),
    (np.float16, 64, (45, 64), (20, 32)),          # runs off the bottom
    (np.float32, 0, (40, 32), (-4, 0))])           # starts above the tensor
def test_multicast_delivers_each_half_to_both_ctas(dtype, swizzle, shape, coords):
    out, want = run_multicast(dtype, swizzle, shape, coords, ctas=4)
    for cta in range(4):
        np.testing.assert_array_equal(out[cta], want)


def test_a_mask_bit_past_the_cluster_is_an_error():
    x = np.zeros((64, 32), np.float32)
    desc = ws.tma.TensorDescriptor(x, (16, 32), 128)
    with pytest.raises(SimulatorError, match="CTA rank 2, but the cluster has 2 CTA"):
        multicast_halves(Halves(ws.Float32, 128, mask=0b101), desc,
                         np.zeros((2, 32, 32), np.float32), 0, 0, grid=2, block=128, cluster=2)


def test_a_static_mask_outside_16_bits_is_rejected_while_tracing():
    x = np.zeros((64, 32), np.float32)
    desc = ws.tma.TensorDescriptor(x, (16, 32), 128)
    with pytest.raises(ws.OperandError, match="multicast mask"):
        multicast_halves(Halves(ws.Float32, 128, mask=1 << 16), desc,
                         np.zeros((2, 32, 32), np.float32), 0, 0, grid=2, block=128, cluster=2)


def test_a_grid_that_is_not_whole_clusters_is_a_launch_error():
    with pytest.raises(ws.LaunchError, match="whole number of clusters"):
        cluster_registers(np.zeros((3, 10), np.int32), grid=3, block=32, cluster=2)


# -- PTX and SASS --------------------------------------------------------------------------------
def test_multicast_ptx_and_sass():
    if find_ptxas(CompileOptions()) is None:
        pytest.skip("no ptxas")
    x = np.zeros((64, 32), np.float32)
    desc = ws.tma.TensorDescriptor(x, (16, 32), 128)
    ck = ws.compile(multicast_halves, Halves(ws.Float32, 128), desc,
                    np.zeros((2, 32, 32), np.float32), ws.Int32, ws.Int32, block=(128, 1, 1))
    ptx = ck.ptx
    assert ptx.count("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx"
                     "::bytes.multicast::cluster") == 2
    # two cluster syncs (LLVM may duplicate the last one into both branches' tails)
    assert ptx.count("barrier.cluster.arrive.release;") >= 2
    assert ptx.count("barrier.cluster.wait.acquire;") >= 2
    assert "%cluster_ctarank" in ptx
    if not (find_cuda_tool("nvdisasm") or find_cuda_tool("cuobjdump")):
        pytest.skip("SASS checks need nvdisasm or cuobjdump on PATH")
    sass = ck.sass
    assert sass.count("UTMALDG.2D.MULTICAST") == 2
    assert "UCGABAR_ARV" in sass and "UCGABAR_WAIT" in sass


def test_remote_arrive_ptx():
    if find_ptxas(CompileOptions()) is None:
        pytest.skip("no ptxas")
    ck = ws.compile(handoff, Flags(True), np.zeros(3, np.int32), block=(32, 1, 1))
    ptx = ck.ptx
    assert "mapa.shared::cluster.u64" in ptx
    assert "mbarrier.arrive.shared::cluster.b64 _," in ptx
