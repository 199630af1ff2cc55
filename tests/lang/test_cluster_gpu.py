"""Clusters on a real GPU, running the simulator tests' own kernels (test_cluster.py,
test_pipeline_cluster.py) on torch CUDA tensors: the cluster special registers, the cluster
barrier, a remote mbarrier arrival, TMA multicast of two half boxes to both CTAs, and the
PipelineTmaMulticast ring in 2 x 1 and 1 x 2 clusters."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

import test_cluster as t  # noqa: E402
import test_pipeline_cluster as tp  # noqa: E402
from test_tma_gpu import back, make  # noqa: E402  (numpy <-> CUDA tensors)

pytestmark = [pytest.mark.gpu, pytest.mark.filterwarnings("ignore::warpstage.RecompileWarning")]


@pytest.mark.parametrize("cluster", [(2, 1), (1, 2), (2, 2), None])
def test_cluster_registers_on_the_gpu(cluster):
    got = t.run_registers((4, 2), cluster, make, back)
    np.testing.assert_array_equal(got, t.expected_registers((4, 2), cluster or (1, 1)))


def test_cluster_barrier_on_the_gpu():
    np.testing.assert_array_equal(t.run_exchange(True, make, back), [101, 100, 103, 102])


def test_remote_arrival_on_the_gpu():
    out = make(np.zeros(3, np.int32))
    t.handoff(t.Flags(True), out, grid=6, block=32, cluster=2)
    np.testing.assert_array_equal(back(out), [7, 7, 7])


@pytest.mark.parametrize("dtype,swizzle,shape,coords", [
    (np.float32, 128, (70, 40), (8, 0)), (np.float16, 64, (45, 64), (20, 32)),
    (np.float32, 0, (40, 32), (-4, 0))])
def test_multicast_on_the_gpu(dtype, swizzle, shape, coords):
    out, want = t.run_multicast(dtype, swizzle, shape, coords, ctas=8, make=make, back=back)
    for cta in range(8):
        np.testing.assert_array_equal(out[cta], want)


@pytest.mark.parametrize("stages,cluster,groups,n_tiles", [
    (2, (2, 1), 4, 17), (3, (1, 2), 8, 23), (4, (2, 1), 66, 9)])
def test_multicast_ring_on_the_gpu(stages, cluster, groups, n_tiles):
    out, want = tp.run_cluster_ring(stages, cluster, groups, n_tiles, make, back)
    np.testing.assert_array_equal(out, want)
