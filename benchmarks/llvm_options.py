"""LLVM pipelines and codegen levels on dumped kernels: per-stage CPU ms and whether the PTX is
byte-identical to the dump's (CPU host, no GPU).

    PYTHONPATH=. python3 scripts/kernel_ptx.py dump /tmp/k all      # .ll and .ptx per kernel
    python3 benchmarks/llvm_options.py /tmp/k [--kernels a,b] [--rounds 5] [--out DIR] \
        [--variant "O=3"] [--variant "O=3;cg=2"] [--variant "pipe=light"] ...

A variant is ``key=value`` pairs joined by ``;``: ``O`` the pipeline's speed level (default 3),
``cg`` the NVPTX codegen level (default 3), ``pipe`` 'default' (LLVM's per-module default
pipeline), 'light' (``llvm_c.LIGHT_PASSES``, ``CompileOptions.llvm_pipeline='light'``) or module
passes of ``llvmlite.binding`` (``always_inliner,sroa,instruction_combine``; ``+fsp`` runs the
function simplification pipeline on every function, ``+`` separates pass managers),
``loop_unrolling`` / ``loop_vectorization`` / ``slp_vectorization`` / ``loop_interleaving``
0 or 1 (pipeline tuning options), ``cl`` LLVM command-line options joined by ``|`` (process-wide:
each variant runs in a process of its own). Each round runs every variant once, in turn (the
order reversed every other round); printed per kernel and variant: the median over the rounds of
parse, verify, the pipeline and codegen (``time.process_time`` around each llvmlite.binding
call, as ``backend/llvm_c`` makes them), and 'same' where the PTX is the dump's byte for byte
(the entry's ``_N`` suffix aside). ``--out``: each variant's PTX in a folder of its own, for
``sass_compare``-style comparisons (``benchmarks/ptxas_options.py --ptx-dirs``).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

STAGES = ("parse", "verify", "opt", "codegen")
TUNING = ("loop_unrolling", "loop_vectorization", "slp_vectorization", "loop_interleaving")


def normalized(ptx: str) -> str:
    return re.sub(r"(_kernel)_\d+", r"\1", ptx)


def _optimize(llvm, tm, mod, v: dict) -> None:
    level = int(v.get("O", 3))
    pto = llvm.create_pipeline_tuning_options(speed_level=level)
    for k in TUNING:
        if k in v:
            setattr(pto, k, v[k] == "1")
    pb = llvm.create_pass_builder(tm, pto)
    pipe = v.get("pipe", "default")
    if pipe == "default":
        if level > 0:
            pb.getModulePassManager().run(mod, pb)
        return
    for stage in pipe.split("+"):
        if stage == "fsp":
            fpm = pb.getFunctionPassManager()
            for f in mod.functions:
                if not f.is_declaration:
                    fpm.run(f, pb)
            continue
        mpm = llvm.create_new_module_pass_manager()
        for p in stage.split(","):
            getattr(mpm, f"add_{p}_pass")()
        mpm.run(mod, pb)


def worker(variant: str, folder: str, names: list, out: str | None) -> None:
    """One variant over ``names``: a JSON line per kernel."""
    import llvmlite.binding as llvm
    v = dict(kv.split("=", 1) for kv in variant.split(";") if "=" in kv)
    if v.get("pipe") == "light":            # warpstage's list, resolved before any clock runs
        from warpstage.backend import llvm_c
        v["pipe"] = ",".join(llvm_c.ThroughLlvmlite._LIGHT[n][4:-5] for n in llvm_c.LIGHT_PASSES)
    for opt in filter(None, v.get("cl", "").split("|")):
        llvm.set_option("", opt)
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    triple = "nvptx64-nvidia-cuda"
    tm = llvm.Target.from_triple(triple).create_target_machine(
        cpu="sm_90a", features="+ptx80", opt=int(v.get("cg", 3)))
    for name in names:
        with open(os.path.join(folder, name + ".ll")) as f:
            ir = f.read()
        t0 = time.process_time()
        mod = llvm.parse_assembly(ir)
        t1 = time.process_time()
        mod.verify()
        t2 = time.process_time()
        mod.triple, mod.data_layout = triple, str(tm.target_data)
        _optimize(llvm, tm, mod, v)
        t3 = time.process_time()
        ptx = tm.emit_assembly(mod)
        t4 = time.process_time()
        with open(os.path.join(folder, name + ".ptx")) as f:
            same = normalized(f.read()) == normalized(ptx)
        if out:
            os.makedirs(out, exist_ok=True)
            with open(os.path.join(out, name + ".ptx"), "w") as f:
                f.write(ptx)
        print(json.dumps(dict(name=name, same=same, lines=ptx.count("\n"),
                              parse=t1 - t0, verify=t2 - t1, opt=t3 - t2, codegen=t4 - t3)),
              flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder")
    ap.add_argument("--kernels", default="")
    ap.add_argument("--variant", action="append", default=[])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default="")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    names = (args.kernels.split(",") if args.kernels else
             sorted(n[:-3] for n in os.listdir(args.folder) if n.endswith(".ll")))
    if args.worker is not None:
        return worker(args.worker, args.folder, names, args.out or None)
    variants = args.variant or ["O=3", "pipe=light"]
    rows = {}
    for r in range(args.rounds):
        for variant in (variants if r % 2 == 0 else variants[::-1]):
            out = os.path.join(args.out, re.sub(r"[^\w=.,+-]", "_", variant)) if args.out else ""
            cmd = [sys.executable, __file__, args.folder, "--kernels", ",".join(names),
                   "--worker", variant] + (["--out", out] if out and r == 0 else [])
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode:
                raise SystemExit(f"{variant}: {proc.stderr[-2000:]}")
            for line in proc.stdout.splitlines():
                row = json.loads(line)
                rows.setdefault((row["name"], variant), []).append(row)
    for name in names:
        print(f"{name}  (median of {args.rounds} rounds, CPU ms)")
        for variant in variants:
            rs = rows[(name, variant)]
            med = {k: 1e3 * statistics.median(r[k] for r in rs) for k in STAGES}
            print(f"  {variant[:60]:60s} " + " ".join(f"{k} {med[k]:6.1f}" for k in STAGES)
                  + f"  total {sum(med.values()):6.1f}  PTX {rs[0]['lines']} lines"
                  + ("  same" if rs[0]["same"] else "  DIFFERS"))
    differ = {v: sum(not rows[(n, v)][0]["same"] for n in names) for v in variants}
    print("kernels whose PTX differs from the dump's: "
          + ", ".join(f"{v}: {c}/{len(names)}" for v, c in differ.items()))


if __name__ == "__main__":
    main()
