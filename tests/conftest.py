"""Shared fixtures: GPU tests (``@pytest.mark.gpu``) skip themselves where no usable CUDA device
is present and run on the cuda target where one is; every test has a private disk cache
(WARPSTAGE_CACHE_DIR); ``target`` runs a kernel test once per target: in the simulator always,
and on the GPU (a gpu-marked case) where one is present; ``sim_target`` runs a test's kernels in
the simulator only (``pytestmark = pytest.mark.usefixtures("sim_target")`` for a whole module);
``ptxas_path`` skips a test where no ptxas is installed; traced modules are round-tripped through
the IR parser (``check_ir_round_trip``; ``--ir-round-trip=all`` for every module); after each
test what survives is frozen out of the garbage collector's walks (``pytest_runtest_protocol``
below); under pytest-xdist the workers share the rewriting of the test modules' asserts
(tests/rewrite_share.py). tests/ is on sys.path (this file lives here), so test files share helpers such as
example_loader.py. Everything here is per test or per process, so the suite runs under
pytest-xdist (``-n 2``, README's test command) as it does in one process."""
import functools
import sys

import numpy as np
import pytest

from gpu_memory import big_gpu_memory_turn


@functools.lru_cache(maxsize=None)
def gpu_available() -> bool:
    try:
        from warpstage.runtime.target import cuda_available
    except Exception:
        return False
    return cuda_available()


def pytest_collection(session):
    """Under pytest-xdist the workers split the rewriting of the test modules' asserts between
    them (tests/rewrite_share.py); collection itself is pytest's."""
    from pathlib import Path

    import rewrite_share
    rewrite_share.share(session.config, Path(__file__).resolve().parent)


def pytest_collection_modifyitems(config, items):
    if gpu_available():
        return
    skip = pytest.mark.skip(reason="no usable CUDA GPU on this machine")
    for item in items:
        if item.get_closest_marker("gpu") is not None:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _private_disk_cache(request, tmp_path_factory, monkeypatch):
    """Each test gets its own empty disk cache (never ~/.cache/warpstage), so one test's
    compiled kernels cannot turn another test's trace into a disk hit. Subprocesses inherit it.
    It is ``tmp_path / "ws-cache"`` for a test that asks for ``tmp_path``, else a folder of
    its own under the session's base temporary folder, named but not made (warpstage makes it
    when it stores a kernel; making a ``tmp_path`` for each of ~3,000 tests was ~1 s)."""
    if "tmp_path" in request.fixturenames:
        path = request.getfixturevalue("tmp_path") / "ws-cache"
    else:
        _CACHE_COUNT[0] += 1
        path = tmp_path_factory.getbasetemp() / "ws-caches" / str(_CACHE_COUNT[0])
    monkeypatch.setenv("WARPSTAGE_CACHE_DIR", str(path))


_CACHE_COUNT = [0]


@pytest.fixture(autouse=True)
def _gpu_tests_run_on_cuda(request):
    """A test marked gpu launches on the cuda target (a GPU is present: it is skipped otherwise)."""
    if request.node.get_closest_marker("gpu") is None:
        yield
        return
    import warpstage as ws
    ws.set_target("cuda")
    yield
    ws.set_target(None)


@pytest.fixture(autouse=True)
def _big_gpu_memory_one_at_a_time(request, tmp_path_factory):
    """A test marked big_gpu_memory (tens of GB on the card) takes its turn: one such test at a
    time over every xdist worker (an exclusive lock on a file beside the workers' base
    folders), and after it the worker's torch caching allocator gives its blocks back to the
    driver (``torch.cuda.empty_cache``), so the next worker's large test finds them free. On the
    80 GB H100, `-n 6` / `-n 8` ran these out of memory beside each other (RESULTS.md, "Session
    16, device calls A-C" and "call E")."""
    if request.node.get_closest_marker("big_gpu_memory") is None:
        yield
        return
    with big_gpu_memory_turn(tmp_path_factory.getbasetemp().parent / "big_gpu_memory.lock"):
        yield
        import gc
        gc.collect()
        torch = sys.modules.get("torch")
        if torch is not None and torch.cuda.is_available():
            torch.cuda.empty_cache()


class Target:
    """Where the ``target`` fixture runs a test: ``name`` is 'sim' or 'cuda'. ``array(a)`` is
    the numpy array ``a`` as the target's kernels take it (``a`` itself in the simulator, a
    torch CUDA tensor on the GPU); ``numpy(x)`` reads such an array back (after the GPU's work
    is done)."""

    def __init__(self, name: str):
        self.name = name

    def array(self, a):
        if self.name == "sim":
            return a
        import torch
        if a.dtype.name == "bfloat16":          # ml_dtypes' bfloat16: torch reads its bits
            return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16).to("cuda")
        return torch.from_numpy(a).to("cuda")

    def numpy(self, x):
        if self.name == "sim":
            return x
        import torch
        torch.cuda.synchronize()
        if x.dtype == torch.bfloat16:
            import ml_dtypes
            return x.cpu().view(torch.int16).numpy().view(ml_dtypes.bfloat16)
        return x.cpu().numpy()

    def __repr__(self) -> str:
        return self.name


@pytest.fixture(params=["sim", pytest.param("cuda", marks=pytest.mark.gpu)])
def target(request):
    """The test runs once in the CPU simulator and once on the GPU (marked gpu: skipped without
    one, and selected by ``-m gpu``). Yields a ``Target``."""
    import warpstage as ws
    if request.param == "cuda":
        pytest.importorskip("torch")
    ws.set_target(request.param)
    yield Target(request.param)
    ws.set_target(None)


@pytest.fixture
def sim_target():
    """Kernels launched during the test run in the CPU simulator; the default target after it."""
    import warpstage as ws
    ws.set_target("sim")
    yield
    ws.set_target(None)


@pytest.fixture
def ptxas_path():
    """ptxas's path; skips the test where no ptxas is installed."""
    from warpstage.backend import find_ptxas
    from warpstage.options import CompileOptions
    path = find_ptxas(CompileOptions())
    if path is None:
        pytest.skip("no ptxas found (nvidia-cuda-nvcc wheel, CUDA_HOME, PATH, WARPSTAGE_PTXAS)")
    return path


def check_ir_round_trip(module) -> None:
    """print(parse(print(m))) == print(m), with source locations (so without them too;
    ir/parser.py is the printer's inverse); an AssertionError shows the first differing line."""
    from warpstage.ir import parse, print_module
    text = print_module(module, locations=True)
    again = print_module(parse(text), locations=True)
    if again != text:
        diff = next(i for i, (a, b) in enumerate(zip(text.splitlines() + [""],
                                                     again.splitlines() + [""])) if a != b)
        raise AssertionError(f"IR text does not survive parse + print at line {diff + 1}:\n"
                             f"  printed: {text.splitlines()[diff:diff + 1]}\n"
                             f"  again:   {again.splitlines()[diff:diff + 1]}")


def pytest_addoption(parser):
    parser.addoption("--ir-round-trip", choices=("first", "all"), default="first",
                     help="check_ir_round_trip on the first module each test file traces "
                          "(default; parsing costs ~25 ms per FlashAttention module) or on all")


@pytest.fixture(autouse=True, scope="session")
def _ir_round_trip_of_traced_modules(request):
    """Modules the tests trace (the kernels of the tests, the examples and ws.ops) are checked by
    ``check_ir_round_trip`` after the passes: the first one of each test file, or every one
    with ``--ir-round-trip=all``."""
    import os
    import warpstage.passes.pipeline as pipeline
    original = pipeline.run_passes
    every = request.config.getoption("--ir-round-trip") == "all"
    seen: set = set()

    def run_passes(module, *args, **kwargs):
        result = original(module, *args, **kwargs)
        test_file = os.environ.get("PYTEST_CURRENT_TEST", "").split("::")[0]
        if every or test_file not in seen:
            seen.add(test_file)
            check_ir_round_trip(module)
        return result

    pipeline.run_passes = run_passes
    yield
    pipeline.run_passes = original


@pytest.fixture(autouse=True)
def _fresh_op_plans(monkeypatch):
    """Each test starts with no ws.ops plans (warpstage/ops/op_plans.py): a plan records the
    decisions the ops' tables gave (WGMMA_MIN_WORK, the measured defaults), which tests patch,
    and the launches a test's spies expect go through the op's code on a first call."""
    from warpstage.ops import op_plans
    monkeypatch.setattr(op_plans, "_PLANS", {})


@pytest.fixture(autouse=True)
def _race_detector_reset():
    """A test that turns the simulator's race detector on cannot leave it on for the next one."""
    yield
    from warpstage.sim.run import set_races
    set_races(None)



@pytest.hookimpl(hookwrapper=True, trylast=True)
def pytest_runtest_protocol(item, nextitem):
    """After each test (its fixtures torn down): collect its garbage once, then move what
    survives (the kernels and the in-memory caches that the test files keep alive) into the
    collector's permanent generation (``gc.freeze``), so that later automatic collections do
    not walk it again. Without this the heap of traced modules grows over the session and
    every full collection walks all of it (benchmarks/RESULTS.md, "Where the CPU suite's time
    goes")."""
    yield
    import gc
    gc.collect()
    gc.freeze()
