"""Read Nsight Compute's per-instruction warp-state samples on the CPU: where a kernel's warps
wait, by SASS instruction and by instruction class, inside the steady loop and outside it.

    python3 scripts/ncu_stalls.py OUT/ws_d128_sass.csv [OUT/fa4_d128_sass.csv] [--top 25]
        [--details OUT/ws_d128_details.csv [OUT/fa4_d128_details.csv]]

The inputs are what ``scripts/gpu_s17a.sh`` / ``gpu_s17b.sh`` export from a ``--set full``
report: ``ncu --import R.ncu-rep --page source --csv --print-source sass`` (one row per SASS
instruction: its address, its text, "Warp Stall Sampling (All Samples)", "(Not-issued
Samples)", and one ``stall_<reason>`` column per stall reason where the report has them) and
``--page details --csv`` (one row per metric). Columns are found by name, so an older or newer
ncu that adds or reorders columns still reads.

The steady loop is the innermost loop (a backward branch and its target, by address) holding
HGMMA instructions that has the most samples: the K/V step of an attention kernel, the k-loop
of a GEMM. For each file it prints the samples in all and the loop's share, the samples per
instruction class (``sass_report.CLASSES``: HGMMA, WARPGROUP.DEPBAR, SYNCS (mbarrier waits),
BAR.SYNC (named barriers), MUFU.EX2, ...) inside the loop, and the ``--top`` instructions of
the loop by samples with their offset in it (instructions from its first) and their largest
stall reasons. Two files print side by side per class (ours beside FlashAttention-4's).
``--details`` prints the details pages' throughput, issue, occupancy and memory rows.
"""
from __future__ import annotations

import argparse
import csv
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from sass_report import CLASSES  # noqa: E402

ALL = "Warp Stall Sampling (All Samples)"
NOT_ISSUED = "Warp Stall Sampling (Not-issued Samples)"
DETAIL_KEYS = ("Duration", "Elapsed Cycles", "SM Busy", "Issue Slots Busy", "Issued Ipc",
               "Executed Ipc", "Warp Cycles Per Issued Instruction", "No Eligible",
               "Achieved Occupancy", "Registers Per Thread", "Tensor", "L2 Hit Rate",
               "DRAM Throughput", "Memory Throughput", "Compute (SM) Throughput")


def number(text) -> float:
    """A CSV cell as a float: '' and 'n/a' are 0, thousands separators are dropped."""
    text = (text or "").replace(",", "").strip()
    try:
        return float(text)
    except ValueError:
        return 0.0


def read_source(path: str) -> list:
    """The source page's rows as dicts: address (int), text, samples, not_issued, reasons
    ({reason: samples}), in address order. Raises ValueError when no header row names both
    an address and a source column."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    for i, row in enumerate(rows):
        names = [c.strip().lstrip("#").strip() for c in row]
        if "Address" in names and "Source" in names:
            header, body = names, rows[i + 1:]
            break
    else:
        raise ValueError(f"{path}: no header row with 'Address' and 'Source' columns (is it "
                         "`ncu --page source --csv --print-source sass` output?)")
    col = {name: k for k, name in enumerate(header)}
    reasons = [n for n in header if n.startswith("stall_")]
    out = []
    for row in body:
        if len(row) <= max(col["Address"], col["Source"]):
            continue
        addr = row[col["Address"]].strip()
        try:
            address = int(addr, 16)             # ncu prints addresses in hex
        except ValueError:
            continue
        get = lambda name: number(row[col[name]]) if name in col and col[name] < len(row) else 0.0
        out.append(dict(address=address, text=row[col["Source"]].strip(), samples=get(ALL),
                        not_issued=get(NOT_ISSUED),
                        reasons={r[len("stall_"):]: get(r) for r in reasons if get(r)}))
    out.sort(key=lambda r: r["address"])
    return out


def opcode(text: str) -> str:
    """The instruction's opcode with its modifiers, less a predicate (``HGMMA.64x128x16.F32``)."""
    parts = re.sub(r"^@!?U?P\w+\s+", "", text.strip()).split()
    return parts[0] if parts else ""


def instruction_class(text: str) -> str:
    """The ``sass_report.CLASSES`` name the instruction falls in, else its bare opcode."""
    for name, pattern, _ in CLASSES:
        if name != "PRMT 0x5432 (swap)" and re.search(pattern, text):
            return name
    return opcode(text).split(".")[0] or "?"


def branch_target(text: str):
    """The address a ``BRA`` jumps to (a hex operand), or None."""
    if not re.search(r"\bBRA\b", text):
        return None
    m = re.search(r"\bBRA\b[^;]*?(0x[0-9a-fA-F]+)", text)
    return int(m.group(1), 16) if m else None


def loops(rows: list) -> list:
    """[(first index, last index)] of each backward branch's loop (target <= branch). A target
    is an address of the page, or an offset from the function's first instruction (the form
    cuobjdump and nvdisasm print)."""
    index = {r["address"]: i for i, r in enumerate(rows)}
    base = rows[0]["address"] if rows else 0
    out = []
    for i, r in enumerate(rows):
        t = branch_target(r["text"])
        if t is not None and t not in index:
            t += base
        if t is not None and t <= r["address"] and t in index:
            out.append((index[t], i))
    return out


def steady_loop(rows: list):
    """(first, last) of the innermost HGMMA-holding loop with the most samples, or None."""
    found = [(lo, hi) for lo, hi in loops(rows)
             if any("HGMMA" in rows[k]["text"] for k in range(lo, hi + 1))]
    inner = [(lo, hi) for lo, hi in found
             if not any((a, b) != (lo, hi) and lo <= a and b <= hi for a, b in found)]
    if not inner:
        return None
    return max(inner, key=lambda x: sum(rows[k]["samples"] for k in range(x[0], x[1] + 1)))


def by_class(rows: list, lo: int, hi: int) -> dict:
    """{class: samples} over rows[lo..hi]."""
    out: dict = {}
    for r in rows[lo:hi + 1]:
        c = instruction_class(r["text"])
        out[c] = out.get(c, 0.0) + r["samples"]
    return out


def summary(path: str, rows: list, top: int) -> dict:
    total = sum(r["samples"] for r in rows) or 1.0
    loop = steady_loop(rows)
    print(f"== {path}: {len(rows)} instructions, {total:.0f} samples")
    if loop is None:
        print("  no loop with HGMMA found (branch targets not read): classes over the kernel")
        loop = (0, len(rows) - 1)
    lo, hi = loop
    inside = sum(r["samples"] for r in rows[lo:hi + 1])
    print(f"  steady loop: instructions {lo}-{hi} ({hi - lo + 1}), addresses "
          f"{rows[lo]['address']:#x}-{rows[hi]['address']:#x}: {inside:.0f} samples "
          f"({100 * inside / total:.1f}% of the kernel's)")
    ranked = sorted(range(lo, hi + 1), key=lambda k: -rows[k]["samples"])[:top]
    for k in ranked:
        r = rows[k]
        why = sorted(r["reasons"].items(), key=lambda kv: -kv[1])[:3]
        why_text = ", ".join(f"{n} {100 * v / max(r['samples'], 1):.0f}%" for n, v in why)
        print(f"  +{k - lo:4d} {100 * r['samples'] / max(inside, 1):5.1f}%  "
              f"{r['text'][:60]:60}  {why_text}")
    return {c: v / max(inside, 1) for c, v in by_class(rows, lo, hi).items()}


def print_details(paths: list) -> None:
    """The details pages' rows whose metric name holds one of DETAIL_KEYS, side by side."""
    tables = []
    for path in paths:
        with open(path, newline="") as f:
            rows = list(csv.reader(f))
        head = next((r for r in rows if "Metric Name" in r), None)
        if head is None:
            print(f"{path}: no 'Metric Name' column (is it `--page details --csv` output?)")
            return
        ni, ui, vi = (head.index(c) for c in ("Metric Name", "Metric Unit", "Metric Value"))
        si = head.index("Section Name") if "Section Name" in head else None
        table = {}
        for r in rows[rows.index(head) + 1:]:
            if len(r) > max(ni, ui, vi) and any(k in r[ni] for k in DETAIL_KEYS):
                name = (f"{r[si]}: " if si is not None else "") + r[ni]
                table.setdefault(name, f"{r[vi]} {r[ui]}".strip())
        tables.append(table)
    names = list(dict.fromkeys(n for t in tables for n in t))
    print("== details: " + " | ".join(paths))
    for n in names:
        print(f"  {n[:70]:70} " + " | ".join(f"{t.get(n, '-'):>16}" for t in tables))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", nargs="+", help="source-page CSVs (one or two)")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--details", nargs="*", default=[], help="details-page CSVs")
    args = ap.parse_args(argv)
    shares = []
    for path in args.csv:
        try:
            shares.append(summary(path, read_source(path), args.top))
        except (OSError, ValueError) as e:
            print(f"{path}: {e}", file=sys.stderr)
            return 1
    if len(shares) > 1:
        print("== per class, share of the steady loop's samples: " + " | ".join(args.csv))
        for c in sorted(set().union(*shares), key=lambda c: -max(s.get(c, 0) for s in shares)):
            print(f"  {c:22} " + " | ".join(f"{100 * s.get(c, 0):6.1f}%" for s in shares))
    if args.details:
        print_details(args.details)
    return 0


if __name__ == "__main__":
    sys.exit(main())
