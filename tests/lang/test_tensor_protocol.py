"""Python's protocols on a dynamic tensor inside a kernel (lang/tensor.py): truth value, len(),
iteration and ``in`` are each an UnsupportedError saying what, on which tensor, why, and the
fix — and the fix each suggests compiles and computes what was meant."""
import numpy as np
import pytest

import warpstage as ws

T = ws.Tensor[ws.Float32, 1]


def _error(body):
    with pytest.raises(ws.UnsupportedError) as ei:
        ws.kernel(body)[1, 32](np.zeros(4, np.float32), np.zeros(1, np.float32))
    return str(ei.value)


def k_bool(x: T, out: T):
    if x:
        out[0] = 1.0


def k_len(x: T, out: T):
    out[0] = ws.Float32(len(x))


def k_iter(x: T, out: T):
    a, b = x
    out[0] = a + b


def k_in(x: T, out: T):
    if 2.0 in x:
        out[0] = 1.0


@pytest.mark.parametrize("body, what, fix", [
    (k_bool, "a tensor used as a truth value", "`if x.shape[0] > 0:`"),
    (k_len, "len() of a tensor", "x.shape[0]"),
    (k_iter, "iterating over a tensor", "for i in ws.range(x.shape[0]): v = x[i]"),
    (k_in, "`v in x` on a tensor", "found = found or x[i] == v"),
])
def test_each_protocol_is_an_error_with_the_tensor_and_a_fix(body, what, fix):
    msg = _error(body)
    first, last = msg.splitlines()[0], msg.splitlines()[-1]
    assert first.startswith(what) and first.endswith(", on a dynamic ws.Tensor[Float32, 1]"), msg
    assert f'File "{__file__}", line ' in msg
    assert last.startswith("Fix: ") and fix in last, msg


def test_the_suggested_fixes_compute_what_was_meant():
    @ws.kernel
    def k(x: T, out: T, v: ws.Float32):
        n = x.shape[0]                                   # instead of len(x)
        s = ws.Float32(0.0)
        found = False
        for i in ws.range(x.shape[0]):                   # instead of `for v in x`
            s = s + x[i]
            found = found or x[i] == v                   # instead of `v in x`
        if x.shape[0] > 0:                               # instead of `if x:`
            out[0] = s
        out[1] = ws.Float32(n)
        out[2] = 1.0 if found else 0.0

    x = np.array([1.0, 2.0, 4.0], np.float32)
    for v, seen in ((2.0, 1.0), (3.0, 0.0)):
        out = np.zeros(3, np.float32)
        k[1, 32](x, out, v)
        assert out.tolist() == [7.0, 3.0, seen]
