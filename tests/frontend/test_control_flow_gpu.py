"""Differential testing of control flow on the GPU: the random programs of
tests/frontend/cf_programs.py run as plain Python and as compiled kernels on the device, and must
agree. Example count: WARPSTAGE_DIFF_EXAMPLES_GPU (default 40)."""
import itertools
import os

import pytest

torch = pytest.importorskip("torch")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

# this folder is on sys.path (pytest puts a test file's folder there).
from cf_harness import arith_inputs, differential_check  # noqa: E402
from cf_programs import programs  # noqa: E402

from warpstage import ir  # noqa: E402
from warpstage.backend import assemble, emit_ptx, lower  # noqa: E402
from warpstage.options import CompileOptions  # noqa: E402
from warpstage.passes.pipeline import run_passes  # noqa: E402

pytestmark = pytest.mark.gpu

EXAMPLES = int(os.environ.get("WARPSTAGE_DIFF_EXAMPLES_GPU", "40"))
_counter = itertools.count()


def gpu_runner(module, floats):
    """A function (a, b) -> result running the traced kernel ``k`` on one GPU thread."""
    from warpstage.runtime import driver
    from warpstage.runtime.launcher import Launcher
    opts = CompileOptions()
    cubin = assemble(emit_ptx(lower(run_passes(module), opts), opts), opts, ["k"]).cubin
    fn = driver.get_function(driver.load_module(cubin, is_ptx=False), "k")
    rt = ir.f32 if floats else ir.i32
    launcher = Launcher(fn, [ir.i32, ir.i32, ir.PointerType(rt)])

    def run(a, b):
        out = torch.zeros(1, device="cuda", dtype=torch.float32 if floats else torch.int32)
        launcher.launch((1, 1, 1), (1, 1, 1), 0, 0, [a, b, out.data_ptr()])
        torch.cuda.synchronize()
        return out.item()
    return run


@pytest.fixture(scope="module")
def program_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("cf_programs_gpu")


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.filter_too_much])
@given(src=programs(), inputs=st.lists(st.tuples(st.integers(-20, 20), st.integers(-20, 20)),
                                       min_size=3, max_size=3))
def test_random_programs_agree_with_python_on_gpu(program_dir, src, inputs):
    path = program_dir / f"prog_{next(_counter)}.py"
    differential_check(path, src, arith_inputs(src, inputs),
                       lambda module, prog, a, b, floats: gpu_runner(module, floats)(a, b))
