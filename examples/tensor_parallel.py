"""A tensor-parallel transformer block on several GPUs: warpstage kernels for the math, NCCL
(``torch.distributed.all_reduce``) for the reductions, in the Megatron-LM split.

The block (pre-norm, causal self-attention, GELU MLP), for activations x of (B, S, E)::

    h   = x + attention(layer_norm(x)) @ W_o          heads split across the ranks
    out = h + gelu(layer_norm(h) @ W_1 + b_1) @ W_2 + b_2

With P ranks, rank r holds heads [r H/P, (r+1) H/P): the columns of W_qkv that make their q, k, v
(column-parallel, no communication), and the matching rows of W_o (row-parallel: each rank's
product is a partial sum over its heads, added up by one all-reduce). The MLP is split the same
way: W_1's columns and b_1 (column-parallel), W_2's rows (row-parallel, one all-reduce, then b_2
once). Layer norms and residuals are replicated. So a block costs two all-reduces of (B, S, E).

Per rank the math is ``ws.ops.matmul`` (the QKV projection, W_o, W_2; W_1 with the GELU and its
bias fused into the GEMM's epilogue, ``ws.ops.BiasGelu``) and ``ws.ops.flash_attention`` on the
rank's heads, read in place from the QKV projection's output through strides.

Run (one process per GPU; each rank uses cuda:<LOCAL_RANK>)::

    torchrun --nproc-per-node 2 examples/tensor_parallel.py [--batch 4 --seq 2048 --heads 16 --dim 2048]

It checks the result against the same block computed by torch on one GPU from the full weights
(gathered from the ranks' shards), then prints tokens/s of the block with warpstage and with
plain torch (SDPA + torch.matmul, the same sharding and all-reduces), timed the same way (CUDA
events around back-to-back blocks, the slowest rank's time).

Without a GPU, ``python examples/tensor_parallel.py --cpu-check`` runs the same sharding and
reductions on 2 CPU processes (gloo backend) with torch math in place of ws.ops, in float32, and
checks them against the one-process reference; ``--cpu-check --math warpstage`` runs ws.ops in
the CPU simulator instead (bf16, small sizes: ``--batch 1 --seq 64 --heads 2 --dim 128``).
tests/examples/test_tensor_parallel.py runs both.
"""
import argparse
import os
import subprocess
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F

__all__ = ["Shard", "TorchMath", "WarpstageMath", "make_weights", "shard", "block", "reference",
           "main"]


class TorchMath:
    """The block's math in plain torch: SDPA and torch.matmul (the baseline, and the CPU check)."""

    name = "torch"

    def matmul(self, a, b):
        return a @ b

    def matmul_gelu(self, a, b, bias):
        return F.gelu(a @ b + bias, approximate="tanh")

    def attention(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


class WarpstageMath:
    """The block's math with warpstage kernels: ``ws.ops.matmul`` (GELU and bias fused into the
    epilogue for W_1) and ``ws.ops.flash_attention``."""

    name = "warpstage"

    def __init__(self, target=None):
        import warpstage as ws
        self.ws = ws
        if target is not None:
            ws.set_target(target)

    def matmul(self, a, b):
        return self.ws.ops.matmul(a, b)

    def matmul_gelu(self, a, b, bias):
        return self.ws.ops.matmul(a, b, epilogue=self.ws.ops.BiasGelu(bias))

    def attention(self, q, k, v):
        return self.ws.ops.flash_attention(q, k, v, causal=True)


def make_weights(dim, seed=0, dtype=torch.bfloat16, device="cpu"):
    """The full block's weights (every rank makes the same ones from ``seed``): a dict of
    W_qkv (E, 3E) laid out [q | k | v], W_o (E, E), W_1 (E, 4E), b_1 (4E,), W_2 (4E, E), b_2
    (E,), and the two layer norms' weight and bias (E,)."""
    g = torch.Generator().manual_seed(seed)

    def rand(*shape, scale):
        return (torch.randn(*shape, generator=g) * scale).to(dtype=dtype, device=device)
    e = dim
    return {"w_qkv": rand(e, 3 * e, scale=e ** -0.5), "w_o": rand(e, e, scale=e ** -0.5),
            "w_1": rand(e, 4 * e, scale=e ** -0.5), "b_1": rand(4 * e, scale=0.1),
            "w_2": rand(4 * e, e, scale=(4 * e) ** -0.5), "b_2": rand(e, scale=0.1),
            "ln1_w": 1 + rand(e, scale=0.1), "ln1_b": rand(e, scale=0.1),
            "ln2_w": 1 + rand(e, scale=0.1), "ln2_b": rand(e, scale=0.1)}


class Shard:
    """Rank ``rank``'s part of the weights for ``world`` ranks: W_qkv's columns of its heads
    (E, 3E/P, laid out [q | k | v] of those heads), W_o's matching rows (E/P, E), W_1's columns
    and b_1's entries (E, 4E/P), (4E/P,), W_2's rows (4E/P, E); b_2 and the layer norms whole."""

    def __init__(self, weights, rank, world, heads):
        e = weights["w_o"].shape[0]
        if heads % world or (4 * e) % world:
            raise ValueError(f"--heads {heads} and 4 x --dim {4 * e} must be multiples of the "
                             f"{world} ranks; got remainders {heads % world} and "
                             f"{(4 * e) % world}. Fix: pick --heads a multiple of {world}")
        cols = slice(rank * e // world, (rank + 1) * e // world)        # this rank's heads
        q, k, v = weights["w_qkv"].split(e, dim=1)
        self.w_qkv = torch.cat([q[:, cols], k[:, cols], v[:, cols]], dim=1).contiguous()
        self.w_o = weights["w_o"][cols].contiguous()
        hidden = slice(rank * 4 * e // world, (rank + 1) * 4 * e // world)
        self.w_1 = weights["w_1"][:, hidden].contiguous()
        self.b_1 = weights["b_1"][hidden].contiguous()
        self.w_2 = weights["w_2"][hidden].contiguous()
        for name in ("b_2", "ln1_w", "ln1_b", "ln2_w", "ln2_b"):
            setattr(self, name, weights[name])
        self.heads = heads // world


def shard(weights, rank, world, heads) -> Shard:
    """``Shard(weights, rank, world, heads)``."""
    return Shard(weights, rank, world, heads)


def _all_reduce(t, world):
    if world > 1:
        dist.all_reduce(t)          # sum over the ranks (NCCL on the GPU, gloo on the CPU)
    return t


def block(x, s: Shard, math_, world):
    """The tensor-parallel block on this rank: ``x`` (B, S, E), replicated on every rank;
    returns the block's output (B, S, E), the same on every rank. Two all-reduces."""
    b, seq, e = x.shape
    hd = e // (s.heads * world)                           # head dimension
    t = x.reshape(b * seq, e)
    y = F.layer_norm(t, (e,), s.ln1_w, s.ln1_b)
    qkv = math_.matmul(y, s.w_qkv).view(b, seq, 3, s.heads, hd)
    q, k, v = (qkv[:, :, i].transpose(1, 2) for i in range(3))   # (B, H/P, S, D) views
    o = math_.attention(q, k, v).transpose(1, 2).reshape(b * seq, s.heads * hd)
    h = t + _all_reduce(math_.matmul(o, s.w_o), world)           # row-parallel: partial sums
    y = F.layer_norm(h, (e,), s.ln2_w, s.ln2_b)
    z = math_.matmul_gelu(y, s.w_1, s.b_1)                       # column-parallel
    out = h + _all_reduce(math_.matmul(z, s.w_2), world) + s.b_2
    return out.view(b, seq, e)


def reference(x, weights, heads):
    """The block on one device from the full weights, in float32 torch (the check's truth)."""
    w = {k: v.float() for k, v in weights.items()}
    return block(x.float(), Shard(w, 0, 1, heads), TorchMath(), 1)


def _seconds_per_block(fn, iters, repeats=3):
    """The slowest rank's seconds per call of ``fn``: benchmarks/gpu_timing.py's end-to-end
    method (the median over ``repeats`` of ``iters`` back-to-back calls between CUDA events,
    after a warm-up call) on every rank, started together after a barrier (the all-reduces in
    the block keep the ranks in step from there)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                    "benchmarks"))
    from gpu_timing import seconds_per_call
    fn()
    torch.cuda.synchronize()
    dist.barrier()
    worst = torch.tensor([seconds_per_call(fn, iters, repeats)], device="cuda")
    dist.all_reduce(worst, op=dist.ReduceOp.MAX)
    return float(worst)


def _check(out, ref, tol, rank, what):
    err = float((out.float() - ref.float()).abs().max() / ref.float().abs().max())
    ok = err <= tol and bool(torch.isfinite(out).all())
    if rank == 0:
        print(f"{what}: max |error| / max |reference| = {err:.2e} (tolerance {tol:g}) -> "
              f"{'OK' if ok else 'MISMATCH'}", flush=True)
    return ok


def run_rank(args) -> int:
    """One rank of the job (torchrun's or --cpu-check's environment: RANK, WORLD_SIZE,
    LOCAL_RANK, MASTER_ADDR, MASTER_PORT). Returns the exit status."""
    cpu = args.cpu_check
    if cpu and args.math == "torch":
        device, dtype, tol, math_ = "cpu", torch.float32, 1e-4, TorchMath()
    elif cpu:                                   # ws.ops on CPU tensors: the CPU simulator
        device, dtype, tol, math_ = "cpu", torch.bfloat16, 3e-2, WarpstageMath(target="sim")
    else:
        local = int(os.environ.get("LOCAL_RANK", "0"))
        torch.cuda.set_device(local)          # this rank's GPU: warpstage launches follow it
        device, dtype, tol, math_ = f"cuda:{local}", torch.bfloat16, 3e-2, WarpstageMath()
    dist.init_process_group("gloo" if cpu else "nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    try:
        weights = make_weights(args.dim, seed=args.seed, dtype=dtype)
        s = shard({k: v.to(device) for k, v in weights.items()}, rank, world, args.heads)
        x = torch.randn(args.batch, args.seq, args.dim, generator=torch.Generator().manual_seed(
            args.seed + 1)).to(dtype=dtype, device=device)
        out = block(x, s, math_, world)
        gathered = _gather(s, world, args.dim)              # the full weights from the shards
        baseline = None if cpu else block(x, s, TorchMath(), world)   # bf16 torch, for scale
        ok = True
        if rank == 0:
            ref = reference(x, gathered, args.heads)
            ok = _check(out, ref, tol, rank, f"{world} ranks, {math_.name} vs one-device "
                        f"float32 torch reference")
            if baseline is not None:
                err = float((baseline.float() - ref).abs().max() / ref.abs().max())
                print(f"  (the same block in bf16 torch: {err:.2e})", flush=True)
            if cpu:                 # the ranks made the same weights: the gather must undo shard
                same = all(torch.equal(gathered[k].cpu(), v) for k, v in weights.items())
                print(f"shards gathered back into the full weights -> "
                      f"{'OK' if same else 'MISMATCH'}", flush=True)
                ok = ok and same
        flag = torch.tensor([int(ok)], device=device)
        dist.broadcast(flag, 0)
        ok = bool(flag.item())
        if not cpu and ok and not args.no_timing:
            _timing(args, x, s, math_, world, rank)
        if math_.name == "warpstage":
            _compiles(rank, world)
        return 0 if ok else 1
    finally:
        dist.destroy_process_group()


def _gather(s: Shard, world, dim):
    """The full weights rebuilt from every rank's shard (all_gather), as the reference uses them:
    the reference is computed from what the ranks hold, not from a second copy."""
    def gather(t, axis):
        parts = [torch.empty_like(t) for _ in range(world)]
        dist.all_gather(parts, t.contiguous())
        return torch.cat(parts, dim=axis)
    e = dim
    per = e // world
    qkv = gather(s.w_qkv, 1)                    # per rank [q_r | k_r | v_r]
    chunks = qkv.split(per, dim=1)              # q_0 k_0 v_0 q_1 k_1 v_1 ...
    w_qkv = torch.cat([torch.cat(chunks[i::3], dim=1) for i in range(3)], dim=1)
    return {"w_qkv": w_qkv, "w_o": gather(s.w_o, 0), "w_1": gather(s.w_1, 1),
            "b_1": gather(s.b_1, 0), "w_2": gather(s.w_2, 0), "b_2": s.b_2,
            "ln1_w": s.ln1_w, "ln1_b": s.ln1_b, "ln2_w": s.ln2_w, "ln2_b": s.ln2_b}


def _timing(args, x, s, math_, world, rank):
    tokens = args.batch * args.seq
    rows = []
    for m in (math_, TorchMath()):
        sec = _seconds_per_block(lambda: block(x, s, m, world), args.iters)
        rows.append((m.name, sec))
    if rank == 0:
        print(f"\ntensor-parallel block, {world} GPUs, B={args.batch} S={args.seq} "
              f"H={args.heads} E={args.dim} bf16, causal (slowest rank, CUDA events):")
        print(f"  {'math':<10} {'ms/block':>9} {'tokens/s':>12}")
        for name, sec in rows:
            print(f"  {name:<10} {sec * 1e3:9.3f} {tokens / sec:12.4g}")
        print(f"  speedup of warpstage over torch: {rows[1][1] / rows[0][1]:.2f}x", flush=True)


def _compiles(rank, world):
    """Rank 0 prints what each rank compiled (traced) and read from the disk cache: ranks that
    share one cache (WARPSTAGE_CACHE_DIR) trace each specialization once between them
    (docs/distributed.md, "Shared disk cache")."""
    from warpstage.jit.compiled import STAGE_COUNTS
    mine = (STAGE_COUNTS["trace"], STAGE_COUNTS["disk_hit"])
    every = [None] * world
    dist.all_gather_object(every, mine)
    if rank == 0:
        print("kernels traced / read from the disk cache, per rank: " + ", ".join(
            f"rank {r}: {t} / {h}" for r, (t, h) in enumerate(every)), flush=True)


def _launch_cpu_ranks(argv, ranks=2) -> int:
    """--cpu-check outside torchrun: start ``ranks`` copies of this script with torchrun's
    environment variables on this host (gloo), wait for them, return the worst exit status.

    As under torchrun, this process (the agent) hosts the rendezvous store and the ranks are
    its clients (TORCHELASTIC_USE_AGENT_STORE): the store is bound to a port the OS picks and
    held while the ranks run, so no other process can take the port between choosing and
    binding it. A rank that fails ends the others at once instead of leaving them waiting for
    it until the deadline."""
    store = dist.TCPStore("127.0.0.1", 0, ranks + 1, is_master=True, wait_for_workers=False)
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(store.port),
               WORLD_SIZE=str(ranks), TORCHELASTIC_USE_AGENT_STORE="True",
               TORCHELASTIC_RESTART_COUNT="0")         # read beside it by older torch versions
    procs = [subprocess.Popen([sys.executable, os.path.abspath(__file__)] + argv,
                              env=dict(env, RANK=str(r), LOCAL_RANK=str(r)))
             for r in range(ranks)]
    deadline = time.monotonic() + 300
    try:
        while True:
            codes = [p.poll() for p in procs]
            if all(c == 0 for c in codes):
                return 0
            failed = [(r, c) for r, c in enumerate(codes) if c not in (None, 0)]
            if failed or time.monotonic() > deadline:
                what = (f"rank {failed[0][0]} exited with status {failed[0][1]}" if failed
                        else "the ranks ran past 300 s")
                print(f"--cpu-check: {what}; ending the other ranks", file=sys.stderr)
                return abs(failed[0][1]) if failed else 124
            time.sleep(0.05)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        del store


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--seq", type=int, default=2048)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--dim", type=int, default=2048, help="model width E (head dim = E / heads)")
    p.add_argument("--iters", type=int, default=20, help="timed blocks per repeat")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-timing", action="store_true", help="check only")
    p.add_argument("--cpu-check", action="store_true",
                   help="2 CPU processes (gloo): the sharding and reductions without a GPU")
    p.add_argument("--math", choices=("torch", "warpstage"), default=None,
                   help="with --cpu-check: torch math in float32 (default), or ws.ops in the "
                        "CPU simulator (bf16; keep the sizes small)")
    args = p.parse_args(argv)
    if args.math is None:
        args.math = "torch" if args.cpu_check else "warpstage"
    if args.math == "torch" and not args.cpu_check:
        p.error("--math torch is for --cpu-check (on the GPU both are timed anyway)")
    if args.dim % args.heads:
        p.error(f"--dim {args.dim} is not a multiple of --heads {args.heads}; the head dimension "
                "is dim / heads. Fix: e.g. --dim 2048 --heads 16")
    return args


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse(argv)
    if "RANK" not in os.environ:
        if args.cpu_check:
            return _launch_cpu_ranks(argv)
        print("run me with torchrun: torchrun --nproc-per-node 2 examples/tensor_parallel.py "
              "(or python examples/tensor_parallel.py --cpu-check without GPUs)", file=sys.stderr)
        return 2
    return run_rank(args)


if __name__ == "__main__":
    sys.exit(main())
