"""Compare the K/V step of one default wgmma FlashAttention kernel built with two LLVM pipelines
(O3 and ``llvm_pipeline='light'``), from the SASS on the CPU (no GPU):

    PYTHONPATH=. python3 scripts/sass_diff.py [--head-dim 64] [--causal] [--long] [--dump DIR]

It compiles ``kernel_ptx.default_attention_kernel((D, causal, short))`` twice (the policy
``ws.ops.flash_attention`` picks), finds each build's K/V step (``sass_report.kv_step``: the
shortest innermost loop around a turn with the most HGMMAs) and prints, per build: the step's
opcode mix and its difference; the sync skeleton (HGMMA runs, WARPGROUP.ARRIVE / DEPBAR,
BAR.SYNC / ARV, SYNCS, MUFU.EX2 runs, FMNMX / FADD runs, branches) with each event's offset
from the step's start; for each HGMMA run the distance back to the last writer of each of its
source registers (the chain feeding it: descriptor arithmetic computed right before the HGMMA
shows as a short distance); how many instructions sit between the step's BAR.SYNC and its
first HGMMA, and between its last HGMMA and the BAR.ARV; where the softmax's classes sit
(``shape``) and a crude one-warp issue estimate of the softmax and of the step's straight path
(``issue_model``: a static-schedule comparison, not a GPU time). ``--dump`` writes both steps'
SASS (``step-*.sass``) and the whole kernels' (``all-*.sass``). Needs ptxas and nvdisasm (``sass_report.find_tool``).
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "scripts"))

EVENTS = [  # (letter, regex): the sync skeleton's events, in the order they are tested
    ("G", r"\bHGMMA\b"), ("a", r"WARPGROUP\.ARRIVE"), ("W", r"WARPGROUP\.DEPBAR"),
    ("B", r"\bBAR\.SYNC"), ("b", r"\bBAR\.ARV"), ("M", r"\bSYNCS\."), ("e", r"MUFU\.EX2"),
    ("m", r"\bFMNMX"), ("+", r"\bFADD\b"), ("j", r"\bBRA\b"), ("c", r"\bF2FP"),
]


def build(head_dim: int, causal: bool, short: bool, pipeline: str) -> tuple:
    """(registers, SASS lines, K/V step) of the default kernel built with ``pipeline``, in a
    child process (a kernel takes ``default_options()``, WARPSTAGE_LLVM_PIPELINE included, once
    at its first use)."""
    import json
    import subprocess
    env = dict(os.environ, WARPSTAGE_CACHE_DIR="", PYTHONPATH=ROOT,
               WARPSTAGE_LLVM_PIPELINE=pipeline)
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", str(head_dim),
                          str(int(causal)), str(int(short))], env=env, check=True,
                         capture_output=True, text=True).stdout
    got = json.loads(out.splitlines()[-1])
    return (got["registers"], got["lines"], tuple(got["step"]) if got["step"] else None,
            got["branches"])


def child(head_dim: int, causal: bool, short: bool) -> None:
    import json
    import kernel_ptx
    import sass_report
    ck = kernel_ptx.default_attention_kernel((head_dim, causal, short))
    lines = sass_report.sass_lines(ck)
    labelled = sass_report.sass_lines(ck, labels=True)
    step = sass_report.kv_step(lines, sass_report.loops(labelled))
    branches = [(i, len(body)) for i, body in sass_report.step_branches(lines, labelled, step)] \
        if step else []
    print(json.dumps({"registers": ck.resources.registers, "lines": lines, "step": step,
                      "branches": branches}))


def text(line: str) -> str:
    """The instruction without its address comment and trailing encoding comment."""
    t = re.sub(r"^\s*/\*[0-9a-f]+\*/\s*", "", line)
    return re.sub(r"\s*/\*.*$", "", t).rstrip(" ;")


def event(line: str) -> str:
    for letter, pat in EVENTS:
        if re.search(pat, line):
            return letter
    return ""


def skeleton(body) -> list:
    """[(offset, letter, run length)]: consecutive equal events folded into runs (other
    instructions between two equal events end the run)."""
    out = []
    for i, ln in enumerate(body):
        e = event(ln)
        if not e:
            continue
        if out and out[-1][1] == e and out[-1][0] + out[-1][2] == i:
            out[-1] = (out[-1][0], e, out[-1][2] + 1)
        else:
            out.append((i, e, 1))
    return out


def regs(operands: str) -> set:
    """The R / UR / P / UP registers (RZ, URZ, PT excluded; R4.64 counts R4 and R5)."""
    out = set()
    for m in re.finditer(r"\b(U?R)(\d+)(\.64)?\b", operands):
        n = int(m.group(2))
        out.add(f"{m.group(1)}{n}")
        if m.group(3):
            out.add(f"{m.group(1)}{n + 1}")
    return out


def dst_src(line: str):
    """(destination registers, source registers) of one instruction (first operand written;
    predicate writers' first one or two operands; stores and HGMMA: the accumulator read too)."""
    t = re.sub(r"^@!?U?P\w+\s+", "", text(line))
    parts = t.split(None, 1)
    if len(parts) < 2:
        return set(), set()
    op, ops = parts[0], [o.strip() for o in parts[1].split(",")]
    if op.startswith(("ST", "BAR", "BRA", "SYNCS", "WARPGROUP", "UTMA", "HGMMA", "EXIT")):
        return set(), regs(",".join(ops))
    return regs(ops[0]), regs(",".join(ops[1:]))


def feeders(body, i: int) -> dict:
    """{source register of body[i]: how many instructions back it was last written} (None:
    not written inside the step before it)."""
    _, src = dst_src(body[i])
    out = {}
    for r in sorted(src):
        out[r] = None
        for k in range(i - 1, -1, -1):
            if r in dst_src(body[k])[0]:
                out[r] = i - k
                break
    return out


def mix(body) -> dict:
    import sass_report
    counts = {}
    for ln in body:
        k = sass_report.opcode(ln)
        counts[k] = counts.get(k, 0) + 1
    return counts


def shape(body) -> str:
    """Where each softmax class sits in the step: first / last offset and count, the longest
    run of back-to-back MUFU.EX2, and the MUFU.EX2 with no FADD / FFMA / FMUL / FMNMX within
    one instruction either side (issued against each other)."""
    out = []
    for name, pat in (("FMNMX", r"\bFMNMX"), ("SHFL", r"\bSHFL"), ("MUFU.EX2", r"MUFU\.EX2"),
                      ("FFMA", r"\bFFMA\b"), ("FADD", r"\bFADD\b"), ("FMUL", r"\bFMUL\b"),
                      ("F2FP", r"\bF2FP")):
        idx = [i for i, ln in enumerate(body) if re.search(pat, ln)]
        if idx:
            out.append(f"{name} {len(idx)} at {idx[0]}-{idx[-1]}")
    ex = [bool(re.search(r"MUFU\.EX2", ln)) for ln in body]
    run = best = 0
    for e in ex:
        run = run + 1 if e else 0
        best = max(best, run)
    fp = [bool(re.search(r"\b(FADD|FFMA|FMUL|FMNMX)\b", ln)) for ln in body]
    alone = sum(1 for i, e in enumerate(ex) if e and not any(fp[max(0, i - 1):i + 2]))
    return "; ".join(out) + f"; longest MUFU.EX2 run {best}; MUFU.EX2 without an FP op beside {alone}"


def issue_model(body, lo: int, hi: int, skip=(), mufu_ii: int = 8, mufu_lat: int = 20,
                fp_lat: int = 4, shfl_lat: int = 24) -> int:
    """A crude estimate of one warp's cycles from ``body[lo]`` to ``body[hi - 1]`` alone on its
    SM sub-partition: in-order issue, one instruction a cycle, each waits for its source
    registers (predicates ignored); MUFU one every ``mufu_ii`` cycles (16 SFU lanes an SM: a
    warp's MUFU.EX2 every 8 cycles on one sub-partition), latencies MUFU ``mufu_lat``, SHFL
    ``shfl_lat``, everything else ``fp_lat``; HGMMA, barriers and waits cost one issue slot.
    ``skip`` = [(branch offset, instructions it jumps over)]: those bodies are not taken."""
    ready, t, mufu_free = {}, 0, 0
    for i in range(lo, hi):
        if any(a < i <= a + n for a, n in skip):
            continue
        d, src = dst_src(body[i])
        start = max([t] + [ready.get(r, 0) for r in src])
        lat = fp_lat
        if "MUFU" in body[i]:
            start, lat = max(start, mufu_free), mufu_lat
            mufu_free = start + mufu_ii
        elif "SHFL" in body[i]:
            lat = shfl_lat
        for r in d:
            ready[r] = start + lat
        t = start + 1
    return max([t] + list(ready.values()))


def report_model(body, skip) -> None:
    waits = [i for i, ln in enumerate(body) if "WARPGROUP.DEPBAR" in ln]
    if len(waits) >= 2:
        est = ", ".join(f"MUFU every {ii}: {issue_model(body, waits[0] + 1, waits[1], skip, ii)}"
                        for ii in (2, 4, 8))
        print(f"  issue model, softmax (after the DEPBAR at {waits[0]} to the one at "
              f"{waits[1]}): {est} cycles")
    print(f"  issue model, the whole step's straight path: "
          f"{issue_model(body, 0, len(body), skip)} cycles (MUFU every 8)")


def report(name: str, body, skip=()) -> None:
    print(f"== {name}: K/V step {len(body)} instructions")
    sk = skeleton(body)
    print("  skeleton (offset letter x run; G=HGMMA a=ARRIVE W=DEPBAR B=BAR.SYNC b=BAR.ARV "
          "M=SYNCS e=MUFU.EX2 m=FMNMX +=FADD j=BRA c=F2FP):")
    print("   ", " ".join(f"{o}{e}x{n}" if n > 1 else f"{o}{e}" for o, e, n in sk))
    bar_s = [i for i, ln in enumerate(body) if re.search(r"\bBAR\.SYNC", ln)]
    bar_a = [i for i, ln in enumerate(body) if re.search(r"\bBAR\.ARV", ln)]
    gm = [i for i, ln in enumerate(body) if re.search(r"\bHGMMA\b", ln)]
    if bar_s and bar_a and gm:
        print(f"  BAR.SYNC at {bar_s[0]} -> first HGMMA {gm[0] - bar_s[0]} instructions; last "
              f"HGMMA of the turn -> BAR.ARV {bar_a[0] - max(g for g in gm if g < bar_a[0])}")
    print("  softmax shape:", shape(body))
    report_model(body, skip)
    for o, e, n in sk:
        if e in "GWBbM":
            print(f"    {o:4d} {e}x{n:<3d} {text(body[o])[:90]}")
    for o, e, n in sk:
        if e == "G":
            f = feeders(body, o)
            near = {r: d for r, d in f.items() if d is not None}
            print(f"    HGMMA run at {o}: source registers last written "
                  + (", ".join(f"{r} {d} back" for r, d in sorted(near.items(), key=lambda x: x[1]))
                     or "outside the step"))


def main(argv=None) -> None:
    if argv is None and sys.argv[1:2] == ["--child"]:
        warnings.simplefilter("ignore")
        child(int(sys.argv[2]), sys.argv[3] == "1", sys.argv[4] == "1")
        return
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--head-dim", type=int, default=64)
    p.add_argument("--causal", action="store_true")
    p.add_argument("--long", action="store_true", help="the S_q > SHORT_SEQ policy")
    p.add_argument("--dump")
    args = p.parse_args(argv)
    warnings.simplefilter("ignore")
    bodies, skips = {}, {}
    for pipeline in ("default", "light"):
        registers, lines, step, branches = build(args.head_dim, args.causal, not args.long, pipeline)
        if step is None:
            raise SystemExit(f"sass_diff.py: no K/V step found in the {pipeline} build")
        lo, hi = step
        body = lines[lo:hi + 1]
        bodies[pipeline] = body
        skips[pipeline] = [(i - lo, n) for i, n in branches]
        print("  forward branches in the step (offset: instructions jumped over): "
              + ", ".join(f"{i - lo}: {n}" for i, n in branches)
              + f"; straight path {len(body) - sum(n for _, n in branches)}")
        print(f"{pipeline}: {len(lines)} instructions, registers {registers}, "
              f"K/V step {lo}-{hi}")
        if args.dump:
            os.makedirs(args.dump, exist_ok=True)
            with open(os.path.join(args.dump, f"step-{pipeline}.sass"), "w") as f:
                f.write("\n".join(text(ln) for ln in body) + "\n")
            with open(os.path.join(args.dump, f"all-{pipeline}.sass"), "w") as f:
                f.write("\n".join(lines) + "\n")
    for name, body in bodies.items():
        report(name, body, skips[name])
    a, b = mix(bodies["default"]), mix(bodies["light"])
    diff = {k: b.get(k, 0) - a.get(k, 0) for k in set(a) | set(b) if b.get(k, 0) != a.get(k, 0)}
    print("opcode mix, light - default:",
          ", ".join(f"{k} {v:+d}" for k, v in sorted(diff.items(), key=lambda kv: -abs(kv[1])))
          or "equal")


if __name__ == "__main__":
    main()
