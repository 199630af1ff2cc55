"""The compile stages as values (jit/stages.py) and the pipeline that makes them in order
(jit/pipeline.py), through ws.compile and a CompiledKernel's stage properties."""
import dataclasses

import pytest

import warpstage as ws
from warpstage import ir
from warpstage.jit import pipeline
from warpstage.jit.pipeline import STAGE_COUNTS, STAGES
from warpstage.jit.stages import Compiled, Executable, Lowered, Traced


def _add_one(a: ws.Tensor, n: ws.Int32):
    i = ws.arch.thread_idx()[0]
    if i < n:
        a[i] = a[i] + 1.0


def _fresh():
    # a new Kernel object per test: its memory cache is empty, so its stages are built here
    return ws.kernel(_add_one)


@pytest.fixture
def no_disk_cache(monkeypatch):
    monkeypatch.setenv("WARPSTAGE_CACHE_DIR", "")


def test_the_stages_chain_in_order():
    names = [name for name, _, _ in STAGES]
    assert names == ["trace", "lower", "ptxas", "load"]
    for (_, _, made), (_, takes, _) in zip(STAGES, STAGES[1:]):
        assert takes is made
    assert [s for _, _, s in STAGES] == [Traced, Lowered, Compiled, Executable]


def test_each_stage_is_frozen_and_prints_its_text(no_disk_cache):
    ck = ws.compile(_fresh(), ws.Tensor[ws.Float32, 1], ws.Int32, block=64)
    traced, lowered = ck.traced, ck.lowered
    assert str(traced) == ck.ir == ir.print_module(ck.module) and "scf.if" in ck.ir
    assert str(lowered) == ck.ptx and ".entry" in ck.ptx
    assert lowered.llvm_ir == ck.llvm_ir and "nvptx64" in lowered.llvm_ir
    assert traced.block == (64, 1, 1) and traced.abi == tuple(ck.abi)
    for stage in (traced, lowered, ck.compiled):
        with pytest.raises(dataclasses.FrozenInstanceError):
            stage.name = "other"
        assert stage.name == ck.name and ck.name in repr(stage)
    if ck.compiled.result is not None:      # ptxas installed
        assert ck.compiled.cubin == ck.cubin and ck.cubin[:4] == b"\x7fELF"
        assert ck.name in str(ck.compiled)


def test_ptx_lowers_but_does_not_assemble(no_disk_cache):
    ck = ws.kernel(_add_one)
    ws.set_target("sim")
    try:
        import numpy as np
        a = np.zeros(8, np.float32)
        ck[1, 8](a, 8)                          # traced for the simulator: no backend ran
        assert (a == 1).all()
        (spec,) = ck._cache.values()
        before = dict(STAGE_COUNTS)
        assert spec._lowered is None and spec._compiled is None
        spec.ptx
        assert STAGE_COUNTS["lower"] == before["lower"] + 1
        assert STAGE_COUNTS["ptx"] == before["ptx"] + 1
        assert STAGE_COUNTS["ptxas"] == before["ptxas"] and spec._compiled is None
        assert {"trace", "lower", "ptx"} <= set(spec.timings)
        spec.ptx
        assert STAGE_COUNTS["lower"] == before["lower"] + 1     # kept, not rebuilt
    finally:
        ws.set_target(None)


def test_the_pipeline_functions_compose(no_disk_cache):
    ck = ws.compile(_fresh(), ws.Tensor[ws.Float32, 1], ws.Int32, block=32)
    timings = {}
    again = pipeline.lower(ck.traced, ck.options, timings)
    assert again == ck.lowered                      # the same text from the same Traced
    assert set(timings) == {"llvm_load", "lower", "ptx"}
    compiled = pipeline.assemble(again, ck.options, timings)
    assert compiled.ptx == again.ptx and compiled.name == again.name


def test_an_executable_is_its_three_handles():
    ex = Executable("mod", "fn", "launcher")
    assert (ex.module, ex.function, ex.launcher) == ("mod", "fn", "launcher")
    assert ex[2] == "launcher"          # the launch paths read the Launcher at index 2


def _loop_and_branch(a: ws.Tensor, n: ws.Int32):
    # a dynamic loop and branch: the control flow whose jump targets nvdisasm's dataflow pass
    # would annotate
    i = ws.arch.thread_idx()[0]
    acc = a[i]
    for k in range(n):
        if acc > 1.0:
            acc = acc * 0.5
        else:
            acc = acc + 1.0
    a[i] = acc


def test_sass_without_nvdisasm_dataflow_is_the_full_disassembly(no_disk_cache, ptxas_path):
    """``ck.sass`` runs nvdisasm with ``-ndf`` (half its CPU time): the text must be what plain
    ``nvdisasm`` prints, byte for byte, for code with loops and branches."""
    import subprocess
    import tempfile
    from warpstage.backend.ptxas_tool import find_cuda_tool
    tool = find_cuda_tool("nvdisasm")
    if tool is None:
        pytest.skip("no nvdisasm")
    ck = ws.compile(ws.kernel(_loop_and_branch), ws.Tensor[ws.Float32, 1], ws.Int32, block=64)
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(ck.cubin)
        f.flush()
        plain = subprocess.run([tool, f.name], capture_output=True, text=True, check=True).stdout
    assert "BRA" in plain and ck.sass == plain


def test_sass_is_disassembled_once_per_cubin_and_tool(no_disk_cache, ptxas_path, monkeypatch):
    """``ck.sass`` runs nvdisasm (or cuobjdump) once: a second read gives the same text without
    a subprocess; a different tool found disassembles again."""
    import subprocess
    import warpstage.backend.ptxas_tool as tools
    from warpstage.jit import compiled as compiled_mod
    if not (tools.find_cuda_tool("nvdisasm") or tools.find_cuda_tool("cuobjdump")):
        pytest.skip("no nvdisasm or cuobjdump")
    ck = ws.compile(_fresh(), ws.Tensor[ws.Float32, 1], ws.Int32, block=64)
    runs = []

    def counting(args, **kwargs):
        runs.append(args[0])
        return subprocess.run(args, **kwargs)
    monkeypatch.setattr(compiled_mod, "subprocess",
                        type("S", (), {"run": staticmethod(counting)}))
    first = ck.sass
    assert "FADD" in first and len(runs) == 1
    assert ck.sass == first and len(runs) == 1
    real = tools.find_cuda_tool
    monkeypatch.setattr(tools, "find_cuda_tool", lambda name: "/elsewhere/" + name
                        if name == "nvdisasm" else real(name))
    with pytest.raises(FileNotFoundError):     # the new tool is asked, not the kept text
        ck.sass
    assert runs[-1] == "/elsewhere/nvdisasm"


def _order(monkeypatch):
    """Record, in order, when a specialization starts loading LLVM and when it is traced."""
    seen = []
    real_trace = pipeline.trace
    monkeypatch.setattr(pipeline, "start_llvm_load", lambda: seen.append("llvm"))
    monkeypatch.setattr(pipeline, "trace",
                        lambda *a, **k: seen.append("trace") or real_trace(*a, **k))
    return seen


def test_a_miss_for_a_ptx_target_starts_loading_llvm_before_its_trace(monkeypatch):
    seen = _order(monkeypatch)

    @ws.kernel
    def tiny(n: ws.Int32):
        pass
    ws.compile(tiny, ws.Int32)
    assert seen == ["llvm", "trace"]


def test_the_simulator_never_starts_loading_llvm(monkeypatch):
    import numpy as np
    from warpstage.runtime import target
    monkeypatch.setattr(target, "_override", "sim")
    seen = _order(monkeypatch)

    @ws.kernel
    def fill(x: ws.Tensor):
        x[ws.arch.thread_idx()[0]] = 1.0
    x = np.zeros(32, np.float32)
    fill[1, 32](x)
    assert seen == ["trace"] and x.sum() == 32
