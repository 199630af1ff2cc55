"""The generated call path (jit/fast_call.py) on a real GPU: examples/vector_add called
through it again and again with arguments that change one key part at a time (dtype, alignment,
strides, length) matches torch on every call, takes memo hits, and recompiles only for new keys."""
import pytest

torch = pytest.importorskip("torch")

import warpstage as ws  # noqa: E402
from example_loader import load_example  # noqa: E402

pytestmark = pytest.mark.gpu

vadd = load_example("vector_add")


def _case(kind, n):
    if kind == "contiguous":
        return [torch.randn(n, device="cuda") for _ in range(3)]
    if kind == "misaligned":                     # base 4 bytes past a 16-byte boundary
        return [torch.randn(n + 1, device="cuda")[1:] for _ in range(3)]
    if kind == "strided":
        return [torch.randn(2 * n, device="cuda")[::2] for _ in range(3)]
    return [torch.randn(n, device="cuda").half() for _ in range(3)]


def test_hits_and_recompiles_on_the_gpu():
    k = ws.kernel(vadd.vector_add.fn)
    kinds = ["contiguous", "misaligned", "strided", "half"]
    for round_ in range(3):
        for kind in kinds:
            for n in (1000, 4097):
                a, b, out = _case(kind, n)
                out.fill_(float("nan"))
                k[(n + 255) // 256, 256](a, b, out, n)
                torch.cuda.synchronize()
                assert torch.equal(out, a + b), (kind, n, round_)
    assert k.trace_count == 4                    # one specialization per key, none per call
    assert len(k._fast.memo) == 8                # one call signature per (kind, length)


def test_a_cpu_tensor_after_a_hit_still_raises():
    k = ws.kernel(vadd.vector_add.fn)
    a, b, out = _case("contiguous", 64)
    k[1, 64](a, b, out, 64)
    k[1, 64](a, b, out, 64)
    with pytest.raises(ws.ArgumentError, match="CPU torch tensor"):
        k[1, 64](a.cpu(), b, out, 64)
