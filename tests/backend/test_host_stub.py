"""The launch stub (backend/host_stub.py): its IR is complete and verifies, it compiles for the
host, and its object code can be stored and loaded again (the disk cache's path)."""
import ctypes
import re

import llvmlite.binding as llvm
import pytest

from warpstage.backend import host_stub, host_stub_ir, llvm_c


def test_every_field_of_the_ir_is_filled_and_it_verifies():
    source = host_stub_ir.stub_source()
    assert re.findall(r"\{[a-z_]+\}", source) == []
    module = llvm.parse_assembly(source)
    module.verify()
    assert module.get_function("ws_launch_stub").name == "ws_launch_stub"


def test_layouts_have_distinct_names_and_codes():
    for fields in (host_stub_ir.CTX_FIELDS, host_stub_ir.ENTRY_FIELDS, host_stub_ir.CHECK_FIELDS):
        assert len(set(fields)) == len(fields)
    assert len(set(host_stub_ir.MISS.values())) == len(host_stub_ir.MISS)
    assert 0 not in host_stub_ir.MISS.values()            # 0 would read as "launched" nowhere


def test_compiles_and_its_object_code_loads_again():
    assert host_stub.stub_address() == host_stub.stub_address() != 0
    before = dict(host_stub.COUNTS)
    data = host_stub.compile_object()
    assert data[:4] == b"\x7fELF" and host_stub.COUNTS["compiled"] == before["compiled"] + 1
    stored = []
    code, *addresses = host_stub._load((lambda: None, stored.append))
    assert len(addresses) == 4 and all(addresses)       # stub, call, __getitem__, its word
    assert stored == [data]                              # the same object code, stored
    compiled = host_stub.COUNTS["compiled"]
    code2, *addresses2 = host_stub._load((lambda: stored[0], stored.append))
    assert all(addresses2) and len(stored) == 1           # loaded, not compiled and stored again
    assert host_stub.COUNTS["compiled"] == compiled
    assert set(addresses2).isdisjoint(addresses)          # an engine of its own
    assert host_stub.cache_key_parts()[2] == host_stub_ir.stub_source()


def test_object_code_that_is_not_this_host_s_is_compiled_again():
    stored = []
    compiled = host_stub.COUNTS["compiled"]
    code, *addresses = host_stub._load((lambda: b"not an object file", stored.append))
    assert all(addresses) and len(stored) == 1 and stored[0][:4] == b"\x7fELF"
    assert host_stub.COUNTS["compiled"] == compiled + 1


@pytest.mark.parametrize("binding", [llvm_c.Direct, llvm_c.ThroughLlvmlite])
def test_both_bindings_compile_and_load_a_host_function(binding):
    if binding is llvm_c.Direct and not isinstance(llvm_c.api(), llvm_c.Direct):
        pytest.skip("this llvmlite release is not one llvm_c checked")
    llvm = llvm_c.api() if binding is llvm_c.Direct else llvm_c.ThroughLlvmlite()
    source = ("declare i64 @labs(i64)\n"
              "define i64 @twice_abs(i64 %x) {\n  %a = call i64 @labs(i64 %x)\n"
              "  %b = add i64 %a, %a\n  ret i64 %b\n}\n")
    data = llvm.host_object(source, 2)
    libc = ctypes.CDLL(None)
    code = llvm.load_host_object(data, {"labs": ctypes.cast(libc.labs, ctypes.c_void_p).value})
    fn = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)(code.function("twice_abs"))
    assert fn(-21) == 42 and fn(5) == 10
    with pytest.raises(RuntimeError, match="ELF"):
        llvm.load_host_object(b"garbage", {})
    with pytest.raises(RuntimeError, match="parsing error|expected"):
        llvm.host_object("define i64 @f( {", 2)
