"""The launch fast path gives exactly the keys and ABI leaves of the full classification."""
from typing import NamedTuple

import numpy as np
import pytest

import warpstage as ws
from warpstage.jit.kernel import _tensor_adapter
from warpstage.frontend.kinds import make_binder
from warpstage.frontend.binding_time import classify


class Cfg:
    def __init__(self):
        self.tile = 64


class P(NamedTuple):
    a: int


@pytest.mark.parametrize("value, ann", [
    (3, None), (2 ** 40, None), (1.5, None), (True, None), (7, ws.Int64), (2.5, ws.Float32),
    (np.zeros((4, 6), np.float32), None), (np.zeros((4, 6), np.float16)[:, ::2], ws.Tensor),
    (np.zeros(5, np.int32), ws.Tensor[ws.Int32, 1]), (Cfg(), None), ("s", None), (None, None),
    (4, ws.Static[int]), (ws.Float16, None),
    ((), None), ((1, 2), None), ([1.0], None), ((np.zeros((4, 6), np.float32), 3, (Cfg(), [True])), None),
])
def test_fast_key_and_leaves_match_classify(value, ann):
    keys, leaves = [], []
    assert make_binder(ann, False, _tensor_adapter)(value, keys, leaves)
    spec = classify(value, ann, "p", tensor_adapter=_tensor_adapter)
    assert keys == [spec.key]
    full = []
    spec.host_leaves(value, full)
    assert [type(x).__name__ for x in leaves] == [type(x).__name__ for x in full]
    assert [x for x in leaves if not hasattr(x, "data_ptr")] == [x for x in full if not hasattr(x, "data_ptr")]


@pytest.mark.parametrize("value", [{"a": 1}, P(1), (1, {"a": 1}), [np.int32(3)]])
def test_composites_take_the_full_path(value):
    assert not make_binder(None, False, _tensor_adapter)(value, [], [])


@pytest.mark.parametrize("make", [
    lambda torch: torch.zeros(4, 6),
    lambda torch: torch.zeros(4, 6, dtype=torch.float16)[:, ::2],
    lambda torch: torch.zeros(3, 5, dtype=torch.bfloat16).t(),
    lambda torch: torch.zeros(7, dtype=torch.int32)[1:],          # base not 16-byte aligned
])
def test_torch_fast_path_matches_classify(make):
    torch = pytest.importorskip("torch")
    t = make(torch)
    for _ in range(2):                     # the second call uses the memoized geometry key
        keys, leaves = [], []
        assert make_binder(ws.Tensor, False, _tensor_adapter)(t, keys, leaves)
        spec = classify(t, ws.Tensor, "t", tensor_adapter=_tensor_adapter)
        full = []
        spec.host_leaves(t, full)
        assert keys == [spec.key]
        assert leaves[0].data_ptr == full[0].data_ptr and leaves[1:] == full[1:]
