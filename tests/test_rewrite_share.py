"""tests/rewrite_share.py: a test module rewritten into the shared folder is what pytest's pyc
lookup finds for it (the rewritten code, with pytest's assertion helpers), and a module edited
since is not served from there."""
from pathlib import Path

import rewrite_share


def test_a_shared_rewrite_is_found_and_an_edited_module_is_not(tmp_path, monkeypatch,
                                                               pytestconfig):
    from _pytest.assertion import rewrite
    monkeypatch.setattr(rewrite, "_read_pyc", rewrite._read_pyc)    # put back afterwards
    root, folder = tmp_path / "tests", tmp_path / "shared"
    (root / "sub").mkdir(parents=True)
    folder.mkdir()
    src = root / "sub" / "test_x.py"
    src.write_text("def test_a():\n    x = 1\n    assert x == 2\n")
    assert rewrite_share.rewrite_into(pytestconfig, folder, root, [src])
    assert [p.name for p in folder.iterdir()] == ["sub__test_x" + rewrite.PYC_TAIL]
    nowhere = tmp_path / "no-such.pyc"
    co = rewrite._read_pyc(src, nowhere)
    assert co is not None and "@py_builtins" in co.co_names      # the rewritten module
    src.write_text("def test_a():\n    assert 1 == 3\n")
    assert rewrite._read_pyc(src, nowhere) is None                # stale: pytest rewrites it


def test_a_run_of_some_files_rewrites_only_those(pytestconfig, monkeypatch):
    here = Path(__file__).resolve()
    monkeypatch.setattr(pytestconfig, "args", [str(here.parent / "sim")])
    assert rewrite_share._asked_for(here.parent / "sim" / "test_sim_arith.py", pytestconfig)
    assert not rewrite_share._asked_for(here, pytestconfig)
    monkeypatch.setattr(pytestconfig, "args", [f"{here}::test_a_run_of_some_files_rewrites"])
    assert rewrite_share._asked_for(here, pytestconfig)
