"""The binding-time rules of DESIGN §2 as ws.explain reports them, and their errors."""
import dataclasses
import enum
from typing import NamedTuple

import numpy as np
import pytest

import warpstage as ws
from warpstage.frontend.binding_time import classify
from warpstage.jit.kernel import _tensor_adapter


def spec(value, ann=None, name="p", self_rule=False):
    return classify(value, ann, name, self_rule=self_rule, tensor_adapter=_tensor_adapter)


class Config:
    def __init__(self, stages=2):
        self.stages = stages


class Color(enum.Enum):
    RED = 1


@pytest.mark.parametrize("value, rule, binding, desc", [
    (True, 3, "dynamic", "Boolean"),
    (7, 3, "dynamic", "Int32"),
    (2 ** 40, 3, "dynamic", "Int64"),
    (1.5, 3, "dynamic", "Float32"),
    (None, 7, "static", "NoneType = None"),
    ("s", 7, "static", "str = 's'"),
    (ws.Float16, 7, "static", "type"),
    (Color.RED, 7, "static", "Color"),
    (Config(), 7, "static", "Config"),
    (len, 7, "static", "builtin_function_or_method"),
])
def test_rules_for_bare_values(value, rule, binding, desc):
    s = spec(value)
    assert (s.rule, s.binding) == (rule, binding)
    assert s.desc.startswith(desc)


def test_rule1_static_annotation_checks_type():
    s = spec(3, ws.Static[int])
    assert (s.rule, s.binding) == (1, "static")
    with pytest.raises(ws.ArgumentError, match=r"parameter 'p' is annotated ws.Static\[int\] but got a str"):
        spec("x", ws.Static[int])
    assert ws.Constexpr is ws.Static


def test_rule2_dynamic_annotation_range_checks():
    assert spec(5, ws.Int64).desc == "Int64"
    with pytest.raises(ws.ArgumentError, match=r"annotated Int32 but the int 4294967296 overflows it"):
        spec(2 ** 32, ws.Int32)


def test_rule2_tensor_annotation_checks_dtype_and_rank():
    a = np.zeros((3, 4), np.float32)
    s = spec(a, ws.Tensor[ws.Float32, 2])
    assert s.rule == 2 and s.binding == "dynamic"
    with pytest.raises(ws.ArgumentError, match=r"(?s)dtype Float32.*x.to\(torch.float16\)"):
        spec(a, ws.Tensor[ws.Float16, 2])
    with pytest.raises(ws.ArgumentError, match=r"got a 2-d tensor"):
        spec(a, ws.Tensor[ws.Float32, 1])
    with pytest.raises(ws.ArgumentError, match=r"annotated ws.Tensor but got a int"):
        spec(3, ws.Tensor)


def test_rule4_tensor_key_has_dtype_rank_unit_strides_alignment():
    a = np.zeros((3, 4), np.float32)
    s = spec(a)
    assert s.rule == 4
    assert s.key[:4] == ("tensor", "f32", 2, (False, True))
    t = spec(a.T)
    assert t.key[3] == (True, False)
    assert [n for n, _ in s.abi("a")] == ["a.data", "a.shape[0]", "a.shape[1]", "a.stride[0]"]


def test_self_rule_and_receiver_rule():
    assert spec(5, self_rule=True).binding == "static"
    assert spec(Config(), self_rule=False).binding == "static"


@ws.struct if hasattr(ws, "struct") else dataclasses.dataclass
class State:
    stages: ws.Static[int]
    index: ws.Int32


class Pair(NamedTuple):
    x: int
    name: str


def test_rule5_and_6_composites():
    s = spec(State(3, 1))
    assert s.rule == 5 and s.binding == "mixed"
    assert [n for n, _ in s.abi("st")] == ["st.index"]
    p = spec(Pair(1, "a"))
    assert p.rule == 5 and p.binding == "mixed"
    t = spec((1, 2.0, "x"))
    assert t.rule == 6 and [str(ty) for _, ty in t.abi("t")] == ["i32", "f32"]
    d = spec({"a": 1})
    assert d.rule == 6


def test_unkeyable_static_value_names_parameter():
    import threading

    class Holder:
        def __init__(self, table):
            self.table = table

    with pytest.raises(ws.ArgumentError, match=r"(?s)parameter .cfg..*cannot be keyed.*__static_key__"):
        classify(Holder(threading.Lock()), None, "cfg")    # no __dict__, __slots__ or buffer
    a, b = Holder(bytearray(b"abc")), Holder(bytearray(b"abd"))   # a buffer keys by content
    assert classify(a, None, "cfg").key != classify(b, None, "cfg").key
    b.table[2] = ord("c")
    assert classify(a, None, "cfg").key == classify(b, None, "cfg").key


def test_tensor_annotation_fixes_name_numpy_as_well_as_torch():
    with pytest.raises(ws.ArgumentError) as ei:
        spec([1, 2], ws.Tensor)
    assert "Fix: pass a tensor: a numpy array or CPU torch tensor (simulator)" in str(ei.value)
    with pytest.raises(ws.ArgumentError) as ei:
        spec(np.zeros(4, np.float32), ws.Tensor[ws.BFloat16, 1])
    assert ("torch: x.to(torch.bfloat16); numpy: x.astype(ml_dtypes.bfloat16)"
            in str(ei.value))
    with pytest.raises(ws.ArgumentError) as ei:
        spec(np.zeros(4, np.float32), ws.Tensor[ws.Float16, 1])
    assert "torch: x.to(torch.float16); numpy: x.astype(np.float16)" in str(ei.value)


def test_a_descriptor_is_described_by_its_static_parts():
    d = ws.tma.TensorDescriptor(np.zeros((64, 64), np.float16), (16, 64), swizzle=128,
                                oob_fill="nan", element_strides=(2, 1))
    s = spec(d)
    assert (s.rule, s.binding) == (5, "mixed")
    assert s.desc == "ws.tma.TensorDescriptor[Float16, rank 2]"
    assert s.key_desc == ("box=(16, 64) swizzle=128 oob_fill=nan l2_promotion=128 "
                          "element_strides=(2, 1)")
    t = spec(ws.tma.TensorDescriptor.spec(ws.Float16, (16, 64), oob_fill="nan",
                                          element_strides=(2, 1)))
    assert t.key == s.key and t.desc == s.desc and t.key_desc == s.key_desc
    with pytest.raises(ws.ArgumentError, match="got the class ws.tma.TensorDescriptor"):
        spec(ws.tma.TensorDescriptor)


@pytest.mark.parametrize("ann,value,fix", [
    (ws.Int32, "a", "Fix: pass an int."),
    (ws.Float32, "b", r"Fix: pass a float \(or an int\)."),
    (ws.Int32, int, r"Fix: pass an int; in ws.compile, the type ws.Int32 \(not the Python type\).")])
def test_rule2_scalar_annotation_says_what_to_pass(ann, value, fix):
    with pytest.raises(ws.ArgumentError, match=rf"(?s)parameter 'p' is annotated {ann.__name__} "
                                               rf"but got .*{fix}"):
        spec(value, ann)
