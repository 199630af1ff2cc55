"""The examples in the CPU simulator at small sizes: the same checks as the GPU tests (tests/examples/test_examples_gpu.py), with numpy
arrays (sizes on and off the block, strided views, f16 and f32, the specialization cache)."""
import os

import numpy as np
import pytest

from example_loader import ROOT, load_example

pytestmark = pytest.mark.usefixtures("sim_target")
vadd = load_example("vector_add", "sim_ex_vector_add")
softmax = load_example("softmax", "sim_ex_softmax")
pipeline = load_example("mbarrier_pipeline", "sim_ex_mbarrier_pipeline")


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("n", [256, 1000])
def test_vector_add(n, dtype):
    rng = np.random.default_rng(n)
    a, b = (rng.standard_normal(n).astype(dtype) for _ in range(2))
    out = np.full(n, np.nan, dtype)
    vadd.launch(a, b, out)
    np.testing.assert_array_equal(out, a + b)


def test_vector_add_strided_views():
    base = np.arange(600, dtype=np.float32)
    out_base = np.full(600, np.nan, np.float32)
    vadd.launch(base[::2], base[1::2], out_base[::2])
    np.testing.assert_array_equal(out_base[::2], base[::2] + base[1::2])
    assert np.isnan(out_base[1::2]).all()


@pytest.mark.parametrize("shape", [(37, 50), (5, 1)])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_softmax(shape, dtype):
    x = np.random.default_rng(3).standard_normal(shape).astype(dtype)
    out = np.full(shape, np.nan, dtype)
    softmax.launch(x, out)
    tol = 1e-5 if dtype == np.float32 else 2e-3
    assert np.abs(out.astype(np.float64) - softmax.reference(x)).max() < tol


def test_softmax_transposed_view():
    x = np.random.default_rng(4).standard_normal((20, 12)).astype(np.float32)
    out = np.empty((12, 20), np.float32)
    softmax.launch(x.T, out)
    assert np.abs(out - softmax.reference(x.T)).max() < 1e-5


def test_second_call_does_not_retrace():
    a = np.ones(100, np.float32)
    out = np.empty_like(a)
    vadd.launch(a, a, out)
    before = vadd.vector_add.trace_count
    vadd.launch(a + 1, a, out)
    assert vadd.vector_add.trace_count == before
    np.testing.assert_array_equal(out, a + 1 + a)


@pytest.mark.parametrize("stages", [1, 3])
def test_mbarrier_pipeline(stages):
    cfg = pipeline.Pipeline(stages=stages, tile=512)
    ctas, tiles = 1, 4
    x = np.random.default_rng(stages).standard_normal(ctas * tiles * cfg.tile).astype(np.float32)
    out = np.full_like(x, np.nan)
    pipeline.launch(cfg, x, out, ctas)
    np.testing.assert_array_equal(out, x * 2 + 1)


def test_every_example_has_a_simulator_test():
    """Issue #6: every example also runs in the simulator in CI. Each examples/*.py must be loaded
    by a CPU test (a test file naming it that is not a GPU test: not ``*_gpu.py``)."""
    names = sorted(f[:-3] for f in os.listdir(os.path.join(ROOT, "examples")) if f.endswith(".py"))
    texts = []
    for folder, dirs, files in os.walk(os.path.join(ROOT, "tests")):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        texts += [open(os.path.join(folder, f)).read() for f in files
                  if f.endswith(".py") and not f.endswith("_gpu.py")]
    missing = [n for n in names if not any(f'"{n}"' in t or f"'{n}'" in t or f"{n}.py" in t
                                           or f"examples.{n}" in t for t in texts)]
    assert not missing, f"examples with no simulator test: {missing}"
