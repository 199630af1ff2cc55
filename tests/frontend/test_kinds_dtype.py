"""The dtype kind (frontend/kinds/dtype.py): a torch or numpy dtype object is a static argument
keyed by the element type it names, stable across processes, stored on disk and bound back."""
import numpy as np
import pytest

import warpstage as ws
from warpstage.core.static_key import is_stable
from warpstage.errors import ArgumentError
from warpstage.frontend.kinds import classify, make_binder, param_change
from warpstage.frontend.kinds.dtype import DTypeKind
from warpstage.jit.kernel import _tensor_adapter
from warpstage.jit.loaded import bind_host_args, describe_params


@ws.kernel
def fill(out: ws.Tensor, dt, n: ws.Int32):             # `dt`: a dtype object, static (rule 7)
    i = ws.arch.thread_idx()[0]
    if i < n:
        out[i] = ws.Float32(dt.itemsize)        # the object itself, read while compiling


def _dtypes():
    out = [np.dtype("float32"), np.dtype("float16"), np.dtype(">f4")]
    try:
        import torch
    except ImportError:
        return out
    return out + [torch.float32, torch.bfloat16]


@pytest.mark.parametrize("dt", _dtypes(), ids=repr)
def test_a_dtype_is_static_by_rule_7_and_keyed_by_name(dt):
    spec = classify(dt, None, "dt")
    assert type(spec) is DTypeKind and (spec.rule, spec.binding) == (7, "static")
    assert spec.key[1][:2] == ("dtype", type(dt).__module__.split(".")[0])
    assert is_stable(spec.key)                   # the same in every process: stored on disk
    keys, leaves = [], []
    assert make_binder(None, False, _tensor_adapter)(dt, keys, leaves)
    assert keys == [spec.key] and leaves == []


def test_byte_order_and_library_are_part_of_the_key():
    keys = {classify(d).key for d in (np.dtype("<f4"), np.dtype(">f4"), np.dtype("<f2"))}
    assert len(keys) == 3


def test_static_annotation_keys_a_dtype_by_name_too():
    spec = classify(np.dtype("float16"), ws.Static[np.dtype], "dt")
    assert (type(spec), spec.rule) == (DTypeKind, 1)
    keys = []
    assert make_binder(ws.Static[np.dtype], False, _tensor_adapter)(np.dtype("float16"), keys, [])
    assert keys == [spec.key]
    with pytest.raises(ArgumentError, match=r"annotated ws.Static\[dtype\] but got a str"):
        classify("f2", ws.Static[np.dtype], "dt")


def test_a_kernel_specializes_per_dtype_and_says_why(target):
    out = target.array(np.zeros(4, np.float32))
    kern = ws.kernel(fill.fn)
    kern[1, 32](out, np.dtype("float16"), 4)
    assert target.numpy(out).tolist() == [2.0] * 4
    kern[1, 32](out, np.dtype("float64"), 4)
    assert target.numpy(out).tolist() == [8.0] * 4
    kern[1, 32](out, np.dtype("float64"), 4)
    assert kern.trace_count == 2
    old, new = (classify(np.dtype(n)) for n in ("float16", "float64"))
    assert param_change(old, new) == "dtype('float16') -> dtype('float64')"
    assert new.row("dt")[:4] == ("dt", "7", "static", "numpy dtype = dtype('float64')")


def test_a_torch_dtype_argument_launches(target):
    torch = pytest.importorskip("torch")
    out = target.array(np.zeros(4, np.float32))
    kern = ws.kernel(fill.fn)
    kern[1, 32](out, torch.bfloat16, 4)
    assert target.numpy(out).tolist() == [2.0] * 4


def test_stored_form_binds_the_same_dtype_and_rejects_another():
    specs = [classify(np.dtype("float16"), None, "dt")]
    params = describe_params(specs)
    assert params == [{"k": "dtype", "key": ["dtype", "numpy", "<f2", "float16"],
                       "desc": specs[0].desc}]
    assert bind_host_args(params, ["dt"], (np.dtype("float16"),), {}) == []
    with pytest.raises(ArgumentError, match=r"parameter 'dt': this compiled kernel was "
                                            r"specialized for the static dtype .*float16.*got dtype\('float32'\)"):
        bind_host_args(params, ["dt"], (np.dtype("float32"),), {})
