"""Ops the chosen arch lacks are a Python error before LLVM sees them (backend/target_check.py):
LLVM's fatal error would abort the interpreter."""
import subprocess
import sys
import textwrap

import pytest

import warpstage as ws
from warpstage.backend.target_check import OP_REQUIREMENTS, parse_arch


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
    assert op in msg and "arch='sm_80'" in msg and f"{__file__}:{line}" in msg
    assert f"Fix: compile for arch='{need}'" in msg


def test_arch_specific_ops_need_the_a_target():
    k = ws.kernel(_setmaxnreg, arch="sm_90")
    with pytest.raises(ws.UnsupportedError, match="arch-specific feature of sm_90a"):
        ws.compile(k, ws.Tensor[ws.Float32, 1])


def test_the_default_target_has_every_op_in_the_table():
    sm, specific = parse_arch(ws.CompileOptions().arch)
    assert all(r.sm <= sm and (not r.arch_specific or specific) for r in OP_REQUIREMENTS.values())


def test_a_misspelled_arch_is_an_error():
    k = ws.kernel(_elect, arch="sm90")
    with pytest.raises(ws.UnsupportedError, match="not an NVIDIA target name"):
        ws.compile(k, ws.Tensor[ws.Float32, 1])


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
