"""core/target.py (the target description) and backend/target_check.py (an op the arch lacks is
a Python error, never an LLVM abort)."""
import subprocess
import sys
import textwrap

import pytest

from warpstage.core.target import TARGETS, target_for
from warpstage.ir import OPS

PROBE = textwrap.dedent("""
    import warpstage as ws

    def compile_for(arch, use):
        @ws.kernel(arch=arch)
        def k(out: ws.Tensor):
            use(out)
            out[1] = 1
        return ws.compile(k, ws.Tensor[ws.Int32, 1], block=(128, 1, 1))

    def setmaxnreg(out):
        ws.arch.setmaxnreg_increase(232)

    def elect(out):
        out[0] = ws.Int32(ws.arch.elect_one())

    def wgmma(out):
        ws.wgmma.commit_group()

    for name, use in (("setmaxnreg", setmaxnreg), ("elect", elect), ("wgmma", wgmma)):
        try:
            compile_for("sm_80", use)
            print(name, "compiled")
        except ws.UnsupportedError as e:
            print(name, "error:", str(e).replace("\\n", " | "))
    print("sm_90a ok:", ".target sm_90a" in compile_for("sm_90a", setmaxnreg).ptx)
""")


def test_ops_the_arch_lacks_are_python_errors_not_llvm_aborts(tmp_path):
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"rc {r.returncode} (-6 is LLVM's abort)\n{r.stdout}\n{r.stderr}"
    lines = r.stdout.splitlines()
    assert lines[0].startswith("setmaxnreg error: nvvm.setmaxnreg at ")
    assert "needs sm_90a (the arch-specific variant), and the kernel is compiled for sm_80" in lines[0]
    assert "probe.py:" in lines[0] and " | Fix: compile with arch='sm_90a'" in lines[0]
    assert "Expected: arch 'sm_90a' or newer; got 'sm_80'." in lines[0]
    assert lines[1].startswith("elect error: nvvm.elect at ") and "needs sm_90 or newer" in lines[1]
    assert lines[2].startswith("wgmma error: wgmma.commit_group at ")
    assert lines[3] == "sm_90a ok: True"


def test_limits_and_requirements():
    h = target_for("sm_90a")
    assert (h.warp_size, h.max_threads_per_cta, h.max_dynamic_smem) == (32, 1024, 227 * 1024)
    assert h.has("sm_80") and h.has("sm_90") and h.has("sm_90a")
    plain = target_for("sm_90")
    assert plain.has("sm_90") and not plain.has("sm_90a")
    assert not target_for("sm_80").has("sm_90") and target_for("sm_80").max_cluster_ctas == 0


def test_every_op_runs_on_sm_90a_and_names_a_real_requirement():
    h = target_for("sm_90a")
    for name, d in OPS.items():
        assert h.has(d.requires), name
        assert d.requires == "" or d.requires in TARGETS or d.requires.rstrip("a") in TARGETS


def test_an_unknown_arch_names_the_known_ones():
    with pytest.raises(ValueError, match=r"unknown GPU architecture 'sm_42'.*sm_80, sm_86"):
        target_for("sm_42")
