"""Reading a kernel's source (frontend/rewrite.py ``_source``/``_parse``): the definition's lines
come from linecache and end at the last line the code's positions name, with inspect.getblock
(tokenize) as the fallback where that extent does not parse; both give the same AST."""
import ast
import inspect

import pytest

from warpstage.frontend import rewrite


def ends_in_a_multi_line_call(a, b):
    x = a + b
    return max(
        x,
        b,
    )


@staticmethod
def decorated(a):
    if a:
        return [
            a
            for _ in range(2)
        ]
    return a


def only_a_docstring():
    """Nothing runs here: the code's positions stop at the def line."""


def nested(a):
    def inner(b):
        return (b +
                1)
    return inner(a)


def test_the_extent_from_positions_covers_the_whole_definition():
    for fn in (ends_in_a_multi_line_call, decorated.__func__, nested):
        lines, first = rewrite._source(fn)
        want, want_first = inspect.getsourcelines(fn)
        assert (lines, first) == (want, want_first), fn.__name__


def test_a_definition_the_extent_cuts_short_falls_back_to_tokenizing():
    lines, _ = rewrite._source(only_a_docstring)    # the positions stop at the def line; the
    assert len(lines) == 2                          # body goes on, so the tokenizer's block
    assert len(rewrite._source(only_a_docstring, tokenize=True)[0]) == 2
    node = rewrite._parse(only_a_docstring)
    assert isinstance(node, ast.FunctionDef) and node.name == "only_a_docstring"
    assert ast.get_docstring(node).startswith("Nothing runs here")


def test_both_ways_give_the_same_tree():
    for fn in (ends_in_a_multi_line_call, decorated.__func__, only_a_docstring, nested):
        fast = ast.dump(rewrite._parse(fn), include_attributes=True)
        slow = ast.dump(rewrite._parse(fn, tokenize=True), include_attributes=True)
        assert fast == slow, fn.__name__


def test_the_parsed_positions_are_the_files():
    """_parse gives each node the line and column it has in the whole file's tree (the text is
    parsed behind blank lines, an indented method behind an ``if 1:``)."""
    import sys
    tree = ast.parse(open(__file__).read())
    defs = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    for fn in (ends_in_a_multi_line_call, decorated.__func__, only_a_docstring, nested,
               sys.modules[__name__].Holder.method):
        node = rewrite._parse(fn)
        node.decorator_list = defs[fn.__name__].decorator_list = []
        assert (ast.dump(node, include_attributes=True)
                == ast.dump(defs[fn.__name__], include_attributes=True)), fn.__name__


class Holder:
    def method(self, a):
        return a.b(
            1)


IMPORTING = '''import math
from os import path as osp


def prog(a):
    return math.floor(a) + len(osp.join("a", "b"))
'''


def test_the_loaded_code_check_compares_bytecode_for_imported_names(tmp_path, monkeypatch):
    """``math.floor(a)`` compiles to an attribute load and a call where ``math`` is imported at
    the module's top (CPython 3.11+), to a method call where it is not: the check compiles the
    definition beside imports of the names it reads from other modules, so the bytecode matches
    without the disassembled comparison; an edited file is still found."""
    from example_loader import load_file
    from warpstage.errors import UnsupportedError
    from warpstage.frontend import rewrite_reads
    path = tmp_path / "importing_prog.py"
    path.write_text(IMPORTING)
    mod = load_file(path, path.stem)
    assert set(rewrite_reads._imported_names(mod.prog)) == {"math", "osp"}

    def no_disassembly(code):
        raise AssertionError("disassembled")
    monkeypatch.setattr(rewrite_reads, "_ops", no_disassembly)
    rewrite_reads.check_source(mod.prog, rewrite._parse(mod.prog))
    monkeypatch.undo()
    path.write_text(IMPORTING.replace("math.floor(a)", "math.floor(a + 1)"))
    with pytest.raises(UnsupportedError, match="changed since it was imported"):
        rewrite_reads.check_source(mod.prog, rewrite._parse(mod.prog))


DEAD_TAIL = '''import warpstage.lang.control as ws


def prog(a, b):
    z = b
    if (not a or not 0):
        return (z + 4) % 251
    y = (z + 3) % 251
    return (7 + y) % 251
'''

DEAD_TAIL_ONLY_CONSTANT = '''import warpstage.lang.control as ws


def prog(a, b):
    x = 0
    z = b
    if (not 0 or (5 <= 5 or 4 >= z)):
        return 6 % 251
    t1 = z % 251
    return (t1 and t1) % 251
'''


def test_dead_code_after_a_constant_true_return_is_read_and_traced(tmp_path):
    """The compiler drops the statements after an `if` whose condition is constant-true, so
    the code's positions end before them; the extent must still reach the end of the body.
    Cut there, the first program traced without its tail (its `not a or True` is dynamic in
    the trace: "returns a value on some paths but reaches its end without return"), and the
    second failed the loaded-code check ("changed since it was imported"). Both came from
    benchmarks/diff_programs.py (seeds 810141 #13 and 810109 #13)."""
    import sys
    sys.path.insert(0, str(tmp_path))
    from cf_harness import run_sim, trace
    from example_loader import load_file
    from warpstage import ir
    for i, src in enumerate((DEAD_TAIL, DEAD_TAIL_ONLY_CONSTANT)):
        path = tmp_path / f"dead_tail_{i}.py"
        path.write_text(src)
        mod = load_file(path, path.stem)
        lines, first = rewrite._source(mod.prog)
        assert "return" in lines[-1] and lines[-1].strip().startswith("return (")
        module, _ = trace(mod.prog, "i32", "i32", store=ir.i32)
        for a, b in ((0, 3), (5, -2)):
            assert run_sim(mod.prog, (a, b), (), "i32", module=module) == mod.prog(a, b)
