"""warpstage/runtime/torch_library.py (``ws.torch``): warpstage kernels as torch.library custom
ops (``ws.torch.custom_op``, ``torch.ops.warpstage.flash_attention``), traced by ``torch.compile(fullgraph=True)`` without a
graph break. On the CPU the kernels run in the simulator and torch.compile uses the 'aot_eager'
backend (no C++ compiler needed); tests/test_torch_compile_gpu.py compiles with inductor on
the GPU."""
import subprocess
import sys

import numpy as np
import pytest

import warpstage as ws

torch = pytest.importorskip("torch")
# CPU tensors throughout: the simulator, also on a machine with a GPU (where the default
# target is 'cuda' and these calls would be told to move their tensors)
pytestmark = pytest.mark.usefixtures("sim_target")


@ws.kernel
def scale_add(a: ws.Tensor, b: ws.Tensor, out: ws.Tensor, s: ws.Float32, n: ws.Int32):
    i = ws.arch.block_idx()[0] * ws.arch.block_dim()[0] + ws.arch.thread_idx()[0]
    if i < n:
        out[i] = a[i] * s + b[i]


def _scale_add(a: torch.Tensor, b: torch.Tensor, s: float) -> torch.Tensor:
    out = torch.empty_like(a)
    n = a.numel()
    scale_add[(n + 63) // 64, 64](a, b, out, s, n)
    return out


SCALE_ADD = ws.torch.custom_op("warpstage_test::scale_add", _scale_add, mutates_args=(),
                               fake=lambda a, b, s: torch.empty_like(a))


def test_importing_warpstage_does_not_import_torch():
    code = "import sys, warpstage as ws; ws.ops; assert 'torch' not in sys.modules, 'imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_custom_op_runs_the_kernel():
    a, b = torch.arange(100.0), torch.ones(100)
    torch.testing.assert_close(SCALE_ADD(a, b, 3.0), a * 3 + b)
    torch.testing.assert_close(torch.ops.warpstage_test.scale_add(a, b, 2.0), a * 2 + b)


def test_a_custom_op_compiles_without_graph_breaks():
    def model(a, b):
        return torch.relu(SCALE_ADD(a - 50, b, 2.0)) * 0.5
    a, b = torch.arange(100.0), torch.ones(100)
    compiled = torch.compile(model, fullgraph=True, backend="aot_eager")
    torch.testing.assert_close(compiled(a, b), model(a, b))


def test_the_fake_gives_the_shape_without_running_a_kernel():
    from torch._subclasses.fake_tensor import FakeTensorMode
    import warpstage.ops.torch_ops  # noqa: F401  (registers torch.ops.warpstage.*)
    with FakeTensorMode():
        q, k, v = (torch.empty(2, 3, 40, 64, dtype=torch.float16) for _ in range(3))
        o = torch.ops.warpstage.flash_attention(q, k, v, True, None, "top_left", None, None,
                                                "auto")
        assert o.shape == (2, 3, 40, 64) and o.dtype == torch.float16


def _stub_eager(monkeypatch):
    from warpstage.ops import attention
    calls = []

    def eager(q, k, v, causal=False, scale=None, *, causal_align="top_left", return_lse=False,
              tile_n=None, num_stages=None, mma="auto"):
        calls.append((causal, scale, tile_n, num_stages, mma))
        if isinstance(q, np.ndarray):
            return q
        return torch.softmax(q @ k.transpose(-1, -2) * scale, -1) @ v
    monkeypatch.setattr(attention, "flash_attention_eager", eager)
    return calls


def test_an_eager_call_does_not_register_the_ops():
    # f32 tensors: the call passes the dispatch (which declines: not compiling), then the
    # eager function's dtype check raises, so no kernel runs in the simulator
    code = ("import sys, torch, warpstage as ws; q = torch.zeros(1, 1, 8, 64)\n"
            "try:\n    ws.ops.flash_attention(q, q, q)\nexcept ws.ArgumentError:\n    pass\n"
            "assert 'warpstage.ops.torch_ops' not in sys.modules, 'registered'; "
            "assert not hasattr(torch.ops.warpstage, 'flash_attention'), 'an op'")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_flash_attention_with_torch_tensors_goes_through_the_op(monkeypatch):
    calls = _stub_eager(monkeypatch)
    q, k, v = (torch.randn(1, 2, 8, 64) for _ in range(3))

    def block(q, k, v):
        return ws.ops.flash_attention(q, k, v, scale=0.5, tile_n=64) * 2
    compiled = torch.compile(block, fullgraph=True, backend="aot_eager")
    torch.testing.assert_close(compiled(q, k, v), block(q, k, v))
    assert calls[-1] == (False, 0.5, 64, None, "auto") and len(calls) >= 2


def test_arguments_outside_the_schema_take_the_eager_path_and_its_errors():
    q = torch.zeros(1, 1, 8, 64, dtype=torch.float16)
    with pytest.raises(ws.ArgumentError, match="causal"):
        ws.ops.flash_attention(q, q, q, causal=1)


def test_numpy_does_not_go_through_the_op(monkeypatch):
    calls = _stub_eager(monkeypatch)
    q = np.zeros((1, 1, 8, 64), np.float32)
    assert ws.ops.flash_attention(q, q, q, scale=0.5) is q
    assert calls == [(False, 0.5, None, None, "auto")]


def test_matmul_goes_through_its_op_and_the_fake_gives_the_shape(monkeypatch):
    from torch._subclasses.fake_tensor import FakeTensorMode
    from warpstage.ops import matmul_host
    import warpstage.ops.torch_ops  # noqa: F401  (registers torch.ops.warpstage.*)
    calls = []

    def eager(a, b, *, out=None, out_dtype=None, epilogue=None, **policy):
        calls.append((out, out_dtype, epilogue))
        return (a.float() @ b.float()).to(out_dtype or a.dtype)
    monkeypatch.setattr(matmul_host, "matmul_eager", eager)
    with FakeTensorMode():
        a, b = torch.empty(3, 40, 64, dtype=torch.bfloat16), torch.empty(64, 24, dtype=torch.bfloat16)
        c = torch.ops.warpstage.matmul(a, b, torch.float32, None, None, "M", 8, "cooperative")
        assert c.shape == (3, 40, 24) and c.dtype == torch.float32

    def mlp(x, w):
        return torch.relu(ws.ops.matmul(x, w, out_dtype=torch.float32)) + 1
    x, w = torch.randn(8, 64).to(torch.bfloat16), torch.randn(64, 32).to(torch.bfloat16)
    compiled = torch.compile(mlp, fullgraph=True, backend="aot_eager")
    torch.testing.assert_close(compiled(x, w), mlp(x, w))
    assert calls and all(c == (None, torch.float32, None) for c in calls)
    out = torch.empty(8, 32, dtype=torch.bfloat16)
    ws.ops.matmul(x, w, out=out)                             # out=: the eager function itself
    assert calls[-1][0] is out
