"""``CompileOptions.llvm_pipeline``: 'default' is LLVM's per-module default pipeline (the PTX as
before the option existed), 'light' runs ``llvm_c.LIGHT_PASSES`` only, through the direct
binding and through llvmlite.binding alike; a bad value is refused where it is set."""
import re

import pytest

import warpstage as ws
from backend_helpers import OPTIONS, compile_module
from test_backend_control import many_result_function, two_result_function
from test_llvm_c import _attention_llvm_ir, direct_only
from warpstage.backend import llvm_c
from warpstage.backend import ptx as ptx_module
from warpstage.errors import OperandError

TRIPLE = ptx_module.TRIPLE
LIGHT = OPTIONS.with_(llvm_pipeline="light")


def _both(text, pipeline):
    direct, other = llvm_c.api(), llvm_c.ThroughLlvmlite()
    return [api.emit(api.target_machine(TRIPLE, "sm_90a", "+ptx80", 3), text, TRIPLE, 3, pipeline)
            for api in (direct, other)]


@direct_only
@pytest.mark.parametrize("pipeline", ["default", "light"])
def test_direct_and_llvmlite_run_the_same_pipeline(pipeline):
    text = _attention_llvm_ir(64, False)
    a, b = _both(text, pipeline)
    assert a.count("mma.sync") > 100
    assert a == b


@direct_only
def test_the_light_pipeline_is_not_the_default_one():
    # the mma.sync FlashAttention's PTX depends on passes the light pipeline leaves out
    text = _attention_llvm_ir(64, False)
    assert _both(text, "light")[0] != _both(text, "default")[0]


def test_light_inlines_the_device_functions_and_their_out_pointer_slots(monkeypatch):
    """The always-inliner runs (no .func, no call) and SROA turns the caller's slot that an
    out-pointer function writes into registers (no local memory)."""
    import importlib
    lower_module = importlib.import_module("warpstage.backend.lower")
    _, ptx = compile_module(two_result_function(inline="always", calls=2), LIGHT)
    assert ".func" not in ptx and "call" not in ptx
    monkeypatch.setattr(lower_module, "OUT_POINTER_RESULTS", 8)
    ll, ptx = compile_module(many_result_function(12), LIGHT)
    assert 'call void @"spread"' in ll
    assert ".func" not in ptx and not re.search(r"\.local|st\.local|ld\.local", ptx)
    # at opt level 0 no pipeline runs: the function stays a .func with its slot in local memory
    _, ptx0 = compile_module(many_result_function(12), LIGHT.with_(opt_level=0))
    assert ".func" in ptx0


def test_default_is_llvm_s_default_pipeline():
    ll, ptx = compile_module(two_result_function(inline="always", calls=2))
    assert ptx == ptx_module.emit_ptx(ll, OPTIONS.with_(llvm_pipeline="default"))
    a, b = _both(ll, "default")
    assert ptx == a == b


def test_a_bad_pipeline_is_refused_where_it_is_set():
    with pytest.raises(OperandError, match=r"(?s)llvm_pipeline: expected 'default' .* or "
                                           r"'light'.*got str 'O1'.*test_llvm_pipeline.py.*"
                                           r"Fix: llvm_pipeline='default'"):
        ws.CompileOptions(llvm_pipeline="O1")
    with pytest.raises(OperandError, match=r"(?s)got str 'Light'.*\nFix: llvm_pipeline='light' "
                                           r"\(the spelling it accepts\)"):
        ws.CompileOptions(llvm_pipeline="Light")
    with pytest.raises(OperandError, match="llvm_pipeline"):
        ws.kernel(llvm_pipeline=3)
