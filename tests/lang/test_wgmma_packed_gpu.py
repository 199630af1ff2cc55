"""Packed A fragments on the H200: the simulator tests' kernels (tests/lang/test_wgmma_packed.py)
against numpy: the register bits of cvt.rn.bf16x2.f32 / .f16x2.f32 (which half holds which
element) and the GEMM chain whose second wgmma reads them."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

import warpstage as ws  # noqa: E402
from test_wgmma_packed import (Chain, _values, bf16_bits_rne, chain,  # noqa: E402
                               pack_bits)

pytestmark = [pytest.mark.gpu, pytest.mark.filterwarnings("ignore::warpstage.RecompileWarning")]


def _cuda(bits, dtype):
    bits = np.ascontiguousarray(bits)
    if dtype is ws.BFloat16:
        return torch.from_numpy(bits.view(np.int16)).view(torch.bfloat16).cuda()
    return torch.from_numpy(bits).cuda()


@pytest.mark.parametrize("case", [Chain(), Chain(k=32, m=64, n=32, dtype=ws.Float16),
                                  Chain(packed=False), Chain(m=32, n=8, reps=3)], ids=repr)
def test_chain_on_gpu(case):
    rng = np.random.default_rng(0)
    a, a_h = _values(case.dtype, rng.standard_normal((64, case.k)))
    b, b_h = _values(case.dtype, rng.standard_normal((case.k, case.m)))
    c, c_h = _values(case.dtype, rng.standard_normal((case.m, case.n)))
    d = torch.full((64, case.n), float("nan"), device="cuda")
    chain[1, 128](case, _cuda(a_h, case.dtype), _cuda(b_h.T, case.dtype),
                  _cuda(c_h.T, case.dtype), d, case.reps)
    torch.cuda.synchronize()
    p, _ = _values(case.dtype, (a @ b).astype(np.float32))
    np.testing.assert_allclose(d.cpu().numpy(), case.reps * (p @ c), rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("bf16", [True, False])
def test_pack_register_bits_on_gpu(bf16):
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((32, 4)) * 100).astype(np.float32)
    x[0, :] = [1.0 + 2 ** -8, 1.0 + 3 * 2 ** -8, -0.0, np.inf]
    out = torch.zeros((32, 2), dtype=torch.int32, device="cuda")
    back = torch.zeros((32, 4), device="cuda")
    pack_bits[1, 32](torch.from_numpy(x).cuda(), out, back, bf16)
    torch.cuda.synchronize()
    bits = (bf16_bits_rne(x) if bf16 else x.astype(np.float16).view(np.uint16)).astype(np.uint32)
    want = (bits[:, 0::2] | (bits[:, 1::2] << 16)).view(np.int32)
    np.testing.assert_array_equal(out.cpu().numpy(), want)
