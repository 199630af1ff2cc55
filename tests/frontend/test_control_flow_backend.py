"""The IR each control-flow construct produces also compiles: LLVM IR -> PTX -> cubin (ptxas).

Skips where the backend is not importable; the cubin step skips where no ptxas is found.
"""
import pytest

import test_control_flow_if as ifs
import test_control_flow_loops as loops
import test_control_flow_misc as misc
import test_control_flow_sim as sims
from cf_harness import DEBUG, trace
from warpstage import ir

backend = pytest.importorskip("warpstage.backend")
llvm = pytest.importorskip("llvmlite.binding")

from warpstage.options import CompileOptions  # noqa: E402
from warpstage.passes.pipeline import run_passes  # noqa: E402

OPTIONS = CompileOptions(device_asserts=True)

CASES = [
    (ifs.elif_chain, ("i32",)), (ifs.and_or_not, ("i32", "i32")),
    (ifs.chained, ("i32", "i32", "i32")), (ifs.value_and, ("i32", "i32")),
    (loops.phase_loop, ("i32",)), (loops.negative_step, ("i32",)),
    (loops.unrolled_hint, ("i32",)), (loops.while_dynamic, ("i32",)),
    (loops.while_true_break, ("i32",)), (loops.continue_loop, ("i32",)), (loops.find, ("i32",)),
    (loops.for_else, ("i32",)), (loops.nested_loops, ("i32", "i32")),
    (loops.dynamic_step, ("i32", "i32")), (loops.static_iter_dynamic_break, ("i32",)),
    (sims.guarded_load, ("*f32", "i32", "i32")), (sims.collatz_steps, ("i32",)),
    (sims.nested_returns, ("i32", "i32")), (misc.min_max, ("i32", "i32")),
]


def _compile(module):
    ll = backend.lower(run_passes(module), OPTIONS)
    llvm.parse_assembly(ll).verify()
    return backend.emit_ptx(ll, OPTIONS)


@pytest.mark.parametrize("fn,types", CASES, ids=[f.__name__ for f, _ in CASES])
def test_construct_lowers_to_ptx(fn, types):
    result = ir.f32 if fn is sims.guarded_load else ir.i32
    module, _ = trace(fn, *types, store=result)
    ptx = _compile(module)
    assert ".entry k(" in ptx


def test_debug_assert_and_printf_lower_to_ptx():
    module, _ = trace(misc.checked, "i32", store=ir.i32, options=DEBUG)
    ptx = _compile(module)
    assert "vprintf" in ptx and "trap;" in ptx
    module, _ = trace(misc.prints, "i32", "f32")
    assert "vprintf" in _compile(module)


def test_cubin():
    if backend.find_ptxas(OPTIONS) is None:
        pytest.skip("no ptxas found")
    module, _ = trace(loops.find, "i32", store=ir.i32)
    result = backend.assemble(_compile(module), OPTIONS, ["k"])
    assert result.cubin
