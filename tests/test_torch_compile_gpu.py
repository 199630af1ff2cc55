"""warpstage kernels inside ``torch.compile(fullgraph=True)`` models on the GPU (inductor): an
attention block calling ``ws.ops.flash_attention`` (the custom op
``torch.ops.warpstage.flash_attention``, warpstage/runtime/torch_library.py), an MLP on
``ws.ops.matmul`` (``torch.ops.warpstage.matmul``) and an MLP whose activation is a warpstage kernel registered
with ``ws.torch.custom_op``; each compiles without a graph break
(fullgraph) and matches eager."""
import pytest

torch = pytest.importorskip("torch")

import warpstage as ws  # noqa: E402

pytestmark = pytest.mark.gpu


@ws.kernel
def bias_relu(x: ws.Tensor, bias: ws.Tensor, out: ws.Tensor, cols: ws.Int32, n: ws.Int32):
    i = ws.arch.block_idx()[0] * ws.arch.block_dim()[0] + ws.arch.thread_idx()[0]
    if i < n:
        v = x[i] + bias[i % cols]
        out[i] = ws.math.max(v, 0.0)


def _bias_relu(x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    out = torch.empty_like(x)
    n = x.numel()
    bias_relu[(n + 255) // 256, 256](x.view(-1), bias, out.view(-1), bias.numel(), n)
    return out


BIAS_RELU = ws.torch.custom_op("warpstage_gpu_test::bias_relu", _bias_relu, mutates_args=(),
                               fake=lambda x, bias: torch.empty_like(x.contiguous()))


class Attention(torch.nn.Module):
    def __init__(self, dim=256, heads=4):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.out = torch.nn.Linear(dim, dim)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.heads, d // self.heads).unbind(2)
        o = ws.ops.flash_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                   causal=True)
        return x + self.out(o.transpose(1, 2).reshape(b, s, d))


class MatmulMLP(torch.nn.Module):
    """Both GEMMs through ws.ops.matmul (the op torch.ops.warpstage.matmul)."""

    def __init__(self, dim=256, hidden=512):
        super().__init__()
        self.up = torch.nn.Parameter(torch.randn(dim, hidden) * dim ** -0.5)
        self.down = torch.nn.Parameter(torch.randn(hidden, dim) * hidden ** -0.5)

    def forward(self, x):
        h = torch.nn.functional.gelu(ws.ops.matmul(x.reshape(-1, x.shape[-1]), self.up))
        return x + ws.ops.matmul(h, self.down).reshape(x.shape)


class MLP(torch.nn.Module):
    def __init__(self, dim=256, hidden=512):
        super().__init__()
        self.up = torch.nn.Linear(dim, hidden, bias=False)
        self.bias = torch.nn.Parameter(torch.randn(hidden) * 0.1)
        self.down = torch.nn.Linear(hidden, dim)

    def forward(self, x):
        return x + self.down(BIAS_RELU(self.up(x), self.bias))


@pytest.mark.parametrize("model_type", [Attention, MLP, MatmulMLP])
def test_a_model_compiles_without_graph_breaks_and_matches_eager(model_type):
    torch.manual_seed(0)
    model = model_type().cuda().to(torch.bfloat16).eval()
    x = torch.randn(2, 128, 256, device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        eager = model(x)
        compiled = torch.compile(model, fullgraph=True)(x)
    torch.testing.assert_close(compiled, eager, atol=2e-2, rtol=2e-2)


def test_the_custom_op_matches_torch():
    x = torch.randn(64, 512, device="cuda")
    bias = torch.randn(512, device="cuda")
    torch.testing.assert_close(BIAS_RELU(x, bias), torch.relu(x + bias))
