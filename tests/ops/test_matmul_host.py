"""ws.ops.matmul's host path on the pretend GPU of tests/fake_gpu.py (CPU torch tensors posing as
cuda:0, kernels traced but not assembled, launches recorded): the launches it makes per shape
(one persistent GEMM, or with split-K the GEMM into the f32 workspace and the reduction), the
kept descriptors, and the launch fast path (no full re-classification on a repeated call); the
op's own errors for tensors in host memory on the 'cuda' target and for an output or epilogue
operand on another device (before: the TMA descriptor's or the kernel parameter's error)."""
import pytest

import warpstage as ws
from fake_gpu import ENCODED, install
from misuse_kit import raised
from warpstage.ops import descriptors, matmul_host
from warpstage.runtime import target as target_module

torch = pytest.importorskip("torch")


class _Props:
    sm_count = 132
    cc_major = 9


@pytest.fixture
def fake_gpu(monkeypatch):
    monkeypatch.setattr(descriptors, "_DESCRIPTORS", {})
    monkeypatch.setattr(target_module, "_properties", {0: _Props()})
    launches = install(monkeypatch, torch)
    # kernels of their own: their call paths read the pretend device
    monkeypatch.setattr(matmul_host, "matmul_kernel", ws.kernel(matmul_host.matmul_kernel.fn))
    monkeypatch.setattr(matmul_host, "splitk_reduce", ws.kernel(matmul_host.splitk_reduce.fn))
    return launches


def _bf16(*shape):
    return torch.zeros(shape, dtype=torch.bfloat16)


def test_a_large_shape_is_one_persistent_launch_with_kept_descriptors(fake_gpu, monkeypatch):
    a, w, c = _bf16(4096, 4096), _bf16(4096, 4096), _bf16(4096, 4096)
    ws.ops.matmul(a, w.T, out=c)
    # later calls bind on the launch fast path: no parameter is classified in full again
    monkeypatch.setattr(matmul_host.matmul_kernel, "specs",
                        lambda *args, **kw: pytest.fail("the launch took the full path"))
    assert len(fake_gpu) == 1 and fake_gpu[0][1] == (132, 1, 1) and fake_gpu[0][2] == (384, 1, 1)
    encoded = len(ENCODED)
    assert encoded == 3
    traces = matmul_host.matmul_kernel.trace_count
    for _ in range(3):
        ws.ops.matmul(a, w.T, out=c)
    assert len(ENCODED) == encoded and matmul_host.matmul_kernel.trace_count == traces
    assert len(fake_gpu) == 4


def test_a_small_m_shape_splits_k_into_a_workspace_and_reduces(fake_gpu):
    x, w = _bf16(16, 4096), _bf16(4096, 4096)
    out = ws.ops.matmul(x, w.T)
    assert out.shape == (16, 4096) and out.dtype == torch.bfloat16
    gemm, reduce = fake_gpu
    tm, tn, _, splits = matmul_host.choose_config(16, 4096, 4096, 1, 132)
    assert splits > 1 and gemm[1] == (-(-4096 // tn) * splits, 1, 1)
    assert gemm[2] == (128 + tm * 2, 1, 1)                 # producer + tm / 64 consumer WGs
    assert reduce[1] == (-(-16 * 4096 // matmul_host.REDUCE_THREADS), 1, 1)
    assert reduce[2] == (matmul_host.REDUCE_THREADS, 1, 1)
    assert splits in gemm[5] and splits in reduce[5]


@pytest.mark.parametrize("m, ctas", [(128, 64), (256, 128)])
def test_a_prefill_shape_is_one_launch_of_64_row_tiles_without_a_workspace(fake_gpu, m, ctas):
    """M = 128 / 256 against a 4096 x 4096 weight: 64 x 128 tiles (2 / 4 x 32 of them), one
    consumer warpgroup (256 threads), no split: the one GEMM launch and no reduction (measured
    1.6x faster than 128 x 256 tiles with 4-8 K splits, docs/matmul.md)."""
    x, w = _bf16(m, 4096), _bf16(4096, 4096)
    out = ws.ops.matmul(x, w.T)
    assert out.shape == (m, 4096)
    assert len(fake_gpu) == 1
    (gemm,) = fake_gpu
    assert gemm[1] == (ctas, 1, 1) and gemm[2] == (256, 1, 1)
    assert matmul_host.choose_config(m, 4096, 4096, 1, 132)[:2] == (64, 128)



def _count_policies(monkeypatch) -> list:
    """A list that grows by one per ``Matmul`` constructed (each derives its smem layouts)."""
    made = []
    init = matmul_host.Matmul.__init__

    def counting(self, *args, **kw):
        made.append(kw)
        init(self, *args, **kw)
    monkeypatch.setattr(matmul_host.Matmul, "__init__", counting)
    return made


def test_a_repeated_scaled_matmul_builds_no_policy_descriptor_or_trace(fake_gpu, monkeypatch):
    # the host-path defect of issue 13: each call built a new Matmul for its Scales epilogue
    # (the smem layouts: ~0.6 ms per call on the H200's host, 169 TFLOP/s end to end at 4096^3
    # against the kernel's 1356); a call with new scale tensors must reuse the configuration
    a = torch.zeros(4096, 4096, dtype=torch.float8_e4m3fn)
    w = torch.zeros(4096, 4096, dtype=torch.float8_e4m3fn)
    ws.ops.scaled_matmul(a, w.T, torch.tensor(1.0), torch.tensor(2.0))
    made = _count_policies(monkeypatch)
    encoded, traces = len(ENCODED), matmul_host.matmul_kernel.trace_count
    for i in range(3):
        ws.ops.scaled_matmul(a, w.T, torch.tensor(float(i)), torch.tensor(1.0),
                             bias=torch.zeros(4096))
        ws.ops.scaled_matmul(a, w.T, torch.tensor(float(i)), torch.tensor(1.0))
    assert made == []
    assert len(ENCODED) == encoded
    assert matmul_host.matmul_kernel.trace_count == traces + 1      # the bias variant, once
    assert len(fake_gpu) == 7


def test_a_repeated_matmul_with_an_epilogue_builds_no_policy(fake_gpu, monkeypatch):
    a, w, c = _bf16(512, 512), _bf16(512, 512), _bf16(512, 512)
    ws.ops.matmul(a, w.T, out=c, epilogue=ws.ops.BiasGelu(torch.zeros(512)))
    made = _count_policies(monkeypatch)
    for _ in range(3):
        ws.ops.matmul(a, w.T, out=c, epilogue=ws.ops.BiasGelu(torch.zeros(512)))
    assert made == [] and len(fake_gpu) == 4


def _cpu(t):
    t._test_device = -1                 # fake_gpu: this tensor object reports the CPU
    return t


def test_host_tensors_on_the_cuda_target_are_the_ops_error(fake_gpu):
    a, wt = _cpu(_bf16(256, 128)), _cpu(_bf16(256, 128).T)
    raised(ws.ArgumentError, __file__, "marker: host", lambda: ws.ops.matmul(a, wt),  # marker: host
           "ws.ops.matmul: a and b are torch tensors in host memory (cpu)",
           "the target is 'cuda'", "Fix: a.cuda() and b.cuda(), or ws.set_target('sim')")
    a8 = _cpu(torch.zeros(256, 128).to(torch.float8_e4m3fn))
    w8 = _cpu(torch.zeros(256, 128).to(torch.float8_e4m3fn).T)
    s = _cpu(torch.ones(()))
    raised(ws.ArgumentError, __file__, "marker: host fp8",
           lambda: ws.ops.scaled_matmul(a8, w8, s, s),  # marker: host fp8
           "ws.ops.scaled_matmul: a and b are torch tensors in host memory")
    assert not fake_gpu


def test_out_and_epilogue_operands_on_another_device(fake_gpu):
    a, wt = _bf16(256, 128), _bf16(128, 256)
    c = _cpu(_bf16(256, 256))
    raised(ws.ArgumentError, __file__, "marker: out",
           lambda: ws.ops.matmul(a, wt, out=c),  # marker: out
           "ws.ops.matmul: out is on cpu, a on cuda:0", "expected one device",
           "Fix: out=torch.empty((256, 256)")
    bias = _cpu(torch.zeros(256))
    raised(ws.ArgumentError, __file__, "marker: bias",
           lambda: ws.ops.matmul(a, wt, epilogue=ws.ops.BiasGelu(bias)),  # marker: bias
           "ws.ops.matmul: bias is on cpu, a on cuda:0")
    assert not fake_gpu
