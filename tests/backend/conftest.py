"""Fixtures for backend tests; the helpers live in backend_helpers.py."""
import pytest

from warpstage.backend import find_ptxas
from warpstage.options import CompileOptions


@pytest.fixture
def ptxas_path():
    """ptxas's path; skips the test where no ptxas is installed."""
    path = find_ptxas(CompileOptions())
    if path is None:
        pytest.skip("no ptxas found (nvidia-cuda-nvcc wheel, CUDA_HOME, PATH, WARPSTAGE_PTXAS)")
    return path
