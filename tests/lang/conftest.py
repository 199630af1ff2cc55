"""Fixtures for the kernel-language tests: kernels run in the simulator; ``ptxas_path`` skips a
test where no ptxas is installed."""
import pytest

import warpstage as ws
from warpstage.backend import find_ptxas
from warpstage.options import CompileOptions


@pytest.fixture(autouse=True)
def sim_target():
    ws.set_target("sim")
    yield
    ws.set_target(None)


@pytest.fixture
def ptxas_path():
    path = find_ptxas(CompileOptions())
    if path is None:
        pytest.skip("no ptxas found (nvidia-cuda-nvcc wheel, CUDA_HOME, PATH, WARPSTAGE_PTXAS)")
    return path
