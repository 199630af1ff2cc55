"""The warp-specialization primitives on a real GPU against torch: the mbarrier pipeline example
(1..6 stages, cp.async and ld/st, setmaxnreg), shuffles, votes, elect, named-barrier arrival,
cp.async and atomics."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

import warpstage as ws  # noqa: E402
from example_loader import load_example  # noqa: E402

# The kernels are the simulator tests' own (this folder's: pytest puts it on sys.path): the
# same code runs on both targets.
from test_arch_sync import arrive_then_sync, indices, warp_softmax, warp_specialized  # noqa: E402
from test_smem import Pair, Staging, elected_arrivals, histogram, reverse_via_cp_async  # noqa: E402

pytestmark = [pytest.mark.gpu, pytest.mark.filterwarnings("ignore::warpstage.RecompileWarning")]

LOG2E = 1.4426950408889634
pipeline = load_example("mbarrier_pipeline")


@pytest.mark.parametrize("copy", ["cp.async", "ld/st"])
@pytest.mark.parametrize("stages", [1, 2, 3, 4, 5, 6])
def test_mbarrier_pipeline(stages, copy):
    cfg = pipeline.Pipeline(stages=stages, copy=copy)
    ctas, tiles = 132, 9
    x = torch.randn(ctas * tiles * cfg.tile, device="cuda")
    out = torch.full_like(x, float("nan"))
    pipeline.launch(cfg, x, out, ctas)
    torch.cuda.synchronize()
    assert torch.equal(out, x * 2 + 1)


def test_mbarrier_pipeline_many_tiles_per_cta():
    cfg = pipeline.Pipeline(stages=2, tile=1024)
    x = torch.randn(4 * 200 * cfg.tile, device="cuda")
    out = torch.empty_like(x)
    for _ in range(3):                    # repeated launches reuse the compiled kernel
        pipeline.launch(cfg, x, out, 4)
    torch.cuda.synchronize()
    assert torch.equal(out, x * 2 + 1)


def test_indices_uniform_and_elect():
    out = torch.full((384, 5), -1, dtype=torch.int32, device="cuda")
    indices[1, 384](out)
    got = out.cpu().numpy()
    t = np.arange(384)
    assert got[:, 0].tolist() == (t % 32).tolist()
    assert got[:, 1].tolist() == (t // 32).tolist()
    assert got[:, 2].tolist() == (t // 128).tolist()
    assert got[:, 3].tolist() == (t // 32 * 32).tolist()
    assert got[:, 4].reshape(12, 32).sum(axis=1).tolist() == [1] * 12    # one leader per warp


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_warp_softmax(dtype):
    x = torch.randn(300, 1000, device="cuda").to(dtype)
    out = torch.empty_like(x)
    warp_softmax[300, 32](x, out, 1000)
    torch.cuda.synchronize()
    want = torch.softmax(x.float(), dim=1)
    tol = 1e-5 if dtype == torch.float32 else 1e-2
    torch.testing.assert_close(out.float(), want, rtol=tol, atol=tol * 1e-2)


@ws.kernel
def shuffles(i64v: ws.Tensor, f64v: ws.Tensor, i8v: ws.Tensor, f16v: ws.Tensor,
             pred_in: ws.Tensor, votes: ws.Tensor):
    t = ws.arch.thread_idx()[0]
    i64v[t] = ws.arch.shfl_sync(i64v[t], 31 - t)
    f64v[t] = ws.arch.shfl_down_sync(f64v[t], 1)
    i8v[t] = ws.arch.shfl_xor_sync(i8v[t], 3)
    f16v[t] = ws.arch.shfl_up_sync(f16v[t], 2, width=16)
    p = pred_in[t] != 0
    votes[t, 0] = ws.Int32(ws.arch.vote_all_sync(p))
    votes[t, 1] = ws.Int32(ws.arch.vote_any_sync(p))
    votes[t, 2] = ws.Int32(ws.arch.vote_uni_sync(p))
    votes[t, 3] = ws.Int32(ws.arch.vote_ballot_sync(p))


def test_shuffles_and_votes():
    lanes = torch.arange(32, device="cuda")
    i64v = (lanes.to(torch.int64) - 7) * (1 << 40)
    f64v = lanes.to(torch.float64) / 3
    i8v = (lanes - 16).to(torch.int8)
    f16v = (lanes * 0.5).to(torch.float16)
    pred = torch.zeros(32, dtype=torch.int32, device="cuda")
    pred[[3, 17]] = 1
    votes = torch.zeros((32, 4), dtype=torch.int32, device="cuda")
    want = [i64v[31 - lanes], f64v[torch.clamp(lanes + 1, max=31)], i8v[lanes ^ 3],
            f16v[torch.where(lanes % 16 >= 2, lanes - 2, lanes)]]
    shuffles[1, 32](i64v, f64v, i8v, f16v, pred, votes)
    torch.cuda.synchronize()
    for got, exp in zip((i64v, f64v, i8v, f16v), want):
        assert torch.equal(got, exp)
    assert votes.cpu().tolist() == [[0, 1, 0, (1 << 3) | (1 << 17)]] * 32


def test_named_barrier_arrive_and_sync():
    out = torch.zeros(128, dtype=torch.int32, device="cuda")
    arrive_then_sync[1, 128, 256](out, 50)
    torch.cuda.synchronize()
    t = np.arange(64)
    assert out[64:].cpu().tolist() == (sum(r * 100 for r in range(50)) + 50 * t).tolist()


@pytest.mark.parametrize("use_mbarrier", [False, True])
def test_cp_async(use_mbarrier):
    x = torch.randn(64 * 128, device="cuda")
    out = torch.empty_like(x)
    reverse_via_cp_async[64, 32, ws.smem.size_of(Staging)](x, out, use_mbarrier)
    torch.cuda.synchronize()
    assert torch.equal(out.view(64, 128), x.view(64, 128).flip(1))


def test_histogram_atomics():
    x = torch.randint(0, 8, (100_000,), dtype=torch.int32, device="cuda")
    hist = torch.zeros(8, dtype=torch.int32, device="cuda")
    histogram[(100_000 + 255) // 256, 256, 32](x, hist, 100_000)
    torch.cuda.synchronize()
    assert torch.equal(hist, torch.bincount(x, minlength=8).to(torch.int32))


def test_elected_mbarrier_ping_pong():
    n = 1000
    out = torch.zeros(n * 32, dtype=torch.int32, device="cuda")
    elected_arrivals[1, 64, ws.smem.size_of(Pair)](out, n)
    torch.cuda.synchronize()
    assert torch.equal(out, torch.arange(n * 32, dtype=torch.int32, device="cuda"))


def test_setmaxnreg_kernel_runs():
    out = torch.zeros(384, dtype=torch.int32, device="cuda")
    warp_specialized[1, 384](out)
    torch.cuda.synchronize()
    assert out.cpu().tolist() == [1] * 128 + [2] * 256
