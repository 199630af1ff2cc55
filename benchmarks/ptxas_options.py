"""ptxas options on dumped PTX: the child's CPU ms per option (interleaved rounds) and the SASS
each gives against the first option's: identical (SHA-256 of ``nvdisasm -c -ndf``) or not, its
instruction count, registers and spills (CPU host, no GPU).

    PYTHONPATH=. python3 scripts/kernel_ptx.py dump /tmp/k all
    python3 benchmarks/ptxas_options.py /tmp/k --kernels fa-default-d128-short [--rounds 3] \
        [--options O3,O2,O1,Ofc-min,Ofc-mid,Ofc-max,noexp] [--ptxas PATH] [--nvdisasm PATH]

``--ptx-dirs A,B``: instead of options, the same ptxas (-O3) on the PTX of each folder (a
baseline and an LLVM variant's, ``benchmarks/llvm_options.py --out``): its CPU ms and the SASS
against the first folder's.
"""
from __future__ import annotations

import argparse
import collections
import hashlib
import os
import re
import resource
import shutil
import statistics
import subprocess
import tempfile

OPTIONS = {
    "O3": ["-O3"], "O2": ["-O2"], "O1": ["-O1"],
    "Ofc-min": ["--Ofast-compile=min"], "Ofc-mid": ["--Ofast-compile=mid"],
    "Ofc-max": ["--Ofast-compile=max"],
    "noexp": ["-O3", "--allow-expensive-optimizations=false"],
}


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def assemble(ptxas: str, ptx: str, flags: list, cubin: str) -> tuple:
    """(children's CPU seconds, ptxas' -v log) of one ptxas run."""
    t = _children_cpu()
    proc = subprocess.run([ptxas, "-arch=sm_90a", *flags, "-v", "-o", cubin, ptx],
                          capture_output=True, text=True)
    dt = _children_cpu() - t
    if proc.returncode:
        raise SystemExit(f"ptxas {' '.join(flags)} {ptx}: {proc.stderr}")
    return dt, proc.stderr + proc.stdout


def sass_facts(nvdisasm: str, cubin: str, log: str) -> dict:
    text = subprocess.run([nvdisasm, "-c", "-ndf", cubin], capture_output=True, text=True).stdout
    text = re.sub(r"(_kernel)_\d+", r"\1", text)
    ops = re.findall(r"^\s+/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", text, re.M)
    spill = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", log)
    return dict(sha=hashlib.sha256(text.encode()).hexdigest()[:12], instructions=len(ops),
                registers=int(re.search(r"Used (\d+) registers", log).group(1)),
                spills=f"{spill.group(1)}/{spill.group(2)}" if spill else "-",
                opcodes=collections.Counter(o.split(".")[0] for o in ops))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder")
    ap.add_argument("--kernels", default="fa-default-d128-short,fa-default-d64-short")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--options", default=",".join(OPTIONS))
    ap.add_argument("--ptx-dirs", default="")
    ap.add_argument("--ptxas", default=shutil.which("ptxas") or "ptxas")
    ap.add_argument("--nvdisasm", default=shutil.which("nvdisasm") or "nvdisasm")
    args = ap.parse_args()
    names = args.kernels.split(",")
    if args.ptx_dirs:
        runs = [(d, os.path.join(d, "{}.ptx"), ["-O3"]) for d in args.ptx_dirs.split(",")]
    else:
        runs = [(o, os.path.join(args.folder, "{}.ptx"), OPTIONS[o])
                for o in args.options.split(",")]
    work = tempfile.mkdtemp()
    times, facts = collections.defaultdict(list), {}
    for r in range(args.rounds):
        for label, ptx, flags in (runs if r % 2 == 0 else runs[::-1]):
            for n in names:
                cubin = os.path.join(work, f"{n}.{len(facts)}.cubin")
                dt, log = assemble(args.ptxas, ptx.format(n), flags, cubin)
                times[(n, label)].append(dt)
                if (n, label) not in facts:
                    facts[(n, label)] = sass_facts(args.nvdisasm, cubin, log)
    print(f"ptxas {args.ptxas}; children's CPU ms, median of {args.rounds} interleaved rounds")
    for n in names:
        base = facts[(n, runs[0][0])]
        for label, _, _ in runs:
            f, ts = facts[(n, label)], times[(n, label)]
            diff = ""
            if f["sha"] != base["sha"]:
                d = {k: f["opcodes"][k] - base["opcodes"][k]
                     for k in set(f["opcodes"]) | set(base["opcodes"])
                     if f["opcodes"][k] != base["opcodes"][k]}
                diff = " " + " ".join(f"{k}{v:+d}" for k, v in
                                      sorted(d.items(), key=lambda x: -abs(x[1]))[:6])
            print(f"{n:30s} {label[:24]:24s} {1e3 * statistics.median(ts):6.0f} ms "
                  f"[{1e3 * min(ts):4.0f}-{1e3 * max(ts):4.0f}]  SASS "
                  f"{'same' if f['sha'] == base['sha'] else 'DIFFERS'} {f['instructions']} "
                  f"instructions, {f['registers']} registers, spills {f['spills']}{diff}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
