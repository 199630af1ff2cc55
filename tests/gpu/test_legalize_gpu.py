"""Python's // and % (legalized into primitives, passes/legalize_arith.py) on the H200 against
CPython, bit for bit, on f64 and f32 edge cases (signed zeros, infinities, NaN, subnormal and
huge operands), and the primitives the rewrite added (math.copysign, arith.cmp 'one'). On the
GPU ``rem`` (fmod) is exact while |a / b| < 2**mantissa-bits (backend/lower_arith.fmod), so
pairs beyond that are left out; the simulator is checked on all of them
(tests/passes/test_legalize.py)."""
import math
import struct

import numpy as np
import pytest

import warpstage as ws

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.gpu

EDGE = [0.0, -0.0, 1.0, -1.0, 0.1, -0.1, 3.0, -7.5, 2.5, math.inf, -math.inf, math.nan,
        1e300, -1e300, 5e-324, -5e-324, 1e-310, 2.0 ** 53, -(2.0 ** 53) - 2, 1e16 + 2]


@ws.kernel
def _floor_ops(a: ws.Tensor, b: ws.Tensor, q: ws.Tensor, r: ws.Tensor, n: ws.Int32):
    i = ws.arch.block_idx()[0] * ws.arch.block_dim()[0] + ws.arch.thread_idx()[0]
    if i < n:
        q[i] = a[i] // b[i]
        r[i] = a[i] % b[i]


def _exact_on_gpu(x, y, mantissa):
    if not (math.isfinite(x) and math.isfinite(y)):
        return True
    return abs(x / y) < 2.0 ** mantissa if x / y == x / y else True


def _same(got, want):
    if math.isnan(want):
        return math.isnan(got)
    return struct.pack("<d", got) == struct.pack("<d", want)


@pytest.mark.parametrize("dtype,mantissa", [(torch.float64, 52), (torch.float32, 23)], ids=str)
def test_float_floordiv_and_mod_equal_python(dtype, mantissa):
    def cast(v):                                    # f32: rounded, overflowing to inf
        with np.errstate(over="ignore"):
            return v if dtype == torch.float64 else float(np.float32(v))
    pairs = [(cast(x), cast(y)) for x in EDGE for y in EDGE if cast(y) != 0]
    pairs = [(x, y) for x, y in pairs if _exact_on_gpu(x, y, mantissa)]
    a = torch.tensor([p[0] for p in pairs], dtype=dtype, device="cuda")
    b = torch.tensor([p[1] for p in pairs], dtype=dtype, device="cuda")
    q, r = torch.empty_like(a), torch.empty_like(a)
    _floor_ops[(len(pairs) + 127) // 128, 128](a, b, q, r, len(pairs))
    torch.cuda.synchronize()
    bad = []
    for (x, y), gq, gr in zip(pairs, q.tolist(), r.tolist()):
        wq, wr = cast(x // y), cast(x % y)
        if not (_same(gq, wq) and _same(gr, wr)):
            bad.append((x, y, gq, wq, gr, wr))
    assert not bad, f"{dtype} (a, b, got //, python //, got %, python %) {bad[:5]}"
