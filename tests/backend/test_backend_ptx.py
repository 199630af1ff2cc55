"""emit_ptx: LLVM IR -> PTX for sm_90a."""
import re
import threading

import pytest

from backend_helpers import KernelBuilder, OPTIONS
from warpstage.backend import emit_ptx, llvm_version, lower
from warpstage.errors import CompilationError
from warpstage.ir import PointerType, f32, i32


def small_module(name="k"):
    k = KernelBuilder([PointerType(f32), f32], name=name, attrs={"maxntid": (256, 1, 1)})
    out, x = k.args
    k.b.store(k.b.ptr_offset(out, k.b.sreg("tid.x", i32)), k.b.unary("math.exp", x))
    k.b.return_()
    return k.module


def test_ptx_header():
    ptx = emit_ptx(lower(small_module(), OPTIONS), OPTIONS)
    assert ".version 8.0" in ptx and ".target sm_90a" in ptx and ".address_size 64" in ptx
    assert ".visible .entry k(" in ptx and ".maxntid 256, 1, 1" in ptx


@pytest.mark.parametrize("opt_level", [0, 1, 2, 3])
def test_every_opt_level(opt_level):
    options = OPTIONS.with_(opt_level=opt_level)
    ptx = emit_ptx(lower(small_module(), options), options)
    assert ".entry k" in ptx


def test_newer_ptx_version():
    options = OPTIONS.with_(ptx_version="+ptx85")
    assert ".version 8.5" in emit_ptx(lower(small_module(), options), options)


def test_invalid_llvm_ir_is_a_compilation_error():
    with pytest.raises(CompilationError, match="invalid LLVM IR"):
        emit_ptx("define void @f() { ret i32 0 }", OPTIONS)


def test_concurrent_emission():
    results, errors = {}, []

    def work(n):
        try:
            name = f"k{n}"
            results[n] = emit_ptx(lower(small_module(name), OPTIONS), OPTIONS)
        except Exception as e:        # surfaced by the assertion below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert all(f".entry k{n}(" in results[n] for n in range(8))


def test_llvm_version():
    assert re.fullmatch(r"LLVM \d+\.\d+\.\d+ \(llvmlite \S+\)", llvm_version())


def test_importing_the_lower_submodule_keeps_the_lower_function(tmp_path):
    # backend/ loads lazily; importing backend.lower (the submodule) first must not make
    # ``from warpstage.backend import lower`` return the module (ws.compile then failed with
    # "'module' object is not callable")
    import subprocess
    import sys
    code = ("from warpstage.backend.lower import RULES\n"
            "from warpstage.backend import lower\n"
            "print(callable(lower), type(RULES).__name__)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.stdout.split() == ["True", "dict"], r.stderr
