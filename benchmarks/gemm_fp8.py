"""FP8 GEMM: ``ws.ops.scaled_matmul`` (the matmul kernel with e4m3 operands, tile_k 128,
wgmma m64nNk32) against cuBLAS through ``torch._scaled_mm``, e4m3 in, per-tensor f32 scales,
f32 accumulation, bf16 out, in one process on the GPU. Run as ``benchmarks/gemm.py --fp8``
(``--quick``: 4096^3 and 8192^3 only; ``--shape M,N,K`` repeatable).

Shapes: M x N x K; A (M, K) row-major, B = W.T of an (N, K) weight (column-major, what
torch._scaled_mm requires and fp8 wgmma reads without a copy). Columns: ``ws.ops`` (the public
call, host code included), ``ws kernel`` (the kernel launched with descriptors built once; "-"
where the shape is split-K), cuBLAS ``torch._scaled_mm`` with ``use_fast_accum=False`` (its
default: cuBLAS adds the tensor cores' partial sums into f32 registers every few K steps) and
``True`` (accumulation left in the tensor cores, as warpstage's kernel does), ``dev`` columns
(ws.ops and cuBLAS timed with a warmed queue: device time, gpu_timing.py; the others are end to
end), cuBLAS bf16 (``torch.matmul`` of the bf16-converted operands, device time), and the floor
max(2MNK / peak, bytes / HBM) with the H200's 1979 TFLOP/s dense fp8 and 4.8 TB/s. Medians of
``--repeats`` runs of ``--iters`` back-to-back calls (CUDA events), inputs rotated over copies
so L2 does not keep them. Max errors against the f32 product of the decoded inputs, relative
to its max |.|. A benchmark: nothing is asserted.
"""
from __future__ import annotations

import itertools

from gpu_timing import seconds_per_call   # benchmarks/ is on sys.path when run as a script

SQUARES = [(4096, 4096, 4096), (8192, 8192, 8192)]
LLM = [(m, n, k) for n, k in ((4096, 4096), (11008, 4096), (4096, 11008), (128256, 4096))
       for m in (16, 128, 4096, 16384)]
PEAK, HBM = 1978.9e12, 4.8e12                # H200 SXM: dense fp8 FLOP/s, HBM bytes/s
COLUMNS = ("ws.ops", "ws.ops dev", "ws kernel", "cuBLAS", "cuBLAS dev", "cuBLAS fast",
           "bf16 cuBLAS dev", "floor")
DEVICE_TIMED = ("ws.ops", "cuBLAS")
"""Also timed with a warmed queue (device time, the ``dev`` columns; gpu_timing.py)."""


def input_sets(m, n, k, budget=8 << 30):
    """Copies of (a, b, scale_a, scale_b, c) to rotate over (> 2 x 50 MB L2, at most 4)."""
    import torch
    per = m * k + k * n + 2 * m * n
    count = max(1, min(4, -(-(100 << 20) // per), budget // per))
    g = torch.Generator(device="cuda").manual_seed(0)
    sets = []
    for _ in range(count):
        a = (torch.randn(m, k, device="cuda", generator=g) * 2).to(torch.float8_e4m3fn)
        b = (torch.randn(n, k, device="cuda", generator=g) * 2).to(torch.float8_e4m3fn).T
        sa, sb = torch.tensor(0.5, device="cuda"), torch.tensor(0.25, device="cuda")
        sets.append((a, b, sa, sb, torch.empty(m, n, device="cuda", dtype=torch.bfloat16)))
    return sets


def kernel_runner(a, b, sa, sb, c):
    """(a zero-argument launch of the kernel ``scaled_matmul`` picks, with descriptors made
    once, or None for a split-K shape; the policy)."""
    import warpstage as ws
    from warpstage.ops import matmul_host
    from warpstage.ops.matmul_kernel import tile_k_of
    from warpstage.runtime.tensors import as_tensor_arg
    m, k = a.shape
    n = b.shape[1]
    e4m3 = ws.Float8E4M3FN
    xa, _, _ = matmul_host._operand("a", a, as_tensor_arg(a), e4m3, True)
    xb, _, _ = matmul_host._operand("b", b, as_tensor_arg(b), e4m3, False)
    sms = matmul_host._sms(as_tensor_arg(a))
    tm, tn, group, splits = matmul_host.choose_config(m, n, k, 1, sms, k_step=tile_k_of(e4m3))
    epi = ws.ops.Scales(sa.reshape(-1), sb.reshape(-1))
    p = matmul_host.make_policy(e4m3, ws.BFloat16, "K", "K", False, tn, None, "M", group,
                                "cooperative", epi, tile_m=tm)
    if splits > 1:
        return None, repr(p) + f", {splits} K splits"
    TD = ws.tma.TensorDescriptor
    descs = [TD(x, box, swizzle=128) for x, box in zip((xa, xb, c), p.descriptor_boxes())]
    launch = ws.ops.matmul_kernel[(ws.sched.grid_size(p.tiles(m, n), sms), 1, 1), p.threads]
    ops = tuple(epi.operands())
    return (lambda: launch(p, *descs, m, n, k, 1, 1, ops, 0, ())), repr(p)


def measure(m, n, k, iters, repeats):
    import torch
    import warpstage as ws
    sets = input_sets(m, n, k)
    a, b, sa, sb, c = sets[0]
    ref = (a.float() @ b.float()) * sa * sb
    scale = float(ref.abs().max()) or 1.0
    flops = 2 * m * n * k

    def scaled(fast):
        return lambda a, b, sa, sb, c: (lambda: torch._scaled_mm(
            a, b, sa, sb, out_dtype=torch.bfloat16, use_fast_accum=fast))
    calls = {"ws.ops": lambda a, b, sa, sb, c: (lambda: ws.ops.scaled_matmul(a, b, sa, sb,
                                                                             out=c)),
             "ws kernel": lambda *s: kernel_runner(*s)[0],
             "cuBLAS": scaled(False), "cuBLAS fast": scaled(True)}
    row = {"shape": (m, n, k), "errors": {}, "policy": kernel_runner(*sets[0])[1]}
    it = max(3, min(iters, int(4e13 // flops) or 3))
    for name, make in calls.items():
        try:
            if make(*sets[0]) is None:
                row[name] = None
                continue
            c.fill_(float("nan"))
            got = make(*sets[0])()
            got = c if got is None else got
            row["errors"][name] = float((got.float() - ref).abs().max()) / scale
            runs = itertools.cycle([make(*s) for s in sets])
            row[name] = flops / seconds_per_call(lambda: next(runs)(), it, repeats) / 1e12
            if name in DEVICE_TIMED:
                row[name + " dev"] = flops / seconds_per_call(lambda: next(runs)(), it, repeats,
                                                              warm_queue=True) / 1e12
        except Exception as e:                # a benchmark reports, it does not stop
            print(f"  {name} at {m}x{n}x{k}: {type(e).__name__}: {str(e)[:300]}", flush=True)
            row[name] = None
    try:
        x16 = a.to(torch.bfloat16)
        w16 = b.to(torch.bfloat16)
        row["bf16 cuBLAS dev"] = flops / seconds_per_call(lambda: torch.matmul(x16, w16), it,
                                                          repeats, warm_queue=True) / 1e12
    except Exception as e:
        print(f"  bf16 cuBLAS at {m}x{n}x{k}: {type(e).__name__}: {str(e)[:300]}", flush=True)
    nbytes = m * k + k * n + 2 * m * n
    row["floor"] = flops / max(flops / PEAK, nbytes / HBM) / 1e12
    del sets
    torch.cuda.empty_cache()
    return row


def table(rows) -> str:
    from tables import figure, markdown, ratio

    def cells(r):
        e = r["errors"]
        errs = ", ".join(f"{e[c]:.1g}" if c in e else "-"
                         for c in ("ws.ops", "cuBLAS", "cuBLAS fast"))
        return (["x".join(map(str, r["shape"]))] + [figure(r.get(c)) for c in COLUMNS]
                + [ratio(r.get("ws.ops"), r.get(c)) for c in ("cuBLAS", "cuBLAS fast")]
                + [errs])
    return markdown(("M x N x K",) + COLUMNS + ("ws.ops / cuBLAS", "ws.ops / cuBLAS fast",
                                                "max err (ws, cuBLAS, fast)"),
                    [cells(r) for r in rows])


def run(shapes, iters, repeats, environment) -> str:
    """Measure ``shapes`` and return the RESULTS.md block (also printed row by row)."""
    rows = []
    for s in shapes:
        rows.append(measure(*s, iters, repeats))
        print(table(rows[-1:]).splitlines()[-1], f"  [{rows[-1]['policy']}]", flush=True)
    return (f"## FP8 GEMM, e4m3 in / f32 accumulation / bf16 out (`benchmarks/gemm.py --fp8`)"
            f"\n\n{environment}. TFLOP/s, medians of {repeats} runs of back-to-back calls, "
            "inputs rotated; per-tensor scales.\n\n" + table(rows) + "\n")
