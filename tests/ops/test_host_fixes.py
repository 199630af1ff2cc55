"""The ops' host argument errors speak the user's framework (warpstage/ops/host_fixes.py), and
``out=`` is checked at the call: a numpy user is shown numpy code, a read-only ``out`` is
refused before anything runs."""
import numpy as np
import pytest

import warpstage as ws
from warpstage.ops import host_fixes

pytestmark = pytest.mark.usefixtures("sim_target")


def test_a_numpy_user_is_shown_numpy_code():
    a = np.zeros((64, 64), np.float32)
    with pytest.raises(ws.ArgumentError) as info:
        ws.ops.matmul(a, a)
    fix = str(info.value).split("Fix: ")[1]
    assert "x.astype(ml_dtypes.bfloat16)" in fix and "torch" not in fix, fix
    q = np.zeros((1, 1, 16, 64), np.float32)
    with pytest.raises(ws.ArgumentError) as info:
        ws.ops.flash_attention(q, q, q)
    fix = str(info.value).split("Fix: ")[1]
    assert "astype(ml_dtypes.bfloat16)" in fix and "torch" not in fix, fix


def test_a_wrong_out_is_described_with_numpy_code():
    a = np.zeros((64, 64), np.float16)
    with pytest.raises(ws.ArgumentError) as info:
        ws.ops.matmul(a, a, out=np.zeros((64, 32), np.float16))
    assert "out=np.empty((64, 64), dtype=np.float16)" in str(info.value), str(info.value)


def test_a_read_only_out_is_refused_at_the_call():
    a = np.zeros((64, 64), np.float16)
    out = np.zeros((64, 64), np.float16)
    out.setflags(write=False)
    with pytest.raises(ws.ArgumentError, match=r"(?s)out is a read-only array.*Fix: pass a "
                                               r"writable array \(out=np.empty"):
        ws.ops.matmul(a, a, out=out)
    assert not np.any(out)


class _Torchish:
    """An object whose class looks like torch's to framework() (torch is not needed)."""


_Torchish.__module__ = "torch"


@pytest.mark.parametrize("framework, cast, empty, contiguous", [
    ("numpy", "x.astype(ml_dtypes.bfloat16)", "np.empty((2, 3), dtype=np.float16)",
     "np.ascontiguousarray(x)"),
    ("torch", "x.to(torch.bfloat16)", "torch.empty((2, 3), dtype=torch.float16, device=a.device)",
     "x.contiguous()")])
def test_the_fix_code_per_framework(framework, cast, empty, contiguous):
    x = np.zeros(3) if framework == "numpy" else _Torchish()
    assert host_fixes.framework(None, x) == framework
    assert host_fixes.cast_code([x], "bfloat16") == cast
    assert host_fixes.empty_code([x], (2, 3), "float16") == empty
    assert host_fixes.contiguous_code([x]) == contiguous


def test_read_only_is_read_from_the_flags_and_the_array_interface():
    a = np.zeros(3)
    assert not host_fixes.is_read_only(a)
    a.setflags(write=False)
    assert host_fixes.is_read_only(a)

    class Interface:
        def __init__(self, readonly):
            self.__array_interface__ = {"data": (0, readonly), "shape": (1,), "typestr": "<f4"}
    assert host_fixes.is_read_only(Interface(True)) and not host_fixes.is_read_only(Interface(False))
