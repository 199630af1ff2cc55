"""Golden IR files (tests/passes/golden/*.wsir), FileCheck-style.

Each file is IR text (``warpstage.ir.parse``) with comment lines: ``// RUN: <stage>`` picks what
runs on the parsed module (``addresses``: the address split then DCE, ``cse``, ``dce``, ``kernel_attrs``, ``legalize``, ``licm``, ``passes``: the whole
pipeline, ``llvm``:
the passes then ``backend.lower``, ``ptx``: LLVM IR then PTX); ``// CHECK: text`` lines must appear in the output
in order, ``// CHECK-SAME: text`` on the line of the previous match, after it, and
``// CHECK-NOT: text`` nowhere between the previous match and the next.
"""
import os

import pytest

from warpstage.backend import emit_ptx, lower
from warpstage.ir import parse, print_module, verify
from warpstage.options import CompileOptions
from warpstage.passes.addresses import split_address_constants
from warpstage.passes.cse import common_subexpressions
from warpstage.passes.dce import dead_code_elimination
from warpstage.passes.kernel_attrs import kernel_attributes
from warpstage.passes.legalize import legalize
from warpstage.passes.licm import loop_invariant_code_motion
from warpstage.passes.pipeline import run_passes

GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden")


def _ir_after(pass_fn):
    def stage(m):
        pass_fn(m)
        verify(m)
        return print_module(m)
    return stage


STAGES = {
    "addresses": _ir_after(lambda m: (split_address_constants(m), dead_code_elimination(m))),
    "cse": _ir_after(common_subexpressions),
    "dce": _ir_after(dead_code_elimination),
    "kernel_attrs": _ir_after(kernel_attributes),
    "legalize": _ir_after(legalize),
    "licm": _ir_after(loop_invariant_code_motion),
    "passes": _ir_after(run_passes),
    "llvm": lambda m: lower(run_passes(m), CompileOptions()),
    "ptx": lambda m: emit_ptx(lower(run_passes(m), CompileOptions()), CompileOptions()),
}


def file_check(output: str, checks: list) -> None:
    """Apply ``checks`` ([(kind, text)]) to ``output``; AssertionError naming the failing check."""
    lines = output.splitlines()
    pos, col, forbidden = 0, 0, []
    for kind, text in checks:
        if kind == "CHECK-NOT":
            forbidden.append(text)
            continue
        if kind == "CHECK-SAME":
            at = lines[pos - 1].find(text, col) if pos else -1
            assert at >= 0, f"CHECK-SAME: {text!r} not on the matched line {lines[pos - 1]!r}"
            col = at + len(text)
            continue
        start = pos
        while pos < len(lines) and text not in lines[pos]:
            pos += 1
        assert pos < len(lines), f"CHECK: {text!r} not found after line {start}"
        for bad in forbidden:
            hit = next((ln for ln in lines[start:pos] if bad in ln), None)
            assert hit is None, f"CHECK-NOT: {bad!r} found: {hit!r}"
        forbidden = []
        col = lines[pos].find(text) + len(text)
        pos += 1
    for bad in forbidden:
        hit = next((ln for ln in lines[pos:] if bad in ln), None)
        assert hit is None, f"CHECK-NOT: {bad!r} found: {hit!r}"


def _load(path):
    ir_lines, checks, stage = [], [], None
    for line in open(path).read().splitlines():
        if line.startswith("// RUN: "):
            stage = line[len("// RUN: "):].strip()
        elif line.startswith("// CHECK"):
            kind, _, text = line[3:].partition(": ")
            checks.append((kind, text))
        elif not line.startswith("//"):
            ir_lines.append(line)
    return stage, "\n".join(ir_lines).strip() + "\n", checks


@pytest.mark.parametrize("name", sorted(f for f in os.listdir(GOLDEN) if f.endswith(".wsir")))
def test_golden(name):
    stage, text, checks = _load(os.path.join(GOLDEN, name))
    assert stage in STAGES and checks, f"{name}: needs a '// RUN: <stage>' and CHECK lines"
    module = parse(text)
    verify(module)
    file_check(STAGES[stage](module), checks)


def test_file_check_can_fail():
    out = "a = 1\nb = 2\nc = 3\n"
    file_check(out, [("CHECK", "a"), ("CHECK-NOT", "x"), ("CHECK", "c")])
    for checks, message in (([("CHECK", "b"), ("CHECK", "a")], "CHECK: 'a' not found"),
                            ([("CHECK", "a"), ("CHECK-NOT", "b"), ("CHECK", "c")],
                             "CHECK-NOT: 'b' found"),
                            ([("CHECK", "b"), ("CHECK-SAME", "3")], "CHECK-SAME: '3'")):
        with pytest.raises(AssertionError, match=message):
            file_check(out, checks)
