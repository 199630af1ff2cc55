"""examples/tensor_parallel.py without GPUs: the Megatron-style sharding and its two
all-reduces against the one-device reference — ranks as threads summing through a barrier,
ranks as 2 gloo processes (the example's --cpu-check, what torchrun runs on GPUs with NCCL) —,
the example's ws.ops math in the CPU simulator, and its argument errors. Needs torch (CPU)."""
import os
import subprocess
import sys
import threading

import pytest

torch = pytest.importorskip("torch")

from example_loader import ROOT, load_example  # noqa: E402

tp = load_example("tensor_parallel", "cpu_ex_tensor_parallel")


def _ranks_in_threads(monkeypatch, world, x, weights, heads, reduce=True):
    """The block on ``world`` ranks run as threads; ``_all_reduce`` sums the ranks' tensors
    (what NCCL's all-reduce does) unless ``reduce`` is False. Returns every rank's output."""
    barrier = threading.Barrier(world)
    parts, outs = [None] * world, [None] * world
    rank_of = {}

    def all_reduce(t, w):
        r = rank_of[threading.get_ident()]
        parts[r] = t.clone()
        barrier.wait()
        total = sum(parts[1:], parts[0].clone())
        barrier.wait()                          # everyone has read before the next reduction
        t.copy_(total if reduce else parts[r])
        return t
    monkeypatch.setattr(tp, "_all_reduce", all_reduce)

    def rank(r):
        rank_of[threading.get_ident()] = r
        outs[r] = tp.block(x, tp.shard(weights, r, world, heads), tp.TorchMath(), world)
    threads = [threading.Thread(target=rank, args=(r,)) for r in range(world)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return outs


@pytest.mark.parametrize("world", [2, 4])
def test_sharded_block_equals_the_one_device_block(monkeypatch, world):
    weights = tp.make_weights(64, seed=world, dtype=torch.float32)
    x = torch.randn(2, 12, 64, generator=torch.Generator().manual_seed(1))
    ref = tp.reference(x, weights, heads=4)
    outs = _ranks_in_threads(monkeypatch, world, x, weights, heads=4)
    for out in outs:
        torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)


def test_without_the_reductions_the_ranks_disagree_with_the_reference(monkeypatch):
    weights = tp.make_weights(64, dtype=torch.float32)
    x = torch.randn(1, 8, 64, generator=torch.Generator().manual_seed(2))
    ref = tp.reference(x, weights, heads=4)
    out = _ranks_in_threads(monkeypatch, 2, x, weights, heads=4, reduce=False)[0]
    assert (out - ref).abs().max() > 1e-2


def test_shards_split_heads_and_hidden_columns():
    e, world = 64, 2
    w = tp.make_weights(e, dtype=torch.float32)
    s = tp.shard(w, 1, world, heads=4)
    assert s.heads == 2 and s.w_qkv.shape == (e, 3 * e // world)
    assert torch.equal(s.w_qkv[:, :e // 2], w["w_qkv"][:, e // 2:e])          # rank 1's q
    assert torch.equal(s.w_qkv[:, e:], w["w_qkv"][:, 2 * e + e // 2:])         # rank 1's v
    assert s.w_o.shape == (e // 2, e) and s.w_1.shape == (e, 2 * e) and s.w_2.shape == (2 * e, e)
    with pytest.raises(ValueError, match="multiples of the 3 ranks"):
        tp.shard(w, 0, 3, heads=4)


def test_cpu_check_on_two_gloo_processes():
    env = dict(os.environ, PYTHONPATH=ROOT)
    env.pop("RANK", None)
    r = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "tensor_parallel.py"),
                        "--cpu-check", "--batch", "2", "--seq", "16", "--heads", "4", "--dim",
                        "64"], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "2 ranks, torch vs one-device float32 torch reference" in r.stdout
    assert r.stdout.count("-> OK") == 2, r.stdout


def test_the_warpstage_math_in_the_simulator(sim_target):
    w = tp.make_weights(128, dtype=torch.bfloat16)
    x = torch.randn(1, 64, 128, generator=torch.Generator().manual_seed(3)).to(torch.bfloat16)
    out = tp.block(x, tp.shard(w, 0, 1, heads=2), tp.WarpstageMath(), 1)
    ref = tp.reference(x, w, heads=2)
    assert out.dtype == torch.bfloat16
    assert float((out.float() - ref).abs().max() / ref.abs().max()) < 3e-2


def test_arguments_are_checked(capsys):
    with pytest.raises(SystemExit):
        tp.parse(["--dim", "100", "--heads", "16"])
    assert "not a multiple of --heads 16" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        tp.parse(["--math", "torch"])
    assert tp.parse(["--cpu-check"]).math == "torch" and tp.parse([]).math == "warpstage"
