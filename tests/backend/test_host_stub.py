"""The launch stub (backend/host_stub.py): its IR is complete and verifies, it compiles for the
host, and its object code can be stored and loaded again (the disk cache's path)."""
import re

import llvmlite.binding as llvm

from warpstage.backend import host_stub, host_stub_ir


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
    stored = []
    engine, *addresses = host_stub._build((lambda: None, stored.append))
    assert len(addresses) == 4 and all(addresses)       # stub, call, __getitem__, its word
    assert len(stored) == 1 and stored[0][:4] == b"\x7fELF"
    loaded = []
    engine2, *addresses2 = host_stub._build((lambda: stored[0], loaded.append))
    assert all(addresses2) and not loaded                 # loaded, not compiled and stored again
    assert host_stub.cache_key_parts()[1] == host_stub_ir.stub_source()
