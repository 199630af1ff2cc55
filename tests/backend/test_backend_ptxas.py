"""ptxas discovery, assembly to cubin, resource parsing and error reporting."""
import os

import pytest

from backend_helpers import KernelBuilder, OPTIONS
from warpstage.backend import assemble, find_ptxas, ptxas_version
from warpstage.backend.ptxas import Resources, parse_resources
from warpstage.errors import CompilationError, PtxasError
from warpstage.ir import PointerType, f32, i32

SAMPLE_LOG = """\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'producer_consumer' for 'sm_90a'
ptxas info    : Function properties for producer_consumer
    8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 168 registers, used 2 barriers, 33024 bytes smem, 400 bytes cmem[0]
ptxas info    : Compiling entry function 'tiny' for 'sm_90a'
ptxas info    : Function properties for tiny
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 12 registers, 368 bytes cmem[0]
"""


def test_parse_resources():
    res = parse_resources(SAMPLE_LOG)
    assert res["producer_consumer"] == Resources(registers=168, shared_bytes=33024,
                                                 spill_stores=4, spill_loads=12, stack_frame=8,
                                                 barriers=2, const_bytes=400)
    assert res["tiny"] == Resources(registers=12, const_bytes=368)


def vadd_ptx(attrs=None):
    P = PointerType(f32)
    k = KernelBuilder([P, P, P, i32], name="vadd", attrs=attrs)
    a, b_, c, n = k.args
    b = k.b
    i = b.sreg("tid.x", i32)
    b.store(b.ptr_offset(c, i), b.binary("add", b.load(b.ptr_offset(a, i)),
                                         b.load(b.ptr_offset(b_, i))))
    return k.finish()[1]


def test_assemble_vector_add(ptxas_path):
    result = assemble(vadd_ptx({"maxntid": (128, 1, 1), "minctasm": 1}), OPTIONS, ["vadd"])
    assert result.cubin[:4] == b"\x7fELF"
    res = result.resources["vadd"]
    assert isinstance(res.registers, int) and res.registers > 0
    assert res.spill_stores == 0 and res.shared_bytes == 0
    assert "sm_90a" in result.log
    assert result.warnings == []
    assert result.seconds > 0


def test_broken_ptx_raises_with_ptxas_message(ptxas_path):
    ptx = vadd_ptx().replace("add.rn.f32", "add.bogus.f32")
    with pytest.raises(PtxasError) as info:
        assemble(ptx, OPTIONS, ["vadd"])
    message = str(info.value)
    assert "Unknown modifier '.bogus'" in message
    assert "> add.bogus.f32" in message             # the offending PTX line is quoted
    assert "error" in info.value.log.lower()
    assert "kernel.ptx" in str(info.value)          # the temp path is not leaked


def with_setmaxnreg(ptx):
    return ptx.replace("\tret;", "\tsetmaxnreg.inc.sync.aligned.u32 232;\n\tret;")


def test_setmaxnreg_needs_maxntid_and_minctasm(ptxas_path):
    ignored = assemble(with_setmaxnreg(vadd_ptx()), OPTIONS, ["vadd"])
    assert any("C7508" in w for w in ignored.warnings)
    honoured = assemble(with_setmaxnreg(vadd_ptx({"maxntid": 128, "minctasm": 1})), OPTIONS,
                        ["vadd"])
    assert honoured.warnings == []
    assert honoured.resources["vadd"].registers == 232


def test_missing_kernel_is_reported(ptxas_path):
    with pytest.raises(PtxasError, match="no entry nope"):
        assemble(vadd_ptx(), OPTIONS, ["nope"])


def test_ptxas_version(ptxas_path):
    assert "release" in ptxas_version(ptxas_path)


def test_explicit_ptxas_option_wins(ptxas_path):
    assert find_ptxas(OPTIONS.with_(ptxas=ptxas_path)) == ptxas_path


def test_explicit_ptxas_option_must_exist(tmp_path):
    missing = str(tmp_path / "no-ptxas-here")
    with pytest.raises(CompilationError, match="WARPSTAGE_PTXAS"):
        find_ptxas(OPTIONS.with_(ptxas=missing))


def test_no_ptxas_is_a_clear_error(monkeypatch):
    import warpstage.backend.ptxas as mod
    monkeypatch.setattr(mod, "find_ptxas", lambda options: None)
    with pytest.raises(PtxasError, match="no ptxas found"):
        mod.assemble(".version 8.0", OPTIONS)


def test_cuda_home_is_searched(tmp_path, monkeypatch):
    import warpstage.backend.ptxas as mod
    fake = tmp_path / "bin" / "ptxas"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\n")
    os.chmod(fake, 0o755)
    monkeypatch.setattr(mod.importlib.util, "find_spec", lambda name: None)
    monkeypatch.setenv("CUDA_HOME", str(tmp_path))
    mod.find_cuda_tool.cache_clear()
    try:
        assert find_ptxas(OPTIONS) == str(fake)
    finally:
        mod.find_cuda_tool.cache_clear()


@pytest.mark.parametrize("opts,flag", [({}, "-O3"), ({"opt_level": 2}, "-O2"),
                                       ({"ptxas_opt_level": 1}, "-O1"),
                                       ({"opt_level": 2, "ptxas_opt_level": 3}, "-O3")])
def test_ptxas_opt_level_sets_ptxas_level_alone(tmp_path, opts, flag):
    argv = tmp_path / "argv"
    fake = tmp_path / "ptxas"
    fake.write_text(f'#!/bin/sh\necho "$@" > {argv}\nexit 1\n')
    os.chmod(fake, 0o755)
    with pytest.raises(PtxasError):
        assemble(".version 8.0", OPTIONS.with_(ptxas=str(fake), **opts))
    assert flag in argv.read_text().split()


def test_ptxas_opt_level_refuses_other_values():
    from warpstage.errors import OperandError
    with pytest.raises(OperandError, match=r"ptxas_opt_level: expected None .* got int 4"):
        OPTIONS.with_(ptxas_opt_level=4)
