"""Dump the IR and PTX of every kernel the CPU test suite traces, to compare two commits.

    python3 scripts/dump_kernels.py dump OUT_DIR [pytest args...]   # default args: tests -q
    python3 scripts/dump_kernels.py compare DIR_A DIR_B

``dump`` runs pytest in this process (tests, examples and ``ws.ops`` through their tests, every
launch on the simulator target or compiled for cuda) with the pass pipeline's entry
``warpstage.passes.pipeline.run_passes`` wrapped: for each module it writes the traced IR (before
the passes), the IR after the passes, and the PTX the backend makes of it (``lower`` +
``emit_ptx`` with the kernel's compile options; no GPU needed), named by the test's node id and
the module's number within that test. ``compare`` prints how many modules both folders hold and
how many of each of the three texts are byte-identical, and lists the first differences.

To compare a commit with the lead's ``main`` (from the repository root)::

    rm -rf /tmp/ws-main && mkdir /tmp/ws-main && git archive main | tar -x -C /tmp/ws-main
    (cd /tmp/ws-main && PYTHONPATH=. python3 $OLDPWD/scripts/dump_kernels.py dump /tmp/dump-main)
    PYTHONPATH=. python3 scripts/dump_kernels.py dump /tmp/dump-here
    python3 scripts/dump_kernels.py compare /tmp/dump-main /tmp/dump-here
"""
from __future__ import annotations

import os
import re
import sys

_KINDS = ("traced.wsir", "final.wsir", "ptx")


def _options_of_caller():
    """The CompileOptions of the kernel whose trace called run_passes (found on the stack)."""
    frame = sys._getframe(2)
    while frame is not None:
        owner = frame.f_locals.get("self")
        opts = getattr(owner, "options", None)
        if opts is not None and hasattr(opts, "arch"):
            return opts
        frame = frame.f_back
    from warpstage.options import CompileOptions
    return CompileOptions()


def dump(out: str, pytest_args: list) -> int:
    import pytest
    from hypothesis import settings
    import warpstage.passes.pipeline as pipeline
    from warpstage.backend import emit_ptx, lower
    from warpstage.ir import print_module

    settings.register_profile("dump_kernels", database=None, derandomize=True)
    settings.load_profile("dump_kernels")
    os.makedirs(out, exist_ok=True)
    original = pipeline.run_passes
    counts: dict = {}

    def run_passes(module, *args, **kwargs):
        test = os.environ.get("PYTEST_CURRENT_TEST", "outside-tests").rsplit(" (", 1)[0]
        n = counts[test] = counts.get(test, -1) + 1
        stem = os.path.join(out, re.sub(r"[^A-Za-z0-9_.-]+", "_", test)[-180:] + f"#{n}")
        traced = print_module(module)
        result = original(module, *args, **kwargs)
        final = print_module(module)
        try:
            ptx = emit_ptx(lower(module, _options_of_caller()), _options_of_caller())
        except Exception as e:          # an op the backend rejects: its message is the artifact
            ptx = f"ERROR {type(e).__name__}: {e}\n"
        for kind, text in zip(_KINDS, (traced, final, ptx)):
            with open(f"{stem}.{kind}", "w") as f:
                f.write(text)
        return result

    pipeline.run_passes = run_passes
    try:
        rc = pytest.main(pytest_args or ["tests", "-q", "-p", "no:cacheprovider"])
    finally:
        pipeline.run_passes = original
    print(f"dumped {sum(c + 1 for c in counts.values())} modules from {len(counts)} tests to {out}")
    return int(rc)


def compare(a: str, b: str) -> int:
    def stems(d):
        return {f.rsplit(".", 2)[0] if f.endswith(".wsir") else f[:-4]
                for f in os.listdir(d) if f.endswith((".wsir", ".ptx"))}

    sa, sb = stems(a), stems(b)
    common = sorted(sa & sb)
    print(f"modules: {len(sa)} in {a}, {len(sb)} in {b}, {len(common)} in both "
          f"({len(sa - sb)} only in the first, {len(sb - sa)} only in the second)")
    bad = 0
    for kind in _KINDS:
        diff = [s for s in common if _read(a, s, kind) != _read(b, s, kind)]
        bad += len(diff)
        print(f"{kind:12s} identical in {len(common) - len(diff)} of {len(common)}")
        for s in diff[:5]:
            print(f"    differs: {s}.{kind}")
    return 1 if bad else 0


def _read(d, stem, kind):
    try:
        with open(os.path.join(d, f"{stem}.{kind}")) as f:
            return f.read()
    except FileNotFoundError:
        return None


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "dump":
        sys.exit(dump(sys.argv[2], sys.argv[3:]))
    if len(sys.argv) == 4 and sys.argv[1] == "compare":
        sys.exit(compare(sys.argv[2], sys.argv[3]))
    sys.exit(__doc__)
