"""ws.ops.matmul on the H200 against torch.matmul in float32 (TF32 off): square sizes 64 to
16384, odd tails (M = 1, 17, 1000; K = 8, 24), the LLM shapes (M tokens in {1, 16, 128, 4096,
16384} x (N, K) in {(4096, 4096), (11008, 4096), (4096, 11008), (128256, 4096)}), all four
transposes, batched and broadcast operands, fp16 and the output dtypes, the epilogues, the
persistent tile orders, the ping-pong schedule, split-K (odd K, K not a multiple of the
split, tails, batched, epilogue after the reduction). The output is poisoned with NaN first,
so unwritten elements fail. The reference is the whole f32 product even at 16384^3 and
16384 x 128256 x 4096 (no sampled block: on the H200 those take ~0.15 and ~0.3 s in f32 and
at most ~30 GB with the NaN check and the error's temporaries); ``TOL`` is the relative
Frobenius error allowed per output dtype (its rounding is ~1.7e-3 for bf16, ~2.4e-4 for fp16)."""
import pytest

import warpstage as ws

pytestmark = [pytest.mark.gpu, pytest.mark.filterwarnings("ignore::warpstage.RecompileWarning")]
TOL = {"float16": 2e-3, "bfloat16": 1e-2, "float32": 1e-4}     # ||C - ref|| / ||ref||

LLM = [(m, n, k) for m in (1, 16, 128, 4096, 16384)
       for n, k in ((4096, 4096), (11008, 4096), (4096, 11008), (128256, 4096))]
SQUARE = [(s, s, s) for s in (64, 128, 256, 512, 1000, 1024, 2048, 4096, 8192, 16384)]
TAILS = [(1, 4096, 8), (17, 4096, 24), (1000, 1000, 24), (17, 17 * 8, 8), (1000, 56, 1000),
         (1, 8, 8), (129, 264, 65)]


def operands(m, n, k, dtype="bfloat16", ta=False, tb=False, batch=None, seed=0):
    import torch
    g = torch.Generator(device="cuda").manual_seed(seed)
    dt = getattr(torch, dtype)
    pre = () if batch is None else (batch,)
    a = torch.randn(pre + ((k, m) if ta else (m, k)), device="cuda", generator=g).to(dt)
    b = torch.randn(pre + ((n, k) if tb else (k, n)), device="cuda", generator=g).to(dt)
    return (a.transpose(-1, -2) if ta else a), (b.transpose(-1, -2) if tb else b)


def relative_error(c, ref) -> float:
    return float((c.float() - ref).norm() / ref.norm().clamp_min(1e-30))


def reference(a, b):
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    return torch.matmul(a.float(), b.float())


def check(a, b, out_dtype=None, tol=None, **kwargs):
    import torch
    odt = out_dtype or a.dtype
    shape = torch.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (a.shape[-2], b.shape[-1])
    out = torch.full(shape, float("nan"), dtype=odt, device="cuda")
    got = ws.ops.matmul(a, b, out=out, out_dtype=odt, **kwargs)
    assert got is out
    ref = reference(a, b)
    assert not torch.isnan(out).any(), "unwritten (NaN) elements"
    err = relative_error(out, ref)
    assert err < (tol or TOL[str(odt).replace("torch.", "")]), err
    return out


@pytest.mark.parametrize("m, n, k", SQUARE + TAILS, ids=lambda v: str(v))
def test_square_and_tails(m, n, k):
    check(*operands(m, n, k))


@pytest.mark.big_gpu_memory
@pytest.mark.parametrize("m, n, k", LLM, ids=lambda v: str(v))
def test_llm_shapes(m, n, k):
    check(*operands(m, n, k, tb=True))             # B = an nn.Linear weight (N, K), K-major


@pytest.mark.parametrize("m, n, k", [(m, n, k) for m in (64, 200, 256)
                                     for n, k in ((4096, 4096), (11008, 4096), (4096, 11008))],
                         ids=lambda v: str(v))
def test_small_m_plans(m, n, k):
    """The per-shape plan at the decode / prefill sizes between the LLM rows (64-row tiles,
    128 x 128 ones, K splits where it estimates them faster), on its own choice."""
    check(*operands(m, n, k, tb=True))


@pytest.mark.parametrize("ta, tb", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("m, n, k", [(1000, 1000, 1000), (4096, 4096, 4096), (200, 72, 8)])
def test_transposes(m, n, k, ta, tb):
    check(*operands(m, n, k, ta=ta, tb=tb))


@pytest.mark.parametrize("dtype, out_dtype", [("float16", "float16"), ("float16", "float32"),
                                              ("bfloat16", "float32"), ("bfloat16", "float16")])
def test_dtypes(dtype, out_dtype):
    import torch
    check(*operands(1000, 2000, 520, dtype=dtype), out_dtype=getattr(torch, out_dtype))


@pytest.mark.parametrize("ta, tb", [(False, False), (True, True)])
def test_batched(ta, tb):
    check(*operands(300, 520, 136, ta=ta, tb=tb, batch=5))
    a, _ = operands(300, 520, 136, batch=3)
    _, w = operands(1, 520, 136)                   # a 2-D (K, N) operand: folded into M
    check(a, w)
    a2 = operands(200, 8, 136)[0]                  # a 2-D (M, K) operand: broadcast (a copy)
    with pytest.warns(ws.ops.MatmulCopyWarning):
        check(a2, operands(1, 520, 136, batch=3)[1])


@pytest.mark.parametrize("tile_n, raster, group", [(64, "M", 1), (128, "N", 4), (192, "M", 8),
                                                   (256, "N", 16)])
def test_policies(tile_n, raster, group):
    check(*operands(2000, 3000, 704), tile_n=tile_n, raster=raster, group=group)


@pytest.mark.parametrize("tile_n", [64, 128])
@pytest.mark.parametrize("m, n, k, tb", [(4096, 4096, 4096, False), (1000, 1000, 24, True),
                                         (129, 520, 136, False), (4096, 11008, 4096, True)])
def test_pingpong(m, n, k, tb, tile_n):
    check(*operands(m, n, k, tb=tb), tile_n=tile_n, schedule="pingpong")
    check(*operands(300, 264, 136, batch=3), tile_n=tile_n, schedule="pingpong")


def test_epilogues():
    import torch
    import torch.nn.functional as F
    a, b = operands(1000, 4096, 1024, tb=True)
    bias = torch.randn(4096, device="cuda")
    ref = reference(a, b) + bias
    # GELU's tanh is PTX tanh.approx.f32 for |x| >= 0.55 (relative error about 2^-11)
    for epi, want, tol in ((ws.ops.BiasGelu(bias), F.gelu(ref, approximate="tanh"), 1e-3),
                           (ws.ops.BiasSilu(bias), F.silu(ref), 1e-4)):
        out = ws.ops.matmul(a, b, out_dtype=torch.float32, epilogue=epi)
        assert relative_error(out, want) < tol


def test_copied_layouts():
    a, b = operands(100, 72, 30)                   # rows of 60 bytes: copied, with a warning
    with pytest.warns(ws.ops.MatmulCopyWarning):
        check(a, b[:, 1:])                         # N = 71 (an unaligned view too)


@pytest.mark.parametrize("m, n, k, splits, tb", [
    (1, 4096, 4096, 8, True), (16, 4096, 11008, 8, True), (128, 11008, 4096, 3, True),
    (100, 520, 1000, 3, False),        # 16 K steps in ranges of 6, 6, 4; M and N tails
    (17, 1000, 200, 3, True),          # 4 K steps: 2 ranges of 2 (3 asked); K % 64 != 0
    (128, 256, 24, 4, False),          # one K step: no split left
    (64, 4096, 4104, 16, True)])       # 65 K steps in 13 ranges of 5, the last one of 5
def test_split_k(m, n, k, splits, tb):
    check(*operands(m, n, k, tb=tb), splits=splits)


def test_split_k_dtypes_epilogue_batched_transposed():
    import torch
    import torch.nn.functional as F
    check(*operands(64, 2000, 1032, dtype="float16"), out_dtype=torch.float32, splits=4)
    check(*operands(64, 2000, 1032, dtype="float16"), splits=5, tile_n=128)
    check(*operands(120, 264, 1000, ta=True, tb=True, batch=3), splits=4)
    a, b = operands(16, 4096, 4096, tb=True)
    bias = torch.randn(4096, device="cuda")
    out = ws.ops.matmul(a, b, out_dtype=torch.float32, epilogue=ws.ops.BiasGelu(bias),
                        splits=8)
    assert relative_error(out, F.gelu(reference(a, b) + bias, approximate="tanh")) < 1e-3


@pytest.mark.parametrize("m, n, k, tb, kw", [
    (64, 4096, 4096, True, {}), (1, 11008, 4096, True, {}), (17, 1000, 200, False, {}),
    (200, 4096, 4096, True, dict(tile_m=64)),          # 4 row blocks, an M tail
    (64, 4096, 4096, True, dict(tile_m=64, splits=8)),
    (128, 4096, 4096, True, dict(tile_m=64, splits=4, tile_n=128)),
    (48, 520, 1000, False, dict(tile_m=64, ta=True, batch=3)),
    (256, 11008, 4096, True, dict(tile_m=64, tile_n=128)),   # 4 x 86 tiles: 3 waves
    (130, 4096, 11008, True, dict(tile_m=64, tile_n=128, splits=2)),   # 172 K steps in 2
    (96, 520, 1000, True, dict(tile_m=64, tile_n=64))], ids=str)
def test_64_row_tiles(m, n, k, tb, kw):
    """tile_m=64 (one consumer warpgroup, 256 threads): the default at M <= 64, and asked
    for, with split-K, A M-major and batches."""
    kw = dict(kw)
    ta, batch = kw.pop("ta", False), kw.pop("batch", None)
    check(*operands(m, n, k, ta=ta, tb=tb, batch=batch), **kw)


# -- 2-CTA clusters with TMA multicast (matmul_producer.py) -----------------------------------
CLUSTER_CASES = [(4096, 4096, 4096, {}), (8192, 8192, 8192, {}), (1000, 1000, 24, {}),
                 (129, 264, 65, {}), (4095, 4097 // 8 * 8, 1000, dict(tb=True)),
                 (2048, 2048, 2048, dict(ta=True)), (512, 768, 4096, dict(splits=4)),
                 (1024, 1024, 512, dict(schedule="pingpong", tile_n=128)),
                 (200, 4096, 4096, dict(tile_m=64, tile_n=128)),
                 (384, 512, 256, dict(batch=3))]


@pytest.mark.parametrize("cluster", [(2, 1), (1, 2)])
@pytest.mark.parametrize("m, n, k, extra", CLUSTER_CASES, ids=lambda v: str(v))
def test_clusters(cluster, m, n, k, extra):
    extra = dict(extra)
    layout = {key: extra.pop(key) for key in ("ta", "tb", "batch") if key in extra}
    check(*operands(m, n, k, **layout), cluster=cluster, **extra)


@pytest.mark.parametrize("m, n, k, tb, kw", [
    (256, 11008, 4096, True, {}), (4096, 4096, 4096, False, {}),
    (8192, 8192, 8192, False, {}), (4096, 11008, 4096, True, dict(tile_n=128)),
    (2000, 2000, 1000, False, dict(tile_n=192)), (129, 9000, 6500, True, dict(tile_n=64)),
    (300, 2000, 4096, True, dict(tile_m=64, tile_n=128))])
def test_stream_k(m, n, k, tb, kw):
    """Stream-K (tiles of the last wave split by K steps over the SMs, the counter fix-up):
    correct, two calls bitwise equal, the counters back at zero."""
    import torch
    from warpstage.ops import matmul_host
    a, b = operands(m, n, k, tb=tb, seed=m + k)
    check(a, b, stream_k=True, **kw)
    one = ws.ops.matmul(a, b, stream_k=True, **kw)
    two = ws.ops.matmul(a, b, stream_k=True, **kw)
    assert torch.equal(one.view(torch.int16), two.view(torch.int16))
    assert all(int(c.abs().sum()) == 0 for _, c in matmul_host._FIXUP.values())


def test_stream_k_batched_epilogue():
    import torch
    a, b = operands(700, 1000, 3000, batch=3, seed=4)
    bias = torch.randn(1000, device="cuda")
    y = reference(a, b) + bias
    got = ws.ops.matmul(a, b, epilogue=ws.ops.BiasGelu(bias), out_dtype=torch.float32,
                        stream_k=True)
    ref = torch.nn.functional.gelu(y, approximate="tanh")
    assert relative_error(got, ref) < 1e-4


def test_rotating_inputs_and_outputs_past_the_kept_sets_write_each_call_its_own_output():
    """As a model's activations: 3 inputs x 40 outputs at distinct addresses (slices of one
    buffer), in turn over two rounds: more address sets than a plan keeps (16) and more maps
    than the kept descriptors (64), so kept launch buffers are repacked and maps at new
    addresses are the recorded map with its address replaced (cuTensorMapReplaceAddress).
    Every output must be its own input's product:
    is checked right after its call, poisoned with NaN before it."""
    import torch
    from warpstage.runtime import tensormap
    m, n, k = 128, 512, 256
    xs = [operands(m, n, k, seed=s)[0] for s in range(3)]
    w = torch.randn(n, k, device="cuda").to(torch.bfloat16)
    big = torch.empty(40 * m * n, device="cuda", dtype=torch.bfloat16)
    outs = [big[i * m * n:(i + 1) * m * n].view(m, n) for i in range(40)]
    refs = [reference(x, w.T) for x in xs]
    for i in range(80):
        c = outs[i % 40]
        c.fill_(float("nan"))
        ws.ops.matmul(xs[i % 3], w.T, out=c)
        assert relative_error(c, refs[i % 3]) < TOL["bfloat16"], i
    # the driver's replacement is the full encoding of the same geometry at the new address
    d = ws.tma.TensorDescriptor(outs[0], (64, 64))
    moved = d.at(outs[1].data_ptr())
    d.encode()
    assert moved.encode() == ws.tma.TensorDescriptor(outs[1], (64, 64)).encode()
    assert tensormap._REPLACE and tensormap._REPLACE[0], "libcuda has cuTensorMapReplaceAddress"
