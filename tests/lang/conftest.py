"""Fixtures for the kernel-language tests: every test runs its kernels in the simulator
(``sim_target`` and ``ptxas_path`` are tests/conftest.py's)."""
import pytest


@pytest.fixture(autouse=True)
def _in_simulator(sim_target):
    """Every kernel-language test runs its kernels in the simulator."""
