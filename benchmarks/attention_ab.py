"""Interleaved A/B timing of FlashAttention policy variants on the H200, with the SM clock and
board power sampled under load.

Why: single back-to-back timings of one variant after another (``attention.py --sweep``) moved
by 3% between runs in session 10 (RESULTS.md, "Session 10, device call A"), more than the
effects being decided. Here every round times each variant once (``iters`` calls, CUDA events,
device time with a warmed queue) in a rotated order, so drift in clocks or temperature falls
on all of them alike; the table gives the median over rounds and the spread (25th-75th
percentile). ``nvidia-smi`` samples ``clocks.sm`` and ``power.draw`` every 50 ms in the
background; each variant's rows average the samples taken while its timings ran.

    PYTHONPATH=. python3 benchmarks/attention_ab.py --set d128 --shapes "4,16,4096;8,16,1024"
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from attention import _launcher, _policy, error, flops, inputs, sdpa  # noqa: E402

BASE128 = dict(fma_select=True, rescale_threshold=8.0)


def _shipped(*points):
    """(D, causal, fields) per (D, causal, short): the op's shipped fields there
    (``attention_plan.shipped_fields``)."""
    from warpstage.ops.attention_plan import shipped_fields
    return [(d, causal, shipped_fields(d, causal, short)) for d, causal, short in points]


def _wide_variants(tile_n, causal):
    """D = 96 / 192 / 256: the shipped default (``WGMMA_DEFAULTS``: causal on the one-CTA-per-tile
    grid), then fma_select, the rescale threshold, packed P, and (causal) dynamic_tiles."""
    base = dict(tile_n=tile_n, persistent=False) if causal else dict(tile_n=tile_n)
    fast = dict(base, fma_select=True)
    rest = dict(fast, rescale_threshold=8.0)
    out = [base, fast, rest, dict(rest, packed_p=True)]
    dyn = dict(rest, packed_p=True, dynamic_tiles=True)
    dyn.pop("persistent", None)
    return out + [dyn]
SETS = {
    # the D=128 non-causal default against the fields it could still take
    "d128": {(128, False): [dict(BASE128), dict(BASE128, dynamic_tiles=True),
                            dict(BASE128, packed_p=True), dict(BASE128, num_stages=3),
                            dict(BASE128, packed_p=True, dynamic_tiles=True)]},
    "d128c": {(128, True): [dict(BASE128, packed_p=True, dynamic_tiles=True),
                            dict(BASE128, packed_p=True, dynamic_tiles=True, num_stages=3)]},
    # session 13: D=128 non-causal, the one point under cuDNN (B=8 S=1024, 0.99x since session
    # 8): the short default, its rescale at the wait with packed P, and three consumer
    # warpgroups (192-row tiles) of 64 / 80 keys (160 registers each, no spills; 96 keys spill)
    "d128s13": {(128, False): [dict(BASE128, dynamic_tiles=True), dict(BASE128),
                               dict(BASE128, dynamic_tiles=True, packed_p=True,
                                    rescale_at_wait=True),
                               dict(BASE128, consumer_wgs=3, tile_n=80, skip_idle=True,
                                    partial_last=True),
                               dict(BASE128, consumer_wgs=3, tile_n=64, skip_idle=True,
                                    partial_last=True),
                               dict(BASE128, consumer_wgs=3, tile_n=80, dynamic_tiles=True)]},
    # session 13 call C: the flagship's shapes (S >= 2048), the long default against three
    # consumer warpgroups of 80 keys (call B: +1.9% with dynamic_tiles at B=4 S=4096, under
    # the power cap) with and without skipping the idle warpgroups of the partial row block
    "d128l13": {(128, False): [dict(BASE128),
                               dict(BASE128, consumer_wgs=3, tile_n=80, dynamic_tiles=True),
                               dict(BASE128, consumer_wgs=3, tile_n=80, dynamic_tiles=True,
                                    skip_idle=True, partial_last=True),
                               dict(BASE128, consumer_wgs=3, tile_n=80, skip_idle=True,
                                    partial_last=True),
                               dict(BASE128, consumer_wgs=3, tile_n=80, dynamic_tiles=True,
                                    packed_p=True)]},
    # session 13 call D: where else three warpgroups of 80 keys could pay: D=128 non-causal
    # at S = 1536-2048 (the short table's 2-warpgroup kernel now) and D=128 causal at long S
    "d128m13": {(128, False): [dict(BASE128, dynamic_tiles=True),
                               dict(BASE128, consumer_wgs=3, tile_n=80, dynamic_tiles=True,
                                    skip_idle=True, partial_last=True),
                               dict(BASE128, consumer_wgs=3, tile_n=80, skip_idle=True,
                                    partial_last=True)]},
    "d128c13": {(128, True): [dict(BASE128, packed_p=True, dynamic_tiles=True),
                              dict(BASE128, consumer_wgs=3, tile_n=80, packed_p=True,
                                   dynamic_tiles=True),
                              dict(BASE128, consumer_wgs=3, tile_n=64, packed_p=True,
                                   dynamic_tiles=True, narrow_last=True)]},
    # session 13 call E: the per-launch cost at D=128 S=1024 (time against B: the slope is the
    # per-tile cost, the intercept the launch's fill and drain), persistent or one CTA per tile
    "d128f13": {(128, False): [dict(BASE128, dynamic_tiles=True),
                               dict(BASE128, persistent=False)]},
    # session 13 call F: the new D=128 long default (3 warpgroups of 80 keys: a K/V tile is
    # ~60% of a 128-key step's time, so 2 stages hide less of TMA's latency) with 3 stages
    # (223 KiB of shared memory with the TMA-store buffers)
    "d128n13": {(128, False): [dict(BASE128, consumer_wgs=3, tile_n=80, dynamic_tiles=True,
                                    skip_idle=True, partial_last=True),
                               dict(BASE128, consumer_wgs=3, tile_n=80, dynamic_tiles=True,
                                    skip_idle=True, partial_last=True, num_stages=3)]},
    # session 14 call A: D=128 non-causal S=1024 (B=8 the one point under cuDNN): the short
    # default (2 warpgroups of 128 keys, dynamic_tiles) against the fields not yet tried with
    # dynamic_tiles there, and the static schedule's overlap_tiles (session 8: +0.8% over it)
    "d128b14": {(128, False): [dict(BASE128, dynamic_tiles=True),
                               dict(BASE128, dynamic_tiles=True, num_stages=3),
                               dict(BASE128, dynamic_tiles=True, lead_waits=True),
                               dict(BASE128, dynamic_tiles=True, packed_p=True),
                               dict(BASE128, overlap_tiles=True, packed_p=True),
                               dict(BASE128, overlap_tiles=True)]},
    # session 14 call B: claimed tiles with the tile boundaries overlapped (new), against the
    # short default (dynamic_tiles alone) and the static overlap_tiles (call A: +0.9% at B=8,
    # +2.0% at B=4, -0.6% at B=16 against the short default)
    "d128d14": {(128, False): [dict(BASE128, dynamic_tiles=True),
                               dict(BASE128, dynamic_tiles=True, overlap_tiles=True),
                               dict(BASE128, dynamic_tiles=True, overlap_tiles=True,
                                    packed_p=True),
                               dict(BASE128, overlap_tiles=True)]},
    # the same at D=128's long shapes (the 3-warpgroup default has skip_idle, which
    # overlap_tiles excludes) and D=64's default (static overlap_tiles) with claimed tiles
    "d128e14": {(128, False): [dict(BASE128, consumer_wgs=3, tile_n=80, dynamic_tiles=True,
                                    skip_idle=True, partial_last=True),
                               dict(BASE128, dynamic_tiles=True, overlap_tiles=True),
                               dict(BASE128, consumer_wgs=3, tile_n=80, dynamic_tiles=True,
                                    overlap_tiles=True)]},
    "d64d14": {(64, False): [dict(tile_n=128, consumer_wgs=3, fma_select=True,
                                  overlap_tiles=True, packed_p=True, rescale_at_wait=True),
                             dict(tile_n=128, consumer_wgs=3, fma_select=True,
                                  overlap_tiles=True, packed_p=True, rescale_at_wait=True,
                                  dynamic_tiles=True)]},
    # session 14 call C: claimed tiles with overlapped boundaries where else they could pay:
    # D=128 causal (the default claims tiles, no overlap), D=96 (long: 3 warpgroups of 112
    # keys, static; short: 2 of 128, claimed), D=64 non-causal short (3 stages, static overlap)
    "d128c14": {(128, True): [dict(BASE128, packed_p=True, dynamic_tiles=True),
                              dict(BASE128, packed_p=True, dynamic_tiles=True,
                                   overlap_tiles=True)]},
    "d96d14": {(96, False): [dict(tile_n=112, consumer_wgs=3, fma_select=True),
                             dict(tile_n=112, consumer_wgs=3, fma_select=True,
                                  dynamic_tiles=True, overlap_tiles=True),
                             dict(tile_n=128, consumer_wgs=2, fma_select=True,
                                  dynamic_tiles=True),
                             dict(tile_n=128, consumer_wgs=2, fma_select=True,
                                  dynamic_tiles=True, overlap_tiles=True)]},
    "d64s14": {(64, False): [dict(tile_n=128, num_stages=3, consumer_wgs=3, fma_select=True,
                                  overlap_tiles=True, packed_p=True, rescale_at_wait=True),
                             dict(tile_n=128, num_stages=3, consumer_wgs=3, fma_select=True,
                                  overlap_tiles=True, packed_p=True, rescale_at_wait=True,
                                  dynamic_tiles=True)]},
    # session 14 call D: the flagship's long default (3 warpgroups of 80 keys) against the
    # exponent split between MUFU and FMA (poly_exp2: k of every 8 on the FMA pipe), a higher
    # rescale threshold and lead_waits
    "d128f14": {(128, False): [dict(BASE128, consumer_wgs=3, tile_n=80, dynamic_tiles=True,
                                    skip_idle=True, partial_last=True),
                               dict(BASE128, consumer_wgs=3, tile_n=80, dynamic_tiles=True,
                                    skip_idle=True, partial_last=True, poly_exp2=2),
                               dict(BASE128, consumer_wgs=3, tile_n=80, dynamic_tiles=True,
                                    skip_idle=True, partial_last=True, poly_exp2=4),
                               dict(fma_select=True, rescale_threshold=12.0, consumer_wgs=3,
                                    tile_n=80, dynamic_tiles=True, skip_idle=True,
                                    partial_last=True),
                               dict(BASE128, consumer_wgs=3, tile_n=80, dynamic_tiles=True,
                                    skip_idle=True, partial_last=True, lead_waits=True)]},
    # session 14 closing call: the rescale threshold 8 (shipped) against 12 on the long default
    # (call D: +0.5% / +1.6% short, within the spread), with sustained windows
    "d128t14": {(128, False): [dict(BASE128, consumer_wgs=3, tile_n=80, dynamic_tiles=True,
                                    skip_idle=True, partial_last=True),
                               dict(fma_select=True, rescale_threshold=12.0, consumer_wgs=3,
                                    tile_n=80, dynamic_tiles=True, skip_idle=True,
                                    partial_last=True)]},
    # session 14 call G: D=64 causal, the lowest points (1.01x at S=1024 / 2048): its short
    # default (2 warpgroups, static overlap) and long default (3 warpgroups, 3 stages,
    # skip_idle) with claimed tiles
    "d64c14": {(64, True): [dict(tile_n=128, num_stages=3, consumer_wgs=2, late_wait=False,
                                 fma_select=True, overlap_tiles=True),
                            dict(tile_n=128, num_stages=3, consumer_wgs=2, late_wait=False,
                                 fma_select=True, overlap_tiles=True, dynamic_tiles=True),
                            dict(tile_n=128, num_stages=3, consumer_wgs=3, late_wait=False,
                                 fma_select=True, skip_idle=True),
                            dict(tile_n=128, num_stages=3, consumer_wgs=3, late_wait=False,
                                 fma_select=True, skip_idle=True, dynamic_tiles=True)]},
    # session 15, boundary15: the D=128 short defaults with the tile boundary peeled (shipped)
    # against the boundary as one more step of the K/V loop (shared_boundary: the kernel's
    # SASS 3,193 -> 2,661 instructions non-causal, 3,402 -> 2,820 causal; ptx and ptxas ~-30%)
    "d128sb15": {(128, False): [dict(BASE128, tile_n=128, dynamic_tiles=True, overlap_tiles=True,
                                     packed_p=True),
                                dict(BASE128, tile_n=128, dynamic_tiles=True, overlap_tiles=True,
                                     packed_p=True, shared_boundary=True)]},
    "d128csb15": {(128, True): [dict(BASE128, tile_n=128, dynamic_tiles=True, overlap_tiles=True,
                                     packed_p=True),
                                dict(BASE128, tile_n=128, dynamic_tiles=True, overlap_tiles=True,
                                     packed_p=True, shared_boundary=True)]},
    # session 16 (H100, the first run with FlashAttention-4 beside): where FA4 leads, D=128
    # non-causal at S >= 8192 (0.91-0.95x FA4) with the long default (3 warpgroups of 80 keys)
    # against FA4's shape (2 warpgroups of 128 keys) with and without overlapped boundaries
    "fa4d128l16": {(128, False): [dict(BASE128, consumer_wgs=3, tile_n=80, dynamic_tiles=True,
                                       skip_idle=True, partial_last=True),
                                  dict(BASE128, tile_n=128, dynamic_tiles=True, packed_p=True),
                                  dict(BASE128, tile_n=128, dynamic_tiles=True,
                                       overlap_tiles=True, packed_p=True)]},
    # D=64 non-causal at S >= 4096 (0.90-0.96x FA4): the long default, with claimed tiles, and
    # with 2 warpgroups
    "fa4d64l16": {(64, False): [dict(tile_n=128, consumer_wgs=3, fma_select=True,
                                     overlap_tiles=True, packed_p=True, rescale_at_wait=True),
                                dict(tile_n=128, consumer_wgs=3, fma_select=True,
                                     overlap_tiles=True, packed_p=True, rescale_at_wait=True,
                                     dynamic_tiles=True),
                                dict(tile_n=128, consumer_wgs=2, fma_select=True,
                                     overlap_tiles=True, packed_p=True, rescale_at_wait=True)]},
    # session 17: FlashAttention-4's step order read from its SASS (the P V wait after the
    # exponent arguments, the exponentials interleaved with the rescale and P's conversion),
    # over the long defaults, and FA4's shape with it at D=128
    "eaw17": {(64, False): [dict(tile_n=128, consumer_wgs=3, fma_select=True,
                                 overlap_tiles=True, packed_p=True, rescale_at_wait=True),
                            dict(tile_n=128, consumer_wgs=3, fma_select=True,
                                 overlap_tiles=True, packed_p=True, rescale_at_wait=True,
                                 exp_after_wait=True)],
              (128, False): [dict(BASE128, consumer_wgs=3, tile_n=80, dynamic_tiles=True,
                                  skip_idle=True, partial_last=True),
                             dict(BASE128, consumer_wgs=3, tile_n=80, dynamic_tiles=True,
                                  skip_idle=True, partial_last=True, exp_after_wait=True),
                             dict(fma_select=True, tile_n=128, dynamic_tiles=True, packed_p=True,
                                  rescale_at_wait=True, exp_after_wait=True)]},
    # session 18: wider key tiles for FA4's shape (2 consumer warpgroups) at D=128 long. The
    # K/V step's straight path is ~178 fixed instructions + ~2.36 per key (SASS, CPU: 480 /
    # 517 / 555 / 593 / 631 at 128 / 144 / 160 / 176 / 192 keys, 168 registers, no spills,
    # 194-225 KiB of shared memory), so 192 keys issue 12% fewer per key; session 3's width
    # sweep (176 best then) predates every schedule piece since
    "wide18": {(128, False): [dict(BASE128, consumer_wgs=3, tile_n=80, dynamic_tiles=True,
                                   skip_idle=True, partial_last=True)]
               + [dict(fma_select=True, tile_n=tn, dynamic_tiles=True, packed_p=True,
                       rescale_threshold=8.0, exp_after_wait=eaw)
                  for tn in (128, 160, 192) for eaw in (False, True)]},
    # session 19: exp_after_wait where session 19's eaw17 runs did not reach: the short
    # defaults (S_q <= short_bound) at D=64 and D=128 non-causal (eaw19s), and the causal long
    # defaults (eaw19c)
    "eaw19s": {(d, causal): [dict(f, exp_after_wait=eaw) for eaw in (False, True)]
               for d, causal, f in _shipped((64, False, True), (128, False, True))},
    "eaw19c": {(d, causal): [dict(f, exp_after_wait=eaw) for eaw in (False, True)]
               for d, causal, f in _shipped((64, True, False), (128, True, False))},
    # session 12: the wide head dims still carry session 4-5's fields (the two-instruction
    # exponent, no rescale threshold); the pieces D=64/128 took since, over each default
    "wide12": {key: _wide_variants(tile_n, causal) for key, tile_n, causal in (
        ((96, False), 128, False), ((96, True), 128, True), ((192, False), 96, False),
        ((192, True), 96, True), ((256, False), 64, False), ((256, True), 64, True))},
    # session 12 call B: D=96 after wide12 (S=1024 0.86x non-causal, 0.90x causal): three
    # consumer warpgroups (192-row tiles, 128 registers each, no spills at 96 or 112 keys)
    "d96": {
        (96, False): [dict(fma_select=True),
                      dict(consumer_wgs=3, tile_n=96, fma_select=True),
                      dict(consumer_wgs=3, tile_n=112, fma_select=True),
                      dict(consumer_wgs=3, tile_n=96, fma_select=True, overlap_tiles=True,
                           packed_p=True, rescale_at_wait=True),
                      dict(consumer_wgs=3, tile_n=96, fma_select=True, dynamic_tiles=True),
                      dict(consumer_wgs=3, tile_n=96, fma_select=True, num_stages=3)],
        (96, True): [dict(BASE128, packed_p=True, dynamic_tiles=True),
                     dict(consumer_wgs=3, tile_n=96, fma_select=True, dynamic_tiles=True),
                     dict(consumer_wgs=3, tile_n=96, fma_select=True, persistent=False),
                     dict(consumer_wgs=3, tile_n=96, fma_select=True, skip_idle=True),
                     dict(consumer_wgs=3, tile_n=96, num_stages=3, late_wait=False,
                          fma_select=True, skip_idle=True)],
    },
    # session 12 call C: D=96 with the TMA-store epilogue in 64 x 32 blocks (new), against
    # its scalar stores (tma_store=False, the kernel before) and the call-B candidates
    "d96s": {
        (96, False): [dict(fma_select=True), dict(fma_select=True, tma_store=False),
                      dict(fma_select=True, dynamic_tiles=True),
                      dict(consumer_wgs=3, tile_n=112, fma_select=True),
                      dict(consumer_wgs=3, tile_n=96, fma_select=True, skip_idle=True,
                           partial_last=True)],
        (96, True): [dict(BASE128, packed_p=True, dynamic_tiles=True),
                     dict(BASE128, packed_p=True, dynamic_tiles=True, tma_store=False),
                     dict(fma_select=True, dynamic_tiles=True),
                     dict(fma_select=True, persistent=False)],
    },
}


def sampler(path):
    """Start nvidia-smi sampling (time, SM clock MHz, power W) every 50 ms into ``path``."""
    return subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,clocks.sm,power.draw",
                             "--format=csv,noheader,nounits", "-lms", "50"],
                            stdout=open(path, "w"), stderr=subprocess.DEVNULL)


def read_samples(path):
    import datetime
    out = []
    for line in open(path):
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 3:
            continue
        try:
            t = datetime.datetime.strptime(parts[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
            out.append((t, float(parts[1]), float(parts[2])))
        except ValueError:
            continue
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", default="d128", choices=sorted(SETS))
    ap.add_argument("--shapes", default="4,16,4096;8,16,1024")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--sustain", type=float, default=0.0,
                    help="also run each variant back to back for this many seconds (after a "
                         "1 s rest) and report its rate, clock and power over that window")
    ap.add_argument("--out", default=os.environ.get("OUT", tempfile.mkdtemp()))
    args = ap.parse_args()
    import torch
    import torch.nn.functional as F
    from gpu_timing import seconds_per_call
    smi_path = os.path.join(args.out, "smi_samples.csv")
    smi = sampler(smi_path)
    windows = []                  # (name, shape, t0, t1)
    results = []
    try:
        for (d, causal), variants in SETS[args.set].items():
            for shape in [tuple(int(x) for x in s.split(",")) for s in args.shapes.split(";")]:
                b, h, s = shape
                q, k, v = inputs(b, h, s, d)
                ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(),
                                                     is_causal=causal)
                f = flops(b, h, s, s, d, causal)
                cudnn = sdpa("cudnn")
                runs = [("cuDNN", lambda: cudnn(q, k, v, causal), None)]
                for fields in variants:
                    fa = _policy(d, causal, fields)
                    o = torch.full_like(q, float("nan"))
                    run = _launcher(fa, q, k, v, o)
                    run()
                    torch.cuda.synchronize()
                    runs.append((json.dumps(fields, sort_keys=True), run, error(o, ref)))
                times = {name: [] for name, _, _ in runs}
                for r in range(args.rounds):
                    order = runs[r % len(runs):] + runs[:r % len(runs)]
                    for name, fn, _ in order:
                        t0 = time.time()
                        times[name].append(seconds_per_call(fn, args.iters, 1, warm_queue=True))
                        windows.append((name, shape, t0, time.time()))
                if args.sustain:
                    for name, fn, _ in runs:
                        time.sleep(1.0)
                        n = max(1, int(args.sustain / (f / 600e12)))
                        start = torch.cuda.Event(enable_timing=True)
                        end = torch.cuda.Event(enable_timing=True)
                        t0 = time.time()
                        start.record()
                        for _ in range(n):
                            fn()
                        end.record()
                        torch.cuda.synchronize()
                        windows.append(("sustain " + name, shape, t0 + 0.3, time.time()))
                        results.append(dict(shape=[b, h, s, d], causal=causal,
                                            name="sustain " + name, err=None,
                                            median=f * n / (start.elapsed_time(end) / 1e3) / 1e12,
                                            q1=float("nan"), q3=float("nan")))
                for name, _, err in runs:
                    ts = sorted(times[name])
                    tf = [f / t / 1e12 for t in ts]
                    results.append(dict(shape=[b, h, s, d], causal=causal, name=name, err=err,
                                        median=statistics.median(tf),
                                        q1=tf[len(tf) * 3 // 4], q3=tf[len(tf) // 4]))
                del q, k, v, ref
                torch.cuda.empty_cache()
    finally:
        time.sleep(0.2)
        smi.terminate()
        smi.wait()
    samples = read_samples(smi_path)
    for row in results:
        sel = [(c, p) for (n, sh, t0, t1) in windows
               if n == row["name"] and list(sh) == row["shape"][:3]
               for (t, c, p) in samples if t0 <= t <= t1]
        row["clock"] = statistics.mean(c for c, _ in sel) if sel else float("nan")
        row["power"] = statistics.mean(p for _, p in sel) if sel else float("nan")
        row["samples"] = len(sel)
    by_shape = {}
    for row in results:
        by_shape.setdefault((tuple(row["shape"]), row["causal"]), []).append(row)
    for (shape, causal), rows in by_shape.items():
        bases = {}
        for row in rows:
            kind = row["name"].startswith("sustain ")
            if "cuDNN" not in row["name"]:
                bases.setdefault(kind, row["median"])
        print(f"B={shape[0]} H={shape[1]} S={shape[2]} D={shape[3]} causal={causal} "
              f"({args.rounds} rounds x {args.iters} calls, interleaved)")
        for row in rows:
            print(f"  {row['name'][:90]:90s} {row['median']:6.1f} TFLOP/s "
                  f"[{row['q1']:6.1f}-{row['q3']:6.1f}] x base {row['median'] / bases[row['name'].startswith('sustain ')]:.3f} "
                  f"clock {row['clock']:6.0f} MHz power {row['power']:5.0f} W "
                  f"(n={row['samples']}) err {row['err'] if row['err'] is not None else 0:.1e}")
    with open(os.path.join(args.out, "attention_ab.json"), "w") as fh:
        json.dump(results, fh, indent=1)


if __name__ == "__main__":
    main()
