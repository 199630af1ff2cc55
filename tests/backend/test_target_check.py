"""Ops the chosen arch lacks are a Python error before LLVM sees them (backend/target_check.py,
reading each op definition's ``requires`` and core/target.py): LLVM's fatal error would abort
the interpreter."""
import subprocess
import sys
import textwrap

import pytest

import warpstage as ws
from warpstage.core.target import target_for
from warpstage.ir import OPS


def _setmaxnreg(x: ws.Tensor):
    ws.arch.setmaxnreg_increase(232)  # marker: setmaxnreg
    x[0] = 1.0


def _elect(x: ws.Tensor):
    if ws.arch.elect_one():  # marker: elect
        x[0] = 1.0


@pytest.mark.parametrize("fn,op,marker,need", [
    (_setmaxnreg, "nvvm.setmaxnreg", "marker: setmaxnreg", "sm_90a"),
    (_elect, "nvvm.elect", "marker: elect", "sm_90"),
])
def test_op_missing_on_the_arch_names_op_line_and_arch(fn, op, marker, need):
    line = next(n for n, t in enumerate(open(__file__), 1) if marker in t and "parametrize" not in t
                and '"marker' not in t)
    k = ws.kernel(fn, arch="sm_80")
    with pytest.raises(ws.UnsupportedError) as e:
        ws.compile(k, ws.Tensor[ws.Float32, 1])
    msg = str(e.value)
    assert op in msg and "sm_80" in msg and f"{__file__}:{line}" in msg
    assert f"needs {need}" in msg and f"Fix: compile with arch={need!r}" in msg


def test_arch_specific_ops_need_the_a_target():
    k = ws.kernel(_setmaxnreg, arch="sm_90")
    with pytest.raises(ws.UnsupportedError, match=r"needs sm_90a \(the arch-specific variant\)"):
        ws.compile(k, ws.Tensor[ws.Float32, 1])


def test_the_default_target_has_every_op():
    target = target_for(ws.CompileOptions().arch)
    needs = {d.requires for d in OPS.values() if d.requires}
    assert needs and all(target.has(n) for n in needs)


def test_a_misspelled_arch_is_an_error_where_it_is_set():
    with pytest.raises(ws.OperandError, match=r"(?s)arch: expected a ptxas architecture name.*"
                                              r"got str 'sm90' \(did you mean 'sm_90a'\?\)"):
        ws.kernel(_elect, arch="sm90")


def test_llvm_never_aborts_the_process_on_a_missing_op():
    code = textwrap.dedent(f'''
        import sys
        sys.path.insert(0, {repr(str(__import__("pathlib").Path(__file__).parent))})
        import warpstage as ws
        from test_target_check import _setmaxnreg
        try:
            ws.compile(ws.kernel(_setmaxnreg, arch="sm_80"), ws.Tensor[ws.Float32, 1])
        except ws.UnsupportedError:
            print("raised")
        ''')
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and "raised" in p.stdout, p.stderr[-2000:]
