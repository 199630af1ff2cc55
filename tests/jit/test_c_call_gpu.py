"""The C-level call path (jit/c_call.py) on a real GPU: examples/vector_add launched by the stub
matches torch on every call as the key changes (dtype, alignment, strides, length), on torch's
current stream, on ``stream=``, inside a captured CUDA graph and through ``prepare()``; tensors
torch's DLPack reader cannot take raise as on the Python path instead of crashing.

With ``WARPSTAGE_CCALL=0`` (scripts/gpu_clevel.sh runs these both ways) the C path is off and
the tests that count its launches skip."""
import os

import pytest

torch = pytest.importorskip("torch")

import warpstage as ws  # noqa: E402
from warpstage.jit import c_env  # noqa: E402
from example_loader import load_example  # noqa: E402

pytestmark = pytest.mark.gpu

vadd = load_example("vector_add")
_ON = os.environ.get("WARPSTAGE_CCALL", "1") not in ("0", "false", "no", "off")


def _kernel():
    k = ws.kernel(vadd.vector_add.fn)
    a = torch.ones(8, device="cuda")
    k[1, 64](a, a, a, 8)
    c_env.stub_address()                        # compiled now, not in the background
    return k


def _entries(k, config):
    state = getattr(k[config], "cstate", None)
    return len(state.live.entries) if state is not None and hasattr(state, "live") else 0


def _case(kind, n):
    if kind == "contiguous":
        return [torch.randn(n, device="cuda") for _ in range(3)]
    if kind == "misaligned":
        return [torch.randn(n + 1, device="cuda")[1:] for _ in range(3)]
    if kind == "strided":
        return [torch.randn(2 * n, device="cuda")[::2] for _ in range(3)]
    return [torch.randn(n, device="cuda").half() for _ in range(3)]


def test_the_stub_launches_what_torch_computes():
    k = _kernel()
    for round_ in range(3):
        for kind in ("contiguous", "misaligned", "strided", "half"):
            a, b, out = _case(kind, 1000)
            out.fill_(float("nan"))
            k[4, 256](a, b, out, 1000)
            torch.cuda.synchronize()
            assert torch.equal(out, a + b), (kind, round_)
    if _ON:
        assert _entries(k, (4, 256)) == 4           # one entry per call signature


def test_streams_and_graph_capture():
    k = _kernel()
    a, b, out = _case("contiguous", 1000)
    side = torch.cuda.Stream()
    for _ in range(2):
        with torch.cuda.stream(side):               # torch's current stream
            k[4, 256](a, b, out, 1000)
    side.synchronize()
    assert torch.equal(out, a + b)
    out.zero_()
    for _ in range(2):
        k[4, 256, 0, side](a, b, out, 1000)         # stream=
    side.synchronize()
    assert torch.equal(out, a + b)
    k[4, 256](a, b, out, 1000)                      # warm: the entry for this configuration
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        k[4, 256](a, b, out, 1000)
    a.copy_(torch.randn_like(a))
    out.zero_()
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, a + b)


def test_prepared_launch():
    k = _kernel()
    a, b, out = _case("contiguous", 1000)
    p = k[4, 256].prepare(a, b, out, 1000)
    if _ON:
        assert p._c is not None
    p()
    torch.cuda.synchronize()
    assert torch.equal(out, a + b)
    c, d, e = _case("contiguous", 1000)
    p(c, d, e, 1000)
    torch.cuda.synchronize()
    assert torch.equal(e, c + d)


@pytest.mark.parametrize("make", [
    lambda: torch.zeros(1000, device="cuda").to_sparse(),
    lambda: torch.empty(1000, device="meta"),
    lambda: torch.zeros(1000).to(torch.float32),
], ids=["sparse", "meta", "cpu"])
def test_tensors_the_reader_cannot_take_raise(make):
    k = _kernel()
    a, b, out = _case("contiguous", 1000)
    k[4, 256](a, b, out, 1000)
    k[4, 256](a, b, out, 1000)
    with pytest.raises(Exception) as got:           # the Python path's error, whatever it is
        k[4, 256](make(), b, out, 1000)
    assert "Segmentation" not in str(got.value)
