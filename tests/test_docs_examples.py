"""Every ```python block in docs/ (every page, found by walking the folder) and in README.md is
accounted for: the self-contained ones run as written (in the simulator, with numpy), the
others parse.

Each block is preceded by an HTML comment (invisible when the Markdown is rendered):
``<!-- doc-test: run -->`` — written to a file of its own and imported (warpstage reads a
kernel's source, so exec() of a string would not do); the block's own asserts check its result;
a part that needs a GPU sits under ``if ws.get_target() == "cuda":``. ``<!-- doc-test:
fragment -->`` — an excerpt of a larger program (names defined elsewhere): it must parse.
A block with neither is a test failure, so a new example cannot go unchecked."""
import ast
import glob
import os
import re

import pytest

from example_loader import ROOT, load_file

pytestmark = pytest.mark.usefixtures("sim_target")     # the target is reset after each example

_BLOCK = re.compile(r"^(?:<!-- doc-test: (\w+)[^>]*-->\n)?```python\n(.*?)^```", re.S | re.M)


def doc_blocks(path: str) -> list:
    """[(mark or None, code)] of the ```python blocks of ``path`` (relative to ROOT)."""
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return _BLOCK.findall(f.read())


def python_blocks(path: str) -> list:
    return [code for _, code in doc_blocks(path)]


DOCS = ["README.md"] + sorted(os.path.relpath(p, ROOT) for p in glob.glob(
    os.path.join(ROOT, "docs", "**", "*.md"), recursive=True))
"""Discovered, not listed: a page another change adds is checked without editing this file."""
_FENCE = re.compile(r"^[ \t]*(?:```|~~~)[ \t]*(\S*)", re.M)
ALL = [(d, i, mark) for d in DOCS for i, (mark, _) in enumerate(doc_blocks(d))]
RUN = [(d, i) for d, i, mark in ALL if mark == "run"]
FRAGMENTS = [(d, i) for d, i, mark in ALL if mark == "fragment"]


def test_every_python_fence_is_one_this_test_reads():
    """A block fenced ```py, ```python3, ~~~python or indented before its fence would escape the
    checks below (they read ```python blocks at the start of a line): each is an error."""
    odd = []
    for d in DOCS:
        with open(os.path.join(ROOT, d), encoding="utf-8") as f:
            text = f.read()
        for m in _FENCE.finditer(text):
            lang = m.group(1).lower()
            if lang.startswith("py") and m.group(0) != "```python":
                odd.append(f"{d}:{text[:m.start()].count(chr(10)) + 1}: {m.group(0).strip()}")
    assert not odd, f"write these fences as ```python at the line start: {odd}"


def test_the_pages_are_discovered():
    found = {os.path.relpath(os.path.join(dp, n), ROOT) for dp, _, names in
             os.walk(os.path.join(ROOT, "docs")) for n in names if n.endswith(".md")}
    assert found and found <= set(DOCS)
    assert "docs/binding-time.md" in DOCS and "README.md" in DOCS


def test_every_block_is_marked_run_or_fragment():
    unmarked = [f"{d}[{i}]" for d, i, mark in ALL if mark not in ("run", "fragment")]
    assert not unmarked, f"mark these blocks <!-- doc-test: run --> or fragment: {unmarked}"
    assert len(RUN) >= 5


@pytest.mark.parametrize("doc, index", RUN, ids=[f"{d}[{i}]" for d, i in RUN])
def test_doc_example_runs(doc, index, tmp_path):
    code = python_blocks(doc)[index]
    if "ml_dtypes" in code:
        pytest.importorskip("ml_dtypes")
    path = tmp_path / f"doc_example_{index}.py"
    path.write_text(code, encoding="utf-8")
    load_file(path, f"doc_{os.path.basename(doc).replace('.', '_')}_{index}")


@pytest.mark.parametrize("doc, index", FRAGMENTS, ids=[f"{d}[{i}]" for d, i in FRAGMENTS])
def test_doc_fragment_parses(doc, index):
    ast.parse(python_blocks(doc)[index])


def test_value_protocol_example_fails_on_a_wrong_result(tmp_path):
    """The check inside the value-protocol block can fail: with one more step, it does."""
    (code,) = [c for c in python_blocks("docs/binding-time.md") if "__new_from_values__" in c]
    assert code.count("advance[1, 1](out, 7)") == 1
    path = tmp_path / "doc_protocol_wrong.py"
    path.write_text(code.replace("advance[1, 1](out, 7)", "advance[1, 1](out, 8)"), encoding="utf-8")
    with pytest.raises(AssertionError):
        load_file(path, "doc_protocol_wrong")


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
