"""Fixtures for the GPU tests: every test launches on the CUDA target. The GPU tests run the
simulator tests' own kernels, so tests/lang and tests/frontend are importable from here
(``from test_mma import ...``, ``from cf_harness import ...``)."""
import os
import sys

import pytest

import warpstage as ws

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for folder in ("lang", "frontend"):
    if os.path.join(TESTS, folder) not in sys.path:
        sys.path.insert(0, os.path.join(TESTS, folder))


@pytest.fixture(autouse=True)
def cuda_target():
    ws.set_target("cuda")
    yield
    ws.set_target(None)
