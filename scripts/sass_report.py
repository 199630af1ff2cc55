"""Read a kernel's ptxas report and SASS on the CPU (no GPU): registers, spills, stack, shared
memory, and where the instructions that shape a warp-specialized schedule sit.

    PYTHONPATH=. python scripts/sass_report.py attention --head-dim 128 [--causal] \
        [--policy num_stages=3,tile_n=128] [--plan] [--turns] [--paths] [--dump out.sass] \
        [--timeline]

For the FlashAttention wgmma kernel it prints ptxas's resources, then per instruction class (HGMMA,
WARPGROUP.ARRIVE / DEPBAR, MUFU.EX2, BAR.SYNC / BAR.ARV (named barriers), SYNCS (mbarrier), UTMALDG
/ UTMASTG, USETMAXREG, LDL / STL (local memory), F2FP (paired conversions), STG, SHFL, FMNMX, FFMA /
FADD / FMUL / FSEL, BRA) its count and the SASS line numbers of its first and last occurrences;
``--timeline`` prints the consumer loop's instruction classes in order, one letter each, to see
where waits sit between the GEMMs and the softmax; ``--turns`` lists each ping-pong turn (from a
``BAR.SYNC`` to the next ``BAR.ARV``: its length, HGMMAs, FMULs and PRMTs) and the distance from
one turn's start to the next (a K/V step in the loop); ``--paths`` lists the forward branches inside that K/V step (the mask, ``late_wait``'s, the
skipped rescale of ``rescale_threshold``) with the opcodes they jump over, and the step's
straight path (no branch body taken); ``--plan`` starts from the op's shipped
policy for (D, causal) (``attention_plan.WGMMA_DEFAULTS``), ``--policy`` overriding it. Needs ptxas and nvdisasm (or cuobjdump): the
``nvidia-cuda-nvdisasm`` wheel or a CUDA toolkit on PATH.
"""
from __future__ import annotations

import argparse
import ast
import os
import re
import shutil
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

CLASSES = [  # (name, regex on the SASS opcode, timeline letter)
    ("HGMMA", r"\bHGMMA\b", "G"),
    ("WARPGROUP.ARRIVE", r"WARPGROUP\.ARRIVE", "a"),
    ("WARPGROUP.DEPBAR", r"WARPGROUP\.DEPBAR", "W"),
    ("MUFU.EX2", r"MUFU\.EX2", "e"),
    ("BAR.SYNC", r"\bBAR\.SYNC", "B"),
    ("BAR.ARV", r"\bBAR\.ARV", "b"),
    ("SYNCS (mbarrier)", r"\bSYNCS\.", "M"),
    ("UTMALDG", r"UTMALDG", "L"),
    ("UTMASTG", r"UTMASTG", "S"),
    ("USETMAXREG", r"USETMAXREG", "R"),
    ("LDL/STL", r"\b(LDL|STL)\b", "!"),
    ("F2FP", r"\bF2FP", "c"),
    ("PRMT", r"\bPRMT\b", "p"),
    ("PRMT 0x5432 (swap)", r"\bPRMT\b.*0x5432", "p"),
    ("STG", r"\bSTG\b", "g"),
    ("STS/STSM", r"\b(STS|STSM)\b", "s"),
    ("SHFL", r"\bSHFL", "x"),
    ("FMNMX", r"\bFMNMX", "m"),
    ("FFMA", r"\bFFMA\b", "f"),
    ("FADD", r"\bFADD\b", "+"),
    ("FMUL", r"\bFMUL\b", "*"),
    ("FSEL", r"\bFSEL\b", "?"),
    ("BRA", r"\bBRA\b", "j"),
]


def find_tool() -> str:
    tool = shutil.which("nvdisasm") or shutil.which("cuobjdump")
    if tool is None:
        try:
            import nvidia
            for base in nvidia.__path__:
                for name in ("nvdisasm", "cuobjdump"):
                    p = os.path.join(base, "cu13", "bin", name)
                    if os.path.exists(p):
                        return p
        except ImportError:
            pass
    return tool


def sass_lines(ck, labels: bool = False) -> list:
    """The SASS instruction lines (with ``labels``, also nvdisasm's ``.L_x_N:`` label lines)."""
    tool = find_tool()
    if tool is None:
        raise SystemExit("no nvdisasm or cuobjdump: pip install nvidia-cuda-nvdisasm")
    os.environ["PATH"] = os.path.dirname(tool) + os.pathsep + os.environ.get("PATH", "")
    sass = ck.sass
    return [ln for ln in sass.splitlines() if re.search(r"/\*[0-9a-f]{4,}\*/", ln)
            or (labels and re.match(r"\s*\.L_x_\d+:", ln))]


def loops(lines_with_labels) -> list:
    """[(first, last)] instruction indices of each backward branch's loop: from the label it
    jumps to up to the branch itself."""
    where, n, out = label_positions(lines_with_labels), 0, []
    for ln in lines_with_labels:
        if re.match(r"\s*\.L_x_\d+:", ln):
            continue
        m = re.search(r"\bBRA\b.*`\((\.L_x_\d+)\)", ln)
        if m and where.get(m.group(1), n + 1) <= n:
            out.append((where[m.group(1)], n))
        n += 1
    return out


def report(ck, timeline: bool = False, dump: str = None) -> None:
    res = ck.resources
    print(f"ptxas: {res.registers} registers at entry, spills {res.spill_stores} st / "
          f"{res.spill_loads} ld, stack {res.stack_frame} B, dynamic smem {ck.dynamic_smem} B")
    log = ck.ptxas_log.strip()
    if log:
        print("ptxas log:", log.replace("\n", " | ")[:400])
    lines = sass_lines(ck)
    if dump:
        with open(dump, "w") as f:
            f.write("\n".join(lines))
    print(f"SASS: {len(lines)} instructions")
    for name, pat, _ in CLASSES:
        idx = [i for i, ln in enumerate(lines) if re.search(pat, ln)]
        if idx:
            print(f"  {name:18s} {len(idx):5d}   first {idx[0]:5d}  last {idx[-1]:5d}")
    for m in sorted(set(re.findall(r"USETMAXREG\.[A-Z.]+\s+\w+,\s*(0x[0-9a-f]+|\d+)",
                                   "\n".join(lines)))):
        print("  setmaxnreg count:", int(m, 0))
    if timeline:
        out = []
        for ln in lines:
            for _, pat, letter in CLASSES:
                if re.search(pat, ln):
                    out.append(letter)
                    break
            else:
                out.append(".")
        s = "".join(out)
        print("timeline (one char per instruction; legend:",
              " ".join(f"{c}={n}" for n, _, c in CLASSES), ")")
        for i in range(0, len(s), 100):
            print(f"{i:5d} {s[i:i + 100]}")


def turns(lines) -> list:
    """[(start, end)] line indices of each BAR.SYNC .. the next BAR.ARV (a ping-pong turn)."""
    out, start = [], None
    for i, ln in enumerate(lines):
        if re.search(r"\bBAR\.SYNC", ln) and start is None:
            start = i
        elif re.search(r"\bBAR\.ARV", ln) and start is not None:
            out.append((start, i))
            start = None
    return out


def report_turns(lines, loop_list=()) -> None:
    """Each turn's length and contents, and the innermost loop around it (a K/V step)."""
    segs = turns(lines)
    print(f"turns (BAR.SYNC .. BAR.ARV): {len(segs)}")
    pats = {"HGMMA": r"HGMMA", "FMUL": r"\bFMUL\b", "PRMT": r"\bPRMT\b", "F2FP": r"\bF2FP"}
    for k, (a, b) in enumerate(segs):
        body = lines[a:b + 1]
        counts = "  ".join(f"{name} {sum(1 for ln in body if re.search(pat, ln)):3d}"
                           for name, pat in pats.items())
        around = [(lo, hi) for lo, hi in loop_list if lo <= a and b <= hi]
        step = ""
        if around:
            lo, hi = min(around, key=lambda x: x[1] - x[0])
            step = f"  loop {lo}-{hi}: {hi - lo + 1} instructions"
        print(f"  {a:5d}-{b:5d}  {b - a + 1:4d} instructions  {counts}{step}")


def label_positions(lines_with_labels) -> dict:
    """{label: index of the instruction that follows it}."""
    where, n = {}, 0
    for ln in lines_with_labels:
        m = re.match(r"\s*(\.L_x_\d+):", ln)
        if m:
            where[m.group(1)] = n
        else:
            n += 1
    return where


def kv_step(lines, loop_list, hgmma: int = None):
    """(first, last) instruction of the K/V step: the shortest innermost loop around a turn
    with ``hgmma`` HGMMAs (S: D / 16 k-steps, P V: tile_n / 16; None: the most of any turn
    inside a loop); None if there is none."""
    steps = []
    for a, b in turns(lines):
        around = [(lo, hi) for lo, hi in loop_list if lo <= a and b <= hi]
        if around:
            n = sum("HGMMA" in ln for ln in lines[a:b + 1])
            steps.append((n, min(around, key=lambda x: x[1] - x[0])))
    if hgmma is None and steps:
        hgmma = max(n for n, _ in steps)
    steps = [st for n, st in steps if n == hgmma and n > 0]
    return min(steps, key=lambda x: x[1] - x[0]) if steps else None


def opcode(line: str) -> str:
    """The opcode of a SASS line without its predicate and modifiers (``FMUL``, ``BRA``)."""
    text = re.sub(r"^.*?\*/\s*(@!?U?P\w+\s+)?", "", line)
    return text.split()[0].split(".")[0] if text.split() else ""


def step_branches(lines, lines_with_labels, step) -> list:
    """[(branch index, the instructions it jumps over)] for each forward branch inside the K/V
    step ``step`` = (first, last) whose target lies inside it."""
    where = label_positions(lines_with_labels)
    lo, hi = step
    out = []
    for i in range(lo, hi + 1):
        m = re.search(r"\bBRA\b.*`\((\.L_x_\d+)\)", lines[i])
        if m and i < where.get(m.group(1), -1) <= hi:
            out.append((i, lines[i + 1:where[m.group(1)]]))
    return out


def report_paths(lines, lines_with_labels) -> None:
    """The K/V step's forward branches (what each jumps over) and its straight path."""
    step = kv_step(lines, loops(lines_with_labels))
    if step is None:
        print("no K/V step (a 16-HGMMA turn inside a loop)")
        return
    lo, hi = step
    branches = step_branches(lines, lines_with_labels, step)
    print(f"K/V step {lo}-{hi}: {hi - lo + 1} instructions")
    skipped = 0
    for i, body in branches:
        counts = {}
        for ln in body:
            counts[opcode(ln)] = counts.get(opcode(ln), 0) + 1
        top = ", ".join(f"{k} {v}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1])[:4])
        print(f"  branch at {i} jumps over {len(body)}: {top}")
        skipped += len(body)
    print(f"  straight path (no branch body): {hi - lo + 1 - skipped} instructions")


def compile_attention(args):
    import numpy as np
    import warpstage as ws
    from warpstage.ops.attention_wgmma import FlashAttentionWgmma, flash_attention_wgmma_kernel
    import ml_dtypes
    fields = {}
    if args.plan:
        from warpstage.ops.attention_plan import WGMMA_DEFAULTS
        fields.update(WGMMA_DEFAULTS[(args.head_dim, args.causal)])
    for item in filter(None, (args.policy or "").split(",")):
        k, v = item.split("=")
        v = v.strip()
        try:                        # True / None / 8 / 8.0 as Python literals, else a string
            fields[k.strip()] = ast.literal_eval(v)
        except (ValueError, SyntaxError):
            fields[k.strip()] = v
    fa = FlashAttentionWgmma(head_dim=args.head_dim, causal=args.causal, **fields)
    x = np.zeros((1, 1, 256, args.head_dim), ml_dtypes.bfloat16)
    q_box, kv_box = fa.descriptor_boxes()
    TD = ws.tma.TensorDescriptor
    print(repr(fa))
    o_desc = TD(x, fa.o_box, swizzle=fa.out.swizzle) if fa.tma_store else None
    sw = fa.swizzle
    return ws.compile(flash_attention_wgmma_kernel, fa, TD(x, q_box, swizzle=sw),
                      TD(x, kv_box, swizzle=sw), TD(x, kv_box, swizzle=sw),
                      ws.Tensor[ws.BFloat16, 4], ws.Int32, None, o_desc,
                      ws.Tensor[ws.Int32, 1] if fa.dynamic_tiles else None,
                      block=(fa.threads, 1, 1))


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("kernel", choices=["attention"])
    p.add_argument("--head-dim", type=int, default=128)
    p.add_argument("--causal", action="store_true")
    p.add_argument("--policy", default="")
    p.add_argument("--timeline", action="store_true")
    p.add_argument("--turns", action="store_true")
    p.add_argument("--plan", action="store_true")
    p.add_argument("--paths", action="store_true")
    p.add_argument("--dump")
    args = p.parse_args(argv)
    import warnings
    warnings.simplefilter("ignore")
    ck = compile_attention(args)
    report(ck, args.timeline, args.dump)
    if args.turns:
        report_turns(sass_lines(ck), loops(sass_lines(ck, labels=True)))
    if args.paths:
        report_paths(sass_lines(ck), sass_lines(ck, labels=True))


if __name__ == "__main__":
    main()
