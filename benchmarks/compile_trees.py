"""Cold compiles in fresh processes, two or more source trees taking turns: the A/B of a
compile-time change on one machine in one window (``compile_time.py fresh``'s first-call
script, each tree's warpstage on ``PYTHONPATH``).

    python3 benchmarks/compile_trees.py --trees /path/to/base,. [--rows wgmma:64,wgmma:128]
                                        [--rounds 5]

Rows are ``compile_time.py``'s: ``wgmma:D`` the default wgmma FlashAttention (its policy for
S = 1024), ``attention:D`` the mma.sync kernel, ``trivial``; ``wgmma+field=value+...:D`` that
policy with fields over it (``causal=True`` too; on a GPU launched by ``launch_wgmma``), so one
tree's two forms of a kernel can take turns (``--trees .`` with two such rows). Each row is
cold: an empty disk cache but for the machine's facts (source digest, LLVM and ptxas
versions), which each tree stores once first, as ``compile_time.py``'s wgmma rows have them. Each round runs every row of
every tree once, the trees alternating (A B per row, and B A in the next round). Printed per
tree and row: the median and range over the rounds of the first call (wall ms; a CPU host has
no launch: the compile) and of each stage, and the process' CPU ms. ``--cpu``: the stages in
CPU ms instead (the pipeline's stage clock made ``time.process_time``: every thread of the
process, so ``ptx`` includes the IR text printed beside LLVM; ptxas, a child process, as the
children's CPU), for a shared host whose load makes wall times meaningless. A tree written
``PATH@NAME=VALUE`` runs with that environment variable set (``.,.@WARPSTAGE_LLVM_PIPELINE=light``:
one tree, two settings).

``--hit``: the rows are disk hits instead: each tree fills a cache of its own per row once (a
cold first call), then every round makes that first call again in a fresh process, which finds
it on disk ('first call' and 'its CPU': the call alone, this process' threads, not the import).
``--bare``: cold rows start from an empty cache folder (the machine's facts computed in the
row, as in a machine's first process) instead of one holding the facts.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compile_time  # noqa: E402


def _run(tree: str, cache: str, folder: str, what: str, dim: int):
    tree, *settings = tree.split("@")           # PATH@NAME=VALUE: a tree with a variable set
    env = dict(os.environ, PYTHONPATH=os.path.abspath(tree), WARPSTAGE_CACHE_DIR=cache)
    env.update(kv.split("=", 1) for kv in settings)
    script = os.path.join(folder, "first_call.py")
    r, err = compile_time._result(compile_time._fresh(script, env, what, dim))
    if err:
        raise SystemExit(f"{tree} {what}:{dim} failed: {err}")
    return r


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trees", required=True, help="comma-separated source trees")
    ap.add_argument("--rows", default="wgmma:64,wgmma:128")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--cpu", action="store_true", help="stages in CPU ms of the process")
    ap.add_argument("--hit", action="store_true", help="disk hits instead of cold compiles")
    ap.add_argument("--bare", action="store_true", help="cold rows without the stored facts")
    args = ap.parse_args()
    trees = args.trees.split(",")
    rows = [(r.split(":")[0], int(r.split(":")[1]) if ":" in r else 0)
            for r in args.rows.split(",")]
    results = {(t, row): [] for t in trees for row in rows}
    with tempfile.TemporaryDirectory() as folder:
        with open(os.path.join(folder, "first_call.py"), "w") as f:
            f.write(_script(args.cpu))
        facts = {}
        for i, t in enumerate(trees):
            facts[t] = os.path.join(folder, f"facts{i}")
            _run(t, facts[t], folder, "trivial", 0)
            for row in rows if args.hit else ():       # each tree's own filled cache per row
                _run(t, _hit_cache(folder, i, row), folder, *row)
        for n in range(args.rounds):
            for row in rows:
                for t in (trees if n % 2 == 0 else trees[::-1]):
                    if args.hit:
                        cache = _hit_cache(folder, trees.index(t), row)
                    else:
                        cache = os.path.join(folder, "cache")
                        shutil.rmtree(cache, ignore_errors=True)
                        if args.bare:
                            os.makedirs(cache)
                        else:
                            compile_time._copy_facts(facts[t], cache)
                    results[t, row].append(_run(t, cache, folder, *row))
            _report(trees, rows, results, n + 1)


def _hit_cache(folder: str, tree: int, row: tuple) -> str:
    return os.path.join(folder, f"hit{tree}-{row[0]}{row[1]}")


def _report(trees, rows, results, rounds) -> None:
    """Print the table over the rounds done so far (after every round, so that a run cut
    short by a time limit still leaves its figures)."""
    print(f"-- after round {rounds}", flush=True)
    for row in rows:
        print(f"{row[0]} D={row[1]}: first call | its CPU | CPU of the process | import | "
              f"stages (ms, median [min-max] of {rounds})")
        for t in trees:
            rs = results[t, row]
            stages = sorted({k for r in rs for k in r["stages"]},
                            key=lambda k: list(rs[0]["stages"]).index(k)
                            if k in rs[0]["stages"] else 99)
            cols = [_spread([r[k] for r in rs]) for k in ("first", "first_cpu", "cpu", "import")]
            cols += [f"{k} " + _spread([r["stages"].get(k, 0.0) for r in rs]) for k in stages]
            print(f"  {t:28} " + " | ".join(cols), flush=True)


_CPU_CLOCK = """
import importlib, resource, types
importlib.import_module("warpstage.jit.pipeline").time = types.SimpleNamespace(
    perf_counter=time.process_time)
"""


def _script(cpu: bool) -> str:
    """compile_time.py's first-call script, printing the process' CPU too; with ``cpu`` its
    stage clock is the process' CPU time and ptxas is the children's CPU."""
    text = compile_time.FRESH.replace('print(json.dumps({',
                                      'print(json.dumps({"cpu": time.process_time(), ')
    if not cpu:
        return text
    text = text.replace("import warpstage as ws\n", "import warpstage as ws\n" + _CPU_CLOCK, 1)
    return text.replace('print(json.dumps({', 'children = resource.getrusage('
                        'resource.RUSAGE_CHILDREN)\nstages["ptxas"] = children.ru_utime + '
                        'children.ru_stime\nprint(json.dumps({', 1)


def _spread(values) -> str:
    ms = [1e3 * v for v in values]
    d = 1 if max(ms) < 100 else 0          # disk hits: tenths of a ms
    return f"{statistics.median(ms):.{d}f} [{min(ms):.{d}f}-{max(ms):.{d}f}]"


if __name__ == "__main__":
    main()
