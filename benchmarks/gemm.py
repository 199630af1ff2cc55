"""GEMM: ``ws.ops.matmul`` (the warp-specialized persistent TMA + wgmma kernel,
warpstage/ops/matmul_kernel.py) against cuBLAS (``torch.matmul``) and a persistent TMA matmul
written in Triton (``triton_matmul`` below: what a Triton user gets), bf16 in, f32 accumulation,
bf16 out, in one process on the GPU.

    PYTHONPATH=. python benchmarks/gemm.py                # squares 1024^3-16384^3 + LLM shapes
    PYTHONPATH=. python benchmarks/gemm.py --quick        # 4096^3 and 8192^3 only
    PYTHONPATH=. python benchmarks/gemm.py --shape 4096,4096,4096 --shape 128,11008,4096
    PYTHONPATH=. python benchmarks/gemm.py --quick --no-sweep
    PYTHONPATH=. python benchmarks/gemm.py --no-sweep --no-fp8 --kmajor --shape 128,4096,4096
    PYTHONPATH=. python benchmarks/gemm.py --fp8 [--quick]   # ws.ops.scaled_matmul vs _scaled_mm
    PYTHONPATH=. python benchmarks/gemm.py --small-m [--quick]  # M = 64-256, device time too

Shapes: M x N x K. The squares (1024^3 to 16384^3; ``--quick``: 4096^3 and 8192^3) use
row-major A (M, K) and B (K, N); the LLM shapes (M tokens in
{1, 16, 128, 4096, 16384} x (N, K) in {(4096, 4096), (11008, 4096), (4096, 11008),
(128256, 4096)}) multiply by an nn.Linear weight W (N, K), i.e. B = W.T (K-major), in all three
implementations. Per implementation: the median over ``--repeats`` runs of ``--iters``
back-to-back calls (CUDA events, benchmarks/gpu_timing.py), the inputs rotated over several
copies so L2 does not keep them between calls. Columns: ``ws.ops`` (the public call, host code
included), ``ws kernel`` (the kernel launched with descriptors built once: the GPU time when the
host path is slower), cuBLAS, Triton, the floor (max(2MNK / peak, bytes / HBM bandwidth) with
the H200's 989 TFLOP/s dense bf16 and 4.8 TB/s), and for the shapes under
``DEVICE_TIMED_BELOW`` FLOPs ``ws kernel dev`` / ``cuBLAS dev`` (device time, a warmed queue;
their ratio is ``dev ratio``; ``ws.ops dev`` the public call's). In the same run, FP8 e4m3 at 4096^3 and
8192^3: ``ws.ops.scaled_matmul`` against ``torch._scaled_mm`` (benchmarks/gemm_fp8.py's
columns; ``--fp8`` runs only those, at more shapes). Then (unless ``--no-sweep``) the kernel
under the ``SWEEP`` policies (tile width, stages, raster, swizzle group, cooperative or ping-pong
consumers) at the squares, and (without ``--quick``) tile width x K splits (``SMALL_SWEEP``)
at the small-M shapes ``SMALL_M``; a split-K row's ``ws kernel`` is the GEMM plus the
reduction kernel. Prints the tables, writes ``$OUT/gemm.png`` (TFLOP/s per shape, bf16, and
FP8 beside it) when matplotlib imports, and prints (and writes ``$OUT/gemm_results.md``) a
block for benchmarks/RESULTS.md. A benchmark, not a test: nothing is asserted; per shape the
max error of each implementation against an f32 torch.matmul is shown (relative to max
|A @ B|).
"""
from __future__ import annotations

import argparse
import datetime
import functools
import itertools
import os
import subprocess
import sys

from gpu_timing import seconds_per_call   # benchmarks/ is on sys.path when run as a script

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SQUARES = [(4096, 4096, 4096), (8192, 8192, 8192)]
"""The squares of ``--quick``, of the policy sweep and of FP8."""
SIZES = [(s, s, s) for s in (1024, 2048, 4096, 8192, 16384)]
"""The squares of a full run: the chart across sizes."""
LLM = [(m, n, k) for n, k in ((4096, 4096), (11008, 4096), (4096, 11008), (128256, 4096))
       for m in (1, 16, 128, 4096, 16384)]
PEAK, HBM = 989.4e12, 4.8e12                 # H200 SXM: dense bf16 FLOP/s, HBM bytes/s


def triton_kernel():
    """A persistent TMA matmul in Triton 3.6 (host TensorDescriptors, grouped tile order)."""
    import triton
    import triton.language as tl

    @triton.jit
    def matmul_persistent(a_desc, b_desc, c_desc, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                          BK: tl.constexpr, GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr,
                          B_KMAJOR: tl.constexpr):
        pid = tl.program_id(0)
        tiles_m = tl.cdiv(M, BM)
        tiles_n = tl.cdiv(N, BN)
        k_tiles = tl.cdiv(K, BK)
        for tile in tl.range(pid, tiles_m * tiles_n, NUM_SMS):
            band = tile // (GROUP_M * tiles_n)
            first = band * GROUP_M
            width = min(tiles_m - first, GROUP_M)
            within = tile % (GROUP_M * tiles_n)
            off_m = (first + within % width) * BM
            off_n = (within // width) * BN
            acc = tl.zeros((BM, BN), dtype=tl.float32)
            for kt in range(k_tiles):
                a = a_desc.load([off_m, kt * BK])
                if B_KMAJOR:
                    b = b_desc.load([off_n, kt * BK]).T
                else:
                    b = b_desc.load([kt * BK, off_n])
                acc = tl.dot(a, b, acc)
            c_desc.store([off_m, off_n], acc.to(tl.bfloat16))
    return matmul_persistent


def triton_runner(a, b, c, b_kmajor, sms):
    """A zero-argument call of the Triton kernel on a, b (K, N) (a transposed view of (N, K)
    when ``b_kmajor``), c."""
    import triton
    from triton.tools.tensor_descriptor import TensorDescriptor
    kernel = triton_kernel()
    bm, bn, bk = 128, 256, 64
    m, k = a.shape
    n = b.shape[1]
    da = TensorDescriptor.from_tensor(a, [bm, bk])
    db = (TensorDescriptor.from_tensor(b.T, [bn, bk]) if b_kmajor
          else TensorDescriptor.from_tensor(b, [bk, bn]))
    dc = TensorDescriptor.from_tensor(c, [bm, bn])
    grid = (min(sms, triton.cdiv(m, bm) * triton.cdiv(n, bn)),)

    def run():
        kernel[grid](da, db, dc, m, n, k, BM=bm, BN=bn, BK=bk, GROUP_M=8, NUM_SMS=sms,
                     B_KMAJOR=b_kmajor, num_stages=3, num_warps=8)
    return run


def kernel_runner(a, b, c, fields=None):
    """A zero-argument launch of warpstage's kernel with the descriptors (and a split-K
    workspace, or the stream-K fix-up buffers) made once, and its policy: the one
    ``ws.ops.matmul`` picks (stream-K included, ``matmul_config.choose_stream_k``), or
    ``Matmul(**fields)`` on the operands' layout (``splits`` in ``fields``: K ranges;
    ``stream_k=True``: stream-K with the given tile). With splits > 1 a run is the GEMM into
    the f32 workspace plus ``splitk_reduce`` into c."""
    import torch
    import warpstage as ws
    from warpstage.ops import matmul_host
    from warpstage.ops.matmul_config import choose_stream_k
    from warpstage.ops.matmul_kernel import max_stages
    from warpstage.ops.matmul_plan import stream_k_tiles
    from warpstage.ops.matmul_splitk import REDUCE_THREADS, splitk_reduce
    from warpstage.runtime.tensors import as_tensor_arg
    m, k = a.shape
    n = b.shape[1]
    ta, tb = as_tensor_arg(a), as_tensor_arg(b)
    xa, _, a_major = matmul_host._operand("a", a, ta, ws.BFloat16, True)
    xb, _, b_major = matmul_host._operand("b", b, tb, ws.BFloat16, False)
    sms = matmul_host._sms(ta)
    fields = dict(fields or {})
    schedule = fields.get("schedule", "cooperative")
    given = (fields.pop("tile_n", None), fields.pop("group", None), fields.pop("splits", None))
    stream_k = fields.pop("stream_k", False if "cluster" in fields else None)
    sk = choose_stream_k(m, n, k, 1, sms, schedule, *given, tile_m=fields.get("tile_m"),
                         stream_k=stream_k)       # (clusters: data-parallel, gemm_cluster.py)
    if sk is not None:
        tm, tn, group, _ = sk
        splits, fields["stream_k"] = 1, True
        fields.pop("tile_m", None)
    else:
        tm, tn, group, splits = matmul_host.choose_config(
            m, n, k, 1, sms, schedule, *given, tile_m=fields.pop("tile_m", None))
    split = splits > 1
    stages = fields.pop("num_stages", None)
    if stages is None:
        stages = min(8, max_stages(tn, ws.Float32 if split else ws.BFloat16, ws.BFloat16,
                                   schedule, tm))
    p = ws.ops.Matmul(a_major=a_major, b_major=b_major, tile_n=tn, group=group,
                      num_stages=stages, out_dtype=ws.Float32 if split else ws.BFloat16,
                      split_k=split, tile_m=tm, **fields)
    out = torch.empty(splits, m, -(-n // 4) * 4, device=c.device)[..., :n] if split else c
    TD = ws.tma.TensorDescriptor
    descs = [TD(x, box, swizzle=128) for x, box in zip((xa, xb, out), p.descriptor_boxes())]
    ctas = ws.sched.grid_size(p.tiles(m, n, 1, splits), sms)
    sk_tiles, fixup = 0, ()
    if p.stream_k:                             # as matmul_host.launch: the fix-up buffers
        sk_tiles = stream_k_tiles(p.tiles(m, n), sms, -(-k // p.tile_k))
        ctas = sms if sk_tiles else ctas
        fixup = matmul_host.stream_k_buffers(c, ctas, p.tile_m * p.tile_n)
    launch = ws.ops.matmul_kernel[(ctas, 1, 1), p.threads]
    if p.cluster != (1, 1):                    # 2-CTA clusters (benchmarks/gemm_cluster.py)
        size = p.cluster[0] * p.cluster[1]
        ctas = size * ws.sched.grid_size(p.cluster_tiles(m, n, 1, splits), sms // size)
        launch = functools.partial(ws.ops.matmul_kernel, grid=(ctas, 1, 1),
                                   block=(p.threads, 1, 1), cluster=(size, 1, 1))
    total = m * n
    reduce = splitk_reduce[(-(-total // REDUCE_THREADS), 1, 1), REDUCE_THREADS]
    c3 = c[None]

    def run():
        launch(p, *descs, m, n, k, 1, splits, (), sk_tiles, fixup)
        if split:
            reduce(None, out, c3, m, n, total, splits, ())
    p.splits = splits
    return run, p


def attempt(row: dict, key: str, fn, where: str, width: int = 300) -> None:
    """``row[key] = fn()``, or one printed line when it raises (a benchmark reports, it does
    not stop)."""
    try:
        row[key] = fn()
    except Exception as e:
        print(f"  {key} at {where}: {type(e).__name__}: {str(e)[:width]}", flush=True)


def input_sets(m, n, k, b_kmajor, budget=8 << 30):
    """Copies of (a, b, c) to rotate over: enough to exceed the 50 MB L2 twice, at most 4, within
    ``budget`` bytes."""
    import torch
    per = 2 * (m * k + k * n + m * n)
    count = max(1, min(4, -(-(100 << 20) // per), budget // per))
    g = torch.Generator(device="cuda").manual_seed(0)
    sets = []
    for _ in range(count):
        a = torch.randn(m, k, device="cuda", generator=g).bfloat16()
        b = (torch.randn(n, k, device="cuda", generator=g).bfloat16().T if b_kmajor
             else torch.randn(k, n, device="cuda", generator=g).bfloat16())
        sets.append((a, b, torch.empty(m, n, device="cuda", dtype=torch.bfloat16)))
    return sets


def rotating(make, sets):
    """One zero-argument function cycling over ``make(a, b, c)`` for each input set."""
    runs = itertools.cycle([make(*s) for s in sets])
    return lambda: next(runs)()


def measure_shape(m, n, k, b_kmajor, iters, repeats, sms):
    import torch
    import warpstage as ws
    sets = input_sets(m, n, k, b_kmajor)
    a, b, c = sets[0]
    ref = torch.matmul(a.float(), b.float())
    scale = float(ref.abs().max()) or 1.0
    flops = 2 * m * n * k
    row = {"shape": (m, n, k), "B": "K-major" if b_kmajor else "N-major", "errors": {}}
    calls = {
        "ws.ops": lambda a, b, c: (lambda: ws.ops.matmul(a, b, out=c)),
        "ws kernel": lambda a, b, c: kernel_runner(a, b, c)[0],
        "cuBLAS": lambda a, b, c: (lambda: torch.matmul(a, b, out=c)),
        "Triton": lambda a, b, c: triton_runner(a, b, c, b_kmajor, sms),
    }
    p = kernel_runner(a, b, c)[1]
    row["policy"] = repr(p) + (f", {p.splits} K splits" if p.splits > 1 else "")
    it = max(3, min(iters, int(2e13 // flops) or 3))
    for name, make in calls.items():
        try:
            c.fill_(float("nan"))
            make(a, b, c)()
            row["errors"][name] = float((c.float() - ref).abs().max()) / scale
            t = seconds_per_call(rotating(make, sets), it, repeats)
            row[name] = flops / t / 1e12
        except Exception as e:                # a benchmark reports, it does not stop
            print(f"  {name} at {m}x{n}x{k}: {type(e).__name__}: {str(e)[:300]}", flush=True)
            row[name] = None
    if flops < DEVICE_TIMED_BELOW:             # where the host's share shows: device time too
        for name in ("ws.ops", "ws kernel", "cuBLAS"):
            if row.get(name) is not None:
                attempt(row, name + " dev", lambda: flops / seconds_per_call(
                    rotating(calls[name], sets), it, repeats, warm_queue=True) / 1e12,
                    f"{m}x{n}x{k}")
    nbytes = 2 * (m * k + k * n + m * n)
    row["floor"] = flops / max(flops / PEAK, nbytes / HBM) / 1e12
    del sets
    torch.cuda.empty_cache()
    return row


SWEEP = [dict(tile_n=256, num_stages=4), dict(tile_n=256, num_stages=3),
         dict(tile_n=256, num_stages=4, raster="N"), dict(tile_n=256, num_stages=4, group=16),
         dict(tile_n=256, num_stages=4, group=4), dict(tile_n=192, num_stages=5),
         dict(tile_n=128, num_stages=6), dict(tile_n=128, num_stages=5, schedule="pingpong"),
         dict(tile_n=128, num_stages=4, schedule="pingpong"),
         dict(tile_n=128, num_stages=5, schedule="pingpong", raster="N"),
         dict(tile_n=64, num_stages=6, schedule="pingpong")]
"""Kernel policies timed at the squares (``--sweep``), to pick the per-shape defaults from."""
SMALL_M = [(16, 4096, 4096), (128, 4096, 4096), (128, 11008, 4096), (128, 4096, 11008)]
SMALL_SWEEP = ([dict(tile_n=tn, splits=s) for tn in (256, 128) for s in (1, 2, 4, 8)]
               + [dict(tile_n=64, splits=s) for s in (1, 2)])
"""Tile widths x K splits timed at small-M LLM shapes (B an nn.Linear weight), for the
split-K plan (warpstage/ops/matmul_splitk.py)."""


def sweep(m, n, k, iters, repeats, policies=None, b_kmajor=False):
    """[(policy fields, TFLOP/s)] of the kernel launched directly, one row per policy
    (default: SWEEP)."""
    sets = input_sets(m, n, k, b_kmajor)
    out = []
    for fields in policies or SWEEP:
        try:
            t = seconds_per_call(rotating(lambda a, b, c: kernel_runner(a, b, c, fields)[0],
                                          sets), iters, repeats)
            out.append((fields, 2 * m * n * k / t / 1e12))
        except Exception as e:
            print(f"  sweep {fields}: {type(e).__name__}: {str(e)[:200]}", flush=True)
    return out


COLUMNS = ("ws.ops", "ws kernel", "cuBLAS", "Triton", "floor")
DEV_COLUMNS = ("ws.ops dev", "ws kernel dev", "cuBLAS dev")
DEVICE_TIMED_BELOW = 2e11
"""Shapes of fewer FLOPs (2MNK) are also timed with a warmed queue (device time, the ``dev``
columns, benchmarks/gpu_timing.py): there a launch's host time is a share of the call."""


def fmt(v):
    return "-" if v is None else f"{v:.0f}"


def errors(row) -> str:
    """Max |C - A @ B (f32)| / max |A @ B| of ws.ops, cuBLAS and Triton (a NaN: unwritten)."""
    e = row["errors"]
    return ", ".join(f"{e[k]:.1g}" if k in e else "-" for k in ("ws.ops", "cuBLAS", "Triton"))


def _ratio(r, a, b) -> str:
    return f"{r[a] / r[b]:.2f}" if r.get(a) and r.get(b) else "-"


def table(rows) -> str:
    """The bf16 table: ``COLUMNS``, ``DEV_COLUMNS`` ("-" where not timed), ws kernel / cuBLAS
    end to end and in device time, the max errors."""
    cols = COLUMNS + DEV_COLUMNS
    head = ("| M x N x K | B | " + " | ".join(cols) + " | ws.ops / cuBLAS | ws kernel / cuBLAS "
            "| dev ratio | max err (ws, cuBLAS, Triton) |\n"
            "|---|---|" + "---|" * (len(cols) + 4) + "\n")
    lines = []
    for r in rows:
        lines.append(f"| {'x'.join(map(str, r['shape']))} | {r['B']} | "
                     + " | ".join(fmt(r.get(c)) for c in cols)
                     + f" | {_ratio(r, 'ws.ops', 'cuBLAS')} | {_ratio(r, 'ws kernel', 'cuBLAS')} | "
                     f"{_ratio(r, 'ws kernel dev', 'cuBLAS dev')} | {errors(r)} |")
    return head + "\n".join(lines)


FP8_COLUMNS = ("ws.ops", "ws kernel", "cuBLAS", "cuBLAS fast")


def _bars(ax, rows, columns, ylabel, title) -> None:
    width = 0.8 / len(columns)
    for i, col in enumerate(columns):
        ax.bar([x + i * width for x in range(len(rows))], [r.get(col) or 0 for r in rows],
               width, label=col)
    ax.set_xticks([x + 0.4 for x in range(len(rows))],
                  ["x".join(map(str, r["shape"])) for r in rows], rotation=60, ha="right",
                  fontsize=7)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)


def chart(rows, path, fp8_rows=()) -> None:
    """Bars of TFLOP/s per shape: bf16 (``COLUMNS``) and, beside them, FP8 (``FP8_COLUMNS``)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(matplotlib not installed: no chart)")
        return
    panels = 2 if fp8_rows else 1
    fig, axes = plt.subplots(1, panels, figsize=(max(8, (len(rows) + 2 * len(fp8_rows)) * 0.7),
                                                 4.5), squeeze=False, gridspec_kw=dict(
        width_ratios=[len(rows), 2 * len(fp8_rows)] if fp8_rows else [1]))
    _bars(axes[0][0], rows, COLUMNS, "TFLOP/s (bf16)",
          "GEMM bf16 on the H200: warpstage vs cuBLAS vs Triton")
    if fp8_rows:
        _bars(axes[0][1], fp8_rows, FP8_COLUMNS, "TFLOP/s (fp8 e4m3)",
              "FP8: scaled_matmul vs torch._scaled_mm")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"chart: {path}")


def environment() -> str:
    import torch
    import triton
    commit = os.environ.get("WARPSTAGE_COMMIT")
    if not commit:
        try:
            commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                                    capture_output=True, text=True).stdout.strip() or "unknown"
        except OSError:
            commit = "unknown"
    return (f"{datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC, commit {commit}, "
            f"{torch.cuda.get_device_name()}, torch {torch.__version__}, triton "
            f"{triton.__version__}, CUDA {torch.version.cuda}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--shape", action="append", default=[], help="M,N,K (repeatable)")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--no-sweep", action="store_true", help="skip the policy sweep")
    ap.add_argument("--kmajor", action="store_true", help="the --shape rows with B = W.T of an "
                    "(N, K) nn.Linear weight, as the LLM rows")
    ap.add_argument("--no-fp8", action="store_true", help="skip the FP8 squares")
    ap.add_argument("--fp8", action="store_true", help="FP8: ws.ops.scaled_matmul against "
                    "torch._scaled_mm (benchmarks/gemm_fp8.py)")
    ap.add_argument("--small-m", action="store_true", help="small M (64-256 rows), device "
                    "time and end to end, and its tile sweep (benchmarks/gemm_small_m.py)")
    args = ap.parse_args(argv)
    import torch
    if not torch.cuda.is_available():
        print("benchmarks/gemm.py needs a CUDA GPU (torch.cuda.is_available() is False)")
        return 0
    sys.path.insert(0, ROOT)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    if args.small_m:
        import gemm_small_m
        shapes = [tuple(int(x) for x in s.split(",")) for s in args.shape] or None
        block = gemm_small_m.run(shapes, args.iters, args.repeats, environment(), args.quick)
        print("\n" + block)
        with open(os.path.join(os.environ.get("OUT") or "/tmp", "gemm_small_m.md"), "w") as f:
            f.write(block)
        return 0
    if args.fp8:
        import gemm_fp8
        shapes = ([tuple(int(x) for x in s.split(",")) for s in args.shape] or
                  gemm_fp8.SQUARES + ([] if args.quick else gemm_fp8.LLM))
        block = gemm_fp8.run(shapes, args.iters, args.repeats, environment())
        print("\n" + block)
        with open(os.path.join(os.environ.get("OUT") or "/tmp", "gemm_fp8_results.md"), "w") as f:
            f.write(block)
        return 0
    shapes = ([(tuple(int(x) for x in s.split(",")), args.kmajor) for s in args.shape] or
              [(s, False) for s in (SQUARES if args.quick else SIZES)]
              + ([] if args.quick else [(s, True) for s in LLM]))
    import gemm_fp8
    fp8_rows = []
    for shape in [] if args.no_fp8 else gemm_fp8.SQUARES:   # 4096^3, 8192^3: a target row
        fp8_rows.append(gemm_fp8.measure(*shape, args.iters, args.repeats))
        print("FP8", gemm_fp8.table(fp8_rows[-1:]).splitlines()[-1], flush=True)
    rows = []
    for shape, kmajor in shapes:
        rows.append(measure_shape(*shape, kmajor, args.iters, args.repeats, sms))
        print(table(rows[-1:]).splitlines()[-1], f"  [{rows[-1]['policy']}]", flush=True)
    sweeps = [] if args.no_sweep else [(s, sweep(*s, args.iters, args.repeats))
                                       for s in SQUARES]
    if not args.no_sweep and not args.quick:
        sweeps += [(s, sweep(*s, args.iters, args.repeats, SMALL_SWEEP, True)) for s in SMALL_M]
    out = os.environ.get("OUT") or "/tmp"
    block = (f"## GEMM, bf16 in / f32 accumulation / bf16 out (`benchmarks/gemm.py`)\n\n"
             f"{environment()}. TFLOP/s, medians of {args.repeats} runs of back-to-back calls, "
             "inputs rotated.\n\n" + table(rows) + "\n\nFP8 e4m3 in, per-tensor scales, bf16 "
             "out (`ws.ops.scaled_matmul` against `torch._scaled_mm`; benchmarks/gemm_fp8.py's "
             "columns):\n\n" + gemm_fp8.table(fp8_rows) + "\n" + "".join(
                 f"\nPolicies at {'x'.join(map(str, s))} (kernel launched directly"
                 f"{', B K-major' if s in SMALL_M else ''}): "
                 + "; ".join(f"{', '.join(f'{k}={v}' for k, v in f.items())}: {t:.0f}"
                             for f, t in rows_) + "\n" for s, rows_ in sweeps))
    print("\n" + block)
    with open(os.path.join(out, "gemm_results.md"), "w") as f:
        f.write(block)
    chart(rows, os.path.join(out, "gemm.png"), fp8_rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
