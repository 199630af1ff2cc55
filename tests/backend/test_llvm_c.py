"""backend/llvm_c.py: the direct binding of libllvmlite's emission entry points gives the PTX that
llvmlite.binding gives, byte for byte, raises LLVM's messages, and is chosen only for a checked
llvmlite release; a compile in a fresh process does not import llvmlite.binding."""
import os
import subprocess
import sys

import pytest

from backend_helpers import OPTIONS
from test_backend_ptx import small_module
from warpstage.backend import emit_ptx, llvm_c, lower
from warpstage.backend import ptx as ptx_module
from warpstage.errors import CompilationError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TRIPLE = ptx_module.TRIPLE
direct_only = pytest.mark.skipif(not isinstance(llvm_c.api(), llvm_c.Direct),
                                 reason="this llvmlite release is not one llvm_c checked")


def _attention_llvm_ir(head_dim, causal):
    import warpstage as ws
    from warpstage.ops import attention
    fa = attention.policy_for(head_dim, "BFloat16", causal, head_dim ** -0.5, "cp.async")
    T = ws.Tensor[ws.BFloat16, 4]
    return ws.compile(attention.flash_attention_kernel, fa, T, T, T, T, block=fa.threads).llvm_ir


@direct_only
@pytest.mark.parametrize("opt_level", [0, 1, 2, 3])
def test_direct_and_llvmlite_print_the_same_ptx(opt_level):
    direct, other = llvm_c.api(), llvm_c.ThroughLlvmlite()
    options = OPTIONS.with_(opt_level=opt_level)
    text = lower(small_module(), options)
    a = direct.emit(direct.target_machine(TRIPLE, "sm_90a", "+ptx80", opt_level), text, TRIPLE,
                    opt_level)
    b = other.emit(other.target_machine(TRIPLE, "sm_90a", "+ptx80", opt_level), text, TRIPLE,
                   opt_level)
    assert ".entry k(" in a
    assert a == b


@direct_only
@pytest.mark.parametrize("head_dim, causal", [(64, False), (128, True)])
def test_direct_and_llvmlite_print_the_same_attention_ptx(head_dim, causal):
    text = _attention_llvm_ir(head_dim, causal)
    direct, other = llvm_c.api(), llvm_c.ThroughLlvmlite()
    a = direct.emit(direct.target_machine(TRIPLE, "sm_90a", "+ptx80", 3), text, TRIPLE, 3)
    b = other.emit(other.target_machine(TRIPLE, "sm_90a", "+ptx80", 3), text, TRIPLE, 3)
    assert a.count("mma.sync") > 100
    assert a == b


@direct_only
def test_data_layout_and_version_agree_with_llvmlite():
    direct, other = llvm_c.api(), llvm_c.ThroughLlvmlite()
    tm_a = direct.target_machine(TRIPLE, "sm_90a", "+ptx80", 3)
    tm_b = other.target_machine(TRIPLE, "sm_90a", "+ptx80", 3)
    assert direct.data_layout(tm_a) == other.data_layout(tm_b)
    assert direct.data_layout(tm_a).startswith("e-")
    assert direct.version() == other.version()
    import llvmlite
    assert llvm_c.llvmlite_version() == llvmlite.__version__


def test_a_parse_error_carries_llvm_s_message():
    with pytest.raises(CompilationError, match="(?s)invalid LLVM IR.*parsing error.*doesn.t match function result type"):
        emit_ptx("define void @f() {\n  ret i32 0\n}\n", OPTIONS)


def test_a_verifier_error_carries_llvm_s_message():
    # parses, but the verifier rejects an entry block with a predecessor
    text = "define void @f() {\nentry:\n  br label %entry\n}\n"
    with pytest.raises(CompilationError, match="(?s)invalid LLVM IR.*[Ee]ntry block"):
        emit_ptx(text, OPTIONS)


def test_an_unknown_triple_is_refused():
    with pytest.raises(RuntimeError, match="[Nn]o available targets|target"):
        llvm_c.api().target_machine("nonesuch-unknown-unknown", "", "", 3)


@pytest.mark.parametrize("version, direct", [("0.50.0", True), ("0.50.3", True),
                                             ("0.51.0", False), ("0.49.1", False), (None, False)])
def test_the_direct_binding_only_for_a_checked_release(monkeypatch, version, direct):
    monkeypatch.setattr(llvm_c, "llvmlite_version", lambda: version)
    monkeypatch.setattr(llvm_c, "Direct", lambda path: ("direct", path))
    monkeypatch.setattr(llvm_c, "ThroughLlvmlite", lambda: ("llvmlite",))
    llvm_c.api.cache_clear()
    try:
        got = llvm_c.api()
    finally:
        llvm_c.api.cache_clear()
    assert (got[0] == "direct") == (direct and llvm_c.library_path() is not None)


def test_loading_in_a_thread_raises_its_error_in_the_caller(monkeypatch):
    def broken():
        raise OSError("libllvmlite.so: cannot open shared object file")
    monkeypatch.setattr(llvm_c, "api", broken)
    thread = ptx_module.load_llvm(wait=False)
    thread.join()
    with pytest.raises(OSError, match="cannot open shared object"):
        ptx_module.load_llvm()


@direct_only
def test_a_cold_compile_does_not_import_llvmlite_binding(tmp_path):
    (tmp_path / "tiny.py").write_text("import warpstage as ws\n\n@ws.kernel\ndef tiny(n: ws.Int32):\n"
                                      "    pass\n")
    code = ("import sys, warpstage as ws\nfrom tiny import tiny\n"
            "ck = ws.compile(tiny, ws.Int32)\n"
            "print('.entry tiny' in ck.ptx, 'llvmlite.binding' in sys.modules,\n"
            "      any('libllvmlite' in line for line in open('/proc/self/maps')))\n")
    env = dict(os.environ, WARPSTAGE_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([ROOT, str(tmp_path)]))
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True,
                         text=True, timeout=300)
    assert out.stdout.split() == ["True", "False", "True"], out.stderr
