"""passes/kernel_attrs.py and passes/pipeline.py."""
import pytest

from warpstage.ir import Builder, Function, Module, VerificationError, i32
from warpstage.passes import pipeline
from warpstage.passes.kernel_attrs import kernel_attributes


def _module(with_setmaxnreg: bool, in_device_function: bool = False):
    m = Module()
    dev = m.add(Function("helper", []))
    k = m.add(Function("k", [i32], is_kernel=True, attrs={"maxntid": (128, 1, 1)}))
    bd, bk = Builder(dev.body.block), Builder(k.body.block)
    if with_setmaxnreg:
        (bd if in_device_function else bk).setmaxnreg("dec", 40)
    bk.call(dev, [])
    bd.return_()
    bk.return_()
    return m, k


@pytest.mark.parametrize("in_device_function", [False, True])
def test_setmaxnreg_anywhere_gives_the_kernel_minctasm_1(in_device_function):
    m, k = _module(True, in_device_function)
    assert kernel_attributes(m) == 1
    assert k.attrs["minctasm"] == 1


def test_no_setmaxnreg_no_minctasm_and_a_given_value_is_kept():
    m, k = _module(False)
    assert kernel_attributes(m) == 0 and "minctasm" not in k.attrs
    m, k = _module(True)
    k.attrs["minctasm"] = 2
    kernel_attributes(m)
    assert k.attrs["minctasm"] == 2


def test_run_passes_names_the_pass_that_broke_the_ir(monkeypatch):
    def breaks(module):
        module.kernels[0].body.block.ops.pop()          # drops func.return
    monkeypatch.setattr(pipeline, "PIPELINE", (breaks,))
    m, _ = _module(False)
    with pytest.raises(VerificationError, match="after pass breaks: .*must end in func.return"):
        pipeline.run_passes(m, verify_each=True)
    m, _ = _module(False)
    with pytest.raises(VerificationError, match="after the passes: "):
        pipeline.run_passes(m)
