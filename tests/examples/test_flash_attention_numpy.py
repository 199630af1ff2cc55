"""The FlashAttention kernel in the simulator on numpy float16 inputs (no torch needed, so it runs
in CI), against the float64 reference; and the demo's simulator path."""
import importlib.util
import os

import numpy as np
import pytest

import warpstage as ws
from warpstage.ops import flash_attention
from warpstage.ops.attention import reference

pytestmark = pytest.mark.filterwarnings("ignore::warpstage.RecompileWarning")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(autouse=True)
def sim_target():
    ws.set_target("sim")
    yield
    ws.set_target(None)


@pytest.mark.parametrize("seq, head_dim, causal", [(100, 64, True), (65, 64, False), (40, 128, True)])
def test_numpy_inputs(seq, head_dim, causal):
    rng = np.random.default_rng(seq)
    q, k, v = (rng.standard_normal((1, 2, seq, head_dim)).astype(np.float16) for _ in range(3))
    out = flash_attention(q, k, v, causal=causal)
    assert out.shape == q.shape and out.dtype == np.float16
    want = reference(q, k, v, causal=causal)
    got = out.astype(np.float64)
    assert np.isfinite(got).all()
    assert np.linalg.norm(got - want) / np.linalg.norm(want) < 2e-3


def test_example_main_runs_without_torch_arrays():
    spec = importlib.util.spec_from_file_location("fa_example", os.path.join(ROOT, "examples", "flash_attention.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.main(batch=1, heads=1, seq=33, head_dim=64, causal=True) < 1e-2
