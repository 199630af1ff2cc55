"""The documentation's self-contained examples run as written (in the simulator, with numpy).

Each listed ```python block is written to a file of its own and imported (warpstage reads a
kernel's source, so exec() of a string would not do); the block's own asserts check its result."""
import os
import re

import pytest

from example_loader import ROOT, load_file

pytestmark = pytest.mark.usefixtures("sim_target")     # the target is reset after each example

# (doc, index of the ```python block in it)
EXAMPLES = [("docs/tma.md", 0), ("docs/layouts.md", 2)]


def python_blocks(path: str) -> list:
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return re.findall(r"^```python\n(.*?)^```", f.read(), flags=re.S | re.M)


@pytest.mark.parametrize("doc, index", EXAMPLES, ids=[f"{d}[{i}]" for d, i in EXAMPLES])
def test_doc_example_runs(doc, index, tmp_path):
    if "ml_dtypes" in python_blocks(doc)[index]:
        pytest.importorskip("ml_dtypes")
    path = tmp_path / f"doc_example_{index}.py"
    path.write_text(python_blocks(doc)[index], encoding="utf-8")
    mod = load_file(path, f"doc_{os.path.basename(doc).replace('.', '_')}_{index}")
    assert mod.out.shape == mod.x.shape            # the example defines its output


def test_tma_doc_example_fails_on_a_wrong_result(tmp_path):
    """The check inside the docs/tma.md block can fail: with the factor changed, it does."""
    pytest.importorskip("ml_dtypes")
    code = python_blocks("docs/tma.md")[0]
    assert code.count("* 2.0   # logical") == 1
    code = code.replace("* 2.0   # logical", "* 3.0   # logical")
    path = tmp_path / "doc_example_wrong.py"
    path.write_text(code, encoding="utf-8")
    with pytest.raises(AssertionError):
        load_file(path, "doc_tma_wrong")
