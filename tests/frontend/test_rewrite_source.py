"""Reading a kernel's source (frontend/rewrite.py ``_source``/``_parse``): the definition's lines
come from linecache and end at the last line the code's positions name, with inspect.getblock
(tokenize) as the fallback where that extent does not parse; both give the same AST."""
import ast
import inspect

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
    lines, _ = rewrite._source(only_a_docstring)
    assert len(lines) == 1                          # the def line alone: does not parse
    node = rewrite._parse(only_a_docstring)
    assert isinstance(node, ast.FunctionDef) and node.name == "only_a_docstring"
    assert ast.get_docstring(node).startswith("Nothing runs here")


def test_both_ways_give_the_same_tree():
    for fn in (ends_in_a_multi_line_call, decorated.__func__, only_a_docstring, nested):
        fast = ast.dump(rewrite._parse(fn), include_attributes=True)
        slow = ast.dump(rewrite._parse(fn, tokenize=True), include_attributes=True)
        assert fast == slow, fn.__name__
