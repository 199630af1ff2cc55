"""The CPU suite, like for like: the tests two trees share, timed in each tree.

    python benchmarks/suite_same_tests.py --old /work/wt-old --new /work/wt-suite
    python benchmarks/suite_same_tests.py --old ... --new ... --rounds 2 --full-old
    python benchmarks/suite_same_tests.py --old ... --new ... --match-only   # the matching alone

Issue 10's suite-time line ("the CPU suite stays at least as fast as now") compares trees whose
test sets differ: main has twice the tests of the tree it was filed over. This script takes the
tests present in BOTH trees and runs only those in each, so the comparison is of the same work.

Each tree is a checkout with its own venv at ``TREE/.venv`` (``pip install -e '.[test]'``, then
``python -m compileall -q warpstage tests examples scripts``: with ``PYTHONDONTWRITEBYTECODE``
set, every child process would otherwise compile the sources again).

Matching. ``pytest --collect-only -q`` in each tree gives node IDs ``path::name[params]``
(tests in classes: ``path::Class::name[params]``). A test of the old tree is matched to one of
the new tree by, in order (each old test matched at most once, each new test used at most once):

1. ``exact``: the same node ID;
2. ``basename``: the same file basename and the same ``name[params]`` (a module moved to
   another folder, e.g. tests/test_save_load.py -> tests/jit/test_save_load.py);
3. ``target``: as 2, with the new tree's ``sim`` target parameter taken out of the params (the
   ``target`` fixture of tests/conftest.py turned a module's kernel tests into ``[sim]`` and
   ``[cuda]`` cases; only the ``sim`` case is taken; ``cuda`` ones skip without a GPU);
4. ``name`` (only with ``--loose``): ``name[params]`` unique in each tree, files renamed.

Timing. The matched node IDs go to an args file (``pytest @FILE``, pytest >= 8.2) and each tree
runs ``python -m pytest -q -p no:randomly -p no:cacheprovider @FILE`` in one process (no xdist),
rounds alternated old / new, each run with a fresh empty ``WARPSTAGE_CACHE_DIR``. Wall is the
run's elapsed time; CPU is user + sys of the whole process tree (``os.wait4``'s rusage of the
pytest process, which includes every descendant it waited for: the same figure ``/usr/bin/time``
prints). ``--full-old`` / ``--full-new`` also time a tree's whole suite (``pytest -q``, one
process) in the same alternation, to show what fraction of it the matched subset is.

Output: a table (each run, then medians) on stdout; ``--json PATH`` writes every figure and
``--ids-dir DIR`` keeps the matched ID files and the match report.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict


def collect(tree: str, python: str) -> list[str]:
    """Node IDs of ``tree``'s default test run (``pytest --collect-only -q``)."""
    env = dict(os.environ, WARPSTAGE_CACHE_DIR=tempfile.mkdtemp(prefix="ws-collect-"))
    out = subprocess.run([python, "-m", "pytest", "--collect-only", "-q", "-p", "no:randomly",
                          "-p", "no:cacheprovider"], cwd=tree, env=env, capture_output=True,
                         text=True)
    ids = [line.strip() for line in out.stdout.splitlines() if "::" in line]
    if not ids:
        sys.exit(f"no tests collected in {tree}:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
    return ids


def split(nodeid: str) -> tuple[str, str]:
    """(file path, the rest: [Class::]name[params])."""
    path, _, rest = nodeid.partition("::")
    return path, rest


_TARGET = re.compile(r"^(?P<head>[^\[]*)\[(?P<params>.*)\]$")


def drop_sim(rest: str) -> str | None:
    """``name[sim-a-b]`` / ``name[a-sim]`` / ``name[sim]`` -> ``name[a-b]`` / ``name[a]`` /
    ``name``; None where there is no ``sim`` parameter."""
    m = _TARGET.match(rest)
    if not m:
        return None
    params = m["params"]
    if params == "sim":
        return m["head"]
    if params.startswith("sim-"):
        return f"{m['head']}[{params[4:]}]"
    if params.endswith("-sim"):
        return f"{m['head']}[{params[:-4]}]"
    if "-sim-" in params:
        return f"{m['head']}[{params.replace('-sim-', '-', 1)}]"
    return None


def match(old: list[str], new: list[str], loose: bool) -> tuple[list[tuple[str, str, str]], list[str]]:
    """[(old id, new id, how)], and the old IDs left unmatched."""
    used: set[str] = set()
    pairs: list[tuple[str, str, str]] = []
    left = list(old)

    def tier(how: str, key_old, index: dict[object, list[str]]):
        nonlocal left
        rest_left = []
        for o in left:
            k = key_old(o)
            cands = [n for n in index.get(k, []) if n not in used] if k is not None else []
            if len(cands) == 1 or (cands and how == "exact"):
                used.add(cands[0])
                pairs.append((o, cands[0], how))
            else:
                rest_left.append(o)
        left = rest_left

    new_set = {n: [n] for n in new}
    tier("exact", lambda o: o, new_set)

    by_base: dict[object, list[str]] = defaultdict(list)
    by_base_sim: dict[object, list[str]] = defaultdict(list)
    for n in new:
        path, rest = split(n)
        by_base[(os.path.basename(path), rest)].append(n)
        stripped = drop_sim(rest)
        if stripped is not None:
            by_base_sim[(os.path.basename(path), stripped)].append(n)

    def base_key(o):
        path, rest = split(o)
        return (os.path.basename(path), rest)

    tier("basename", base_key, by_base)
    tier("target", base_key, by_base_sim)
    if loose:
        old_names = Counter(split(o)[1] for o in old)
        by_name: dict[object, list[str]] = defaultdict(list)
        for n in new:
            by_name[split(n)[1]].append(n)
        by_name = {k: v for k, v in by_name.items() if len(v) == 1}
        tier("name", lambda o: split(o)[1] if old_names[split(o)[1]] == 1 else None, by_name)
    return pairs, left


def run_pytest(tree: str, python: str, args: list[str], label: str) -> dict:
    cache = tempfile.mkdtemp(prefix=f"ws-cache-{label}-")
    env = dict(os.environ, WARPSTAGE_CACHE_DIR=cache)
    cmd = [python, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider", *args]
    t0 = time.perf_counter()
    with tempfile.TemporaryFile("w+") as log:
        proc = subprocess.Popen(cmd, cwd=tree, env=env, stdout=log, stderr=subprocess.STDOUT)
        _, status, ru = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        log.seek(0)
        tail = log.read()[-3000:]
    summary = next((line for line in reversed(tail.splitlines())
                    if re.search(r"\d+ (passed|failed)", line)), tail.splitlines()[-1:])
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = float("nan")
    return {"label": label, "rc": proc.returncode, "wall": wall, "user": ru.ru_utime,
            "sys": ru.ru_stime, "cpu": ru.ru_utime + ru.ru_stime, "summary": summary,
            "load_after": load, "time": time.strftime("%H:%M:%S", time.gmtime())}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 2)[2])
    ap.add_argument("--old", required=True, help="the older checkout (with OLD/.venv)")
    ap.add_argument("--new", required=True, help="the newer checkout (with NEW/.venv)")
    ap.add_argument("--old-python", help="python of the old tree (default OLD/.venv/bin/python)")
    ap.add_argument("--new-python", help="python of the new tree (default NEW/.venv/bin/python)")
    ap.add_argument("--rounds", type=int, default=2, help="old/new pairs (default 2)")
    ap.add_argument("--full-old", action="store_true", help="also time the old tree's whole suite")
    ap.add_argument("--full-new", action="store_true", help="also time the new tree's whole suite")
    ap.add_argument("--loose", action="store_true",
                    help="also match by name[params] alone where it is unique in each tree")
    ap.add_argument("--match-only", action="store_true", help="report the matching; run nothing")
    ap.add_argument("--ids-dir", help="keep the ID files and the match report here")
    ap.add_argument("--json", help="write every figure here")
    a = ap.parse_args(argv)
    old_py = a.old_python or os.path.join(a.old, ".venv", "bin", "python")
    new_py = a.new_python or os.path.join(a.new, ".venv", "bin", "python")

    old_ids, new_ids = collect(a.old, old_py), collect(a.new, new_py)
    pairs, left = match(old_ids, new_ids, a.loose)
    hows = Counter(how for _, _, how in pairs)
    print(f"old tree {a.old}: {len(old_ids)} tests collected; new tree {a.new}: {len(new_ids)}")
    print(f"matched {len(pairs)} of the old tree's tests ({100 * len(pairs) / len(old_ids):.1f}%): "
          + ", ".join(f"{h} {hows[h]}" for h in ("exact", "basename", "target", "name") if hows[h]))
    print(f"old tests unmatched: {len(left)}; new tests outside the match: "
          f"{len(new_ids) - len(pairs)}")
    unmatched_files = Counter(split(o)[0] for o in left)
    for path, n in unmatched_files.most_common(12):
        print(f"  unmatched in {path}: {n}")

    ids_dir = a.ids_dir or tempfile.mkdtemp(prefix="suite-same-")
    os.makedirs(ids_dir, exist_ok=True)
    old_file, new_file = os.path.join(ids_dir, "old_ids.txt"), os.path.join(ids_dir, "new_ids.txt")
    with open(old_file, "w") as f:
        f.writelines(o + "\n" for o, _, _ in pairs)
    with open(new_file, "w") as f:
        f.writelines(n + "\n" for _, n, _ in pairs)
    with open(os.path.join(ids_dir, "match.tsv"), "w") as f:
        f.writelines(f"{how}\t{o}\t{n}\n" for o, n, how in pairs)
        f.writelines(f"unmatched\t{o}\t\n" for o in left)
    print(f"ID files and match report in {ids_dir}")
    if a.match_only:
        return 0

    runs = []
    for r in range(a.rounds):
        plan = [("old-matched", a.old, old_py, ["@" + old_file]),
                ("new-matched", a.new, new_py, ["@" + new_file])]
        if a.full_old:
            plan.append(("old-full", a.old, old_py, []))
        if a.full_new:
            plan.append(("new-full", a.new, new_py, []))
        for label, tree, py, args in plan:
            res = run_pytest(tree, py, args, label)
            res["round"] = r + 1
            runs.append(res)
            print(f"round {r + 1} {label:12s} wall {res['wall']:7.1f} s  CPU {res['cpu']:7.1f} s "
                  f"(user {res['user']:.1f} + sys {res['sys']:.1f})  rc {res['rc']}  "
                  f"load {res['load_after']:.1f}  {res['time']}  | {res['summary']}", flush=True)

    print("\n| run | n | wall median (runs) | CPU median (runs) |\n|---|---|---|---|")
    for label in ("old-matched", "new-matched", "old-full", "new-full"):
        rs = [x for x in runs if x["label"] == label]
        if not rs:
            continue
        walls = ", ".join(f"{x['wall']:.1f}" for x in rs)
        cpus = ", ".join(f"{x['cpu']:.1f}" for x in rs)
        print(f"| {label} | {len(rs)} | {statistics.median(x['wall'] for x in rs):.1f} s "
              f"({walls}) | {statistics.median(x['cpu'] for x in rs):.1f} s ({cpus}) |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"old": a.old, "new": a.new, "old_collected": len(old_ids),
                       "new_collected": len(new_ids), "matched": len(pairs),
                       "matched_by": dict(hows), "runs": runs}, f, indent=1)
    return 1 if any(x["rc"] not in (0,) for x in runs) else 0


if __name__ == "__main__":
    sys.exit(main())
