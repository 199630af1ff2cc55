"""warpstage/options.py: code-generation options are hashed into the disk key, debug and runtime
options are not (changing them never recompiles); the deprecated ``debug`` spelling."""
import dataclasses
import os
import subprocess
import sys
import warnings

import pytest

import warpstage as ws
from warpstage.jit.cache import persist
from warpstage.backend import find_ptxas
from warpstage.jit.compiled import STAGE_COUNTS
from warpstage.options import CODEGEN_FIELDS, RUNTIME_FIELDS, CompileOptions

needs_ptxas = pytest.mark.skipif(find_ptxas(ws.CompileOptions()) is None, reason="no ptxas")
T1 = ws.Tensor[ws.Float32, 1]


def _body(a: ws.Tensor, n: ws.Int32):
    i = ws.arch.thread_idx()[0]
    assert i < n
    a[i] = a[i] * 2.0


def _key(kern):
    return persist.spec_key(kern, kern.specs([T1, ws.Int32], placeholders=True), (128, 1, 1))


def test_every_option_is_in_exactly_one_group():
    names = {f.name for f in dataclasses.fields(CompileOptions)}
    assert set(CODEGEN_FIELDS) | set(RUNTIME_FIELDS) == names
    assert not set(CODEGEN_FIELDS) & set(RUNTIME_FIELDS)
    assert {"compiler_frames", "max_specializations", "max_unroll"} == set(RUNTIME_FIELDS)
    assert [n for n, _ in CompileOptions().codegen_key()] == list(CODEGEN_FIELDS)


@pytest.mark.parametrize("change,hashed", [
    ({"max_specializations": 2}, False), ({"compiler_frames": True}, False),
    ({"device_asserts": True}, True), ({"opt_level": 2}, True), ({"arch": "sm_90"}, True),
    ({"llvm_pipeline": "light"}, True), ({"ptxas_opt_level": 1}, True)])
def test_only_code_generation_options_change_the_disk_key(change, hashed):
    assert (_key(ws.kernel(**change)(_body)) != _key(ws.kernel(_body))) == hashed


@needs_ptxas
def test_changing_a_runtime_option_does_not_recompile():
    ws.compile(ws.kernel(_body), T1, 4)
    before = STAGE_COUNTS["trace"]
    other = ws.kernel(max_specializations=1, compiler_frames=True)(_body)
    ck = ws.compile(other, T1, 4)
    assert other.trace_count == 0 and STAGE_COUNTS["trace"] == before
    assert ck.options.max_specializations == 1 and ck.options.compiler_frames
    asserts = ws.kernel(device_asserts=True)(_body)
    ws.compile(asserts, T1, 4)
    assert asserts.trace_count == 1             # a code-generation option is a new compile


def test_debug_still_means_both_with_a_deprecation_warning():
    with pytest.warns(DeprecationWarning, match=r"debug=.*deprecated.*device_asserts=True") as rec:
        opts = CompileOptions(debug=True)
    assert rec[0].filename == __file__
    assert opts.device_asserts and opts.compiler_frames
    with pytest.warns(DeprecationWarning) as rec:
        kern = ws.kernel(debug=True)(_body)
    assert rec[0].filename == __file__ and kern.options.device_asserts
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not CompileOptions(device_asserts=True).compiler_frames
        assert CompileOptions().with_(opt_level=1).opt_level == 1


@pytest.mark.parametrize("value, on", [(None, True), ("", True), ("1", True), ("0", False),
                                       ("off", False), (" No ", False), ("yes", True)])
def test_the_c_call_path_switch(monkeypatch, value, on):
    from warpstage.options import env_c_call
    if value is None:
        monkeypatch.delenv("WARPSTAGE_CCALL", raising=False)
    else:
        monkeypatch.setenv("WARPSTAGE_CCALL", value)
    assert env_c_call() is on


def test_kernel_options_are_checked_at_once_and_taken_over_the_defaults_at_first_use(
        monkeypatch):
    monkeypatch.delenv("WARPSTAGE_DEBUG", raising=False)

    @ws.kernel(max_specializations=3)
    def k(n: ws.Int32):
        pass
    monkeypatch.setenv("WARPSTAGE_DEBUG", "1")          # after the decoration, before first use
    assert k.options.max_specializations == 3 and k.options.device_asserts is True
    with pytest.raises(ws.OperandError, match="max_specializations: expected an int >= 1"):
        ws.kernel(max_specializations=0)


def test_library_kernels_expect_a_specialization_per_configuration():
    # ws.ops compiles one specialization per policy configuration (and per autotune candidate):
    # no RecompileWarning at the user-kernel bound of 8 (session 14's review)
    from warpstage.options import LIBRARY_SPECIALIZATIONS
    from warpstage.ops.matmul_splitk import splitk_reduce
    for kern in (ws.ops.flash_attention_kernel, ws.ops.flash_attention_wgmma_kernel,
                 ws.ops.matmul_kernel, splitk_reduce):
        assert kern.options.max_specializations == LIBRARY_SPECIALIZATIONS > 8
    assert CompileOptions().max_specializations == 8


@pytest.mark.parametrize("value,want", [("light", "light"), (" Light ", "light"),
                                        ("default", "default"), ("", "default"),
                                        ("O1", "default"), ("lite", "default")])
def test_the_llvm_pipeline_from_the_environment(monkeypatch, value, want):
    from warpstage.options import _WARNED_ENV, default_options
    monkeypatch.setenv("WARPSTAGE_LLVM_PIPELINE", value)
    _WARNED_ENV.clear()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert default_options().llvm_pipeline == want
    unknown = value.strip().lower() not in ("", "light", "default")
    assert [str(w.message) for w in seen if "WARPSTAGE_LLVM_PIPELINE" in str(w.message)] == (
        [f"WARPSTAGE_LLVM_PIPELINE={value!r} is not one of 'default', 'light'; using 'default'. "
         "Fix: set WARPSTAGE_LLVM_PIPELINE to one of those, or unset it."] if unknown else [])
    with warnings.catch_warnings(record=True) as again:        # once per process and value
        warnings.simplefilter("always")
        default_options()
    assert not [w for w in again if "WARPSTAGE_LLVM_PIPELINE" in str(w.message)]
    assert ws.kernel(_body).options.llvm_pipeline == want
    assert ws.kernel(llvm_pipeline="default")(_body).options.llvm_pipeline == "default"


@pytest.mark.parametrize("value,want,warns", [("bindings", "bindings", False),
                                              ("CTYPES", "ctypes", False), ("", "ctypes", False),
                                              ("cuda-bindings", "ctypes", True)])
def test_the_launch_path_from_the_environment(monkeypatch, value, want, warns):
    from warpstage.options import _WARNED_ENV, env_launch_path
    monkeypatch.setenv("WARPSTAGE_LAUNCH", value)
    _WARNED_ENV.clear()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert env_launch_path() == want
    assert any("WARPSTAGE_LAUNCH='cuda-bindings'" in str(w.message) for w in seen) == warns


def test_ws_compile_with_options_reuses_its_specializations():
    # ws.compile(k, ..., option=...) used to make a new Kernel per call, so a second compile
    # with the same options (or with options that change nothing) compiled again (review15)
    kern = ws.kernel(_body)
    t = (T1, ws.Int32)
    first = ws.compile(kern, *t, opt_level=2)
    assert ws.compile(kern, *t, opt_level=2) is first
    assert ws.compile(kern, *t, llvm_pipeline=kern.options.llvm_pipeline) is ws.compile(kern, *t)
    assert ws.compile(kern, *t, opt_level=1) is not first
    assert first.options.opt_level == 2 and kern.options.opt_level != 2


def test_an_environment_warning_while_warpstage_imports_names_the_users_import(tmp_path):
    script = tmp_path / "main.py"
    script.write_text("import sys\n\nimport warpstage as ws\nprint(ws.__name__)\n")
    env = dict(os.environ, WARPSTAGE_LLVM_PIPELINE="fast")
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.startswith(f"{script}:3: UserWarning: WARPSTAGE_LLVM_PIPELINE='fast'")
