"""The printer's inverse: ``parse(text) -> Module`` for the text ``print_module`` writes.

    m = parse(print_module(module))
    assert print_module(m) == print_module(module)

The grammar, one construct per line (``ir/printer.py`` writes exactly this)::

    module   := function ("\\n\\n" function)*
    function := ("kernel" | "func") "@" NAME "(" params ")" ["->" "(" types ")"]
                ["attributes" "{" attrs "}"] "{" op* "}"
    op       := [values "="] NAME [values] ["{" attrs "}"] [":" types] [loc] [" {" region* "}"]
    region   := ["^(" params "):"] op*              regions are separated by "} {"
    attr     := NAME "=" (int | float | "true" | "false" | string | "[" attr-values "]")
    loc      := 'loc("FILE":LINE)'

Operand types are those of the values named (an op without results prints its operands' types,
which the parser checks). A function's ``param_names`` attribute is not printed, so it is not
restored. Errors raise ``IRParseError`` with the line number, the line and what was expected.
"""
from __future__ import annotations

import re
from typing import Optional

from .core import Block, Function, Location, Module, Operation, Region
from .types import Type, parse_type

__all__ = ["parse", "IRParseError"]


class IRParseError(ValueError):
    """The text is not IR as the printer writes it."""


_NAME = re.compile(r"[A-Za-z_][\w.]*")
_VALUE = re.compile(r"%\d+")
_OPERANDS = re.compile(r" (%\d+(?:, %\d+)*)")
_LOC = re.compile(r' ?loc\("([^"]*)":(\d+)\)$')
_FUNC = re.compile(r"^(kernel|func) @([\w.$]+)\((.*?)\)(?: -> \((.*?)\))?(?: attributes \{(.*)\})? \{$")


def parse(text: str) -> Module:
    """The Module that ``text`` (as ``print_module`` writes it) describes."""
    return _Parser(text).module()


def _split_top(text: str, sep: str = ",") -> list:
    """``text`` split at ``sep`` outside <>, [], () and string literals; pieces stripped."""
    if not any(c in text for c in '<[("'):
        return [p.strip() for p in text.split(sep)] if text.strip() else []
    out, depth, start, i, n = [], 0, 0, 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            i = _string_end(text, i)
            continue
        if c in "<[(":
            depth += 1
        elif c in ">])":
            depth -= 1
        elif c == sep and depth == 0:
            out.append(text[start:i].strip())
            start = i + 1
        i += 1
    last = text[start:].strip()
    if last or out:
        out.append(last)
    return out


def _string_end(text: str, i: int) -> int:
    """The index after the string literal that starts at ``text[i] == '"'``."""
    i += 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == '"':
            return i + 1
        i += 1
    raise ValueError("unterminated string")


_TYPES: dict = {}


def _type(text: str) -> Type:
    t = _TYPES.get(text)
    if t is None:
        t = _TYPES[text] = parse_type(text)
    return t


def _attr_value(text: str):
    if text.startswith('"') and text.endswith('"') and len(text) >= 2:
        return text[1:-1].encode("ascii").decode("unicode_escape")
    if text == "true":
        return True
    if text == "false":
        return False
    if text.startswith("[") and text.endswith("]"):
        return tuple(_attr_value(t) for t in _split_top(text[1:-1]))
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"not an attribute value: {text!r}") from None


def _attrs(text: str) -> dict:
    out = {}
    for item in _split_top(text):
        key, eq, value = item.partition(" = ")
        if not eq or not _NAME.fullmatch(key):
            raise ValueError(f"expected 'name = value', got {item!r}")
        out[key] = _attr_value(value)
    return out


class _Parser:
    def __init__(self, text: str):
        self.lines = text.split("\n")
        self.i = 0
        self.values: dict = {}

    # -- errors, lines ----------------------------------------------------------------------------
    def fail(self, expected: str, line: Optional[int] = None):
        k = self.i if line is None else line
        got = self.lines[k] if k < len(self.lines) else "the end of the text"
        raise IRParseError(f"line {k + 1}: expected {expected}, got {got!r}")

    def next_line(self) -> Optional[str]:
        while self.i < len(self.lines) and not self.lines[self.i].strip():
            self.i += 1
        return self.lines[self.i] if self.i < len(self.lines) else None

    # -- module, function -----------------------------------------------------------------------
    def module(self) -> Module:
        m = Module()
        while self.next_line() is not None:
            fn = self.function()
            if m.get(fn.name) is not None:
                self.fail(f"a function name not used before ({fn.name!r} is)", self.i - 1)
            m.add(fn)
        return m

    def function(self) -> Function:
        line = self.next_line()
        head = _FUNC.match(line)
        if head is None:
            self.fail("'kernel @name(...) {' or 'func @name(...) {'")
        kind, name, params, results, attrs = head.groups()
        self.values = {}
        try:
            names, types = self.params(params)
            fn = Function(name, types, [parse_type(t) for t in _split_top(results or "")],
                          is_kernel=kind == "kernel", attrs=_attrs(attrs) if attrs else {})
        except ValueError as e:
            self.fail(f"a function header ({e})")
        for n, v in zip(names, fn.args):
            self.values[n] = v
        self.i += 1
        self.block_ops(fn.body.block, 1, closers=("}",))
        return fn

    def params(self, text: str):
        names, types = [], []
        for item in _split_top(text):
            name, colon, t = item.partition(": ")
            if not colon or not _VALUE.fullmatch(name):
                raise ValueError(f"expected '%N: type', got {item!r}")
            names.append(name)
            types.append(parse_type(t))
        return names, types

    # -- blocks, ops ------------------------------------------------------------------------------
    def block_ops(self, block: Block, depth: int, closers) -> str:
        """Parse ops into ``block`` until a line (at depth - 1) that starts with one of
        ``closers``; consume it and return its text (stripped)."""
        ind = "  " * depth
        outer = "  " * (depth - 1)
        while True:
            line = self.next_line()
            if line is None:
                self.fail(f"'{outer}}}' closing the block")
            if not line.startswith(ind) and line.startswith(outer) and \
                    line[len(outer):].startswith(closers):
                self.i += 1
                return line[len(outer):]
            if not line.startswith(ind) or line[len(ind)] == " ":
                self.fail(f"an op indented by {len(ind)} spaces")
            self.i += 1
            block.append(self.op(line[len(ind):], depth))

    def op(self, text: str, depth: int) -> Operation:
        line_no = self.i - 1
        has_regions = text.endswith(" {")
        loc = None
        if has_regions:
            text = text[:-2]
        elif text.endswith(")") and " loc(" in text:
            m = _LOC.search(text)
            if m is not None:
                text, loc = text[:m.start()], Location(m.group(1), int(m.group(2)))
        try:
            op = self._op(text, depth, has_regions)
        except IRParseError:
            raise
        except ValueError as e:
            self.fail(f"an op ({e})", line_no)
        if loc is not None:
            op.loc = loc
        return op

    def _op(self, text: str, depth: int, has_regions: bool) -> Operation:
        results: list = []
        if text.startswith("%"):
            lhs, eq, text = text.partition(" = ")
            if not eq:
                raise ValueError("'%N, ... = ' before the op name")
            results = [r.strip() for r in lhs.split(",")]
        m = _NAME.match(text)
        if m is None:
            raise ValueError("an op name")
        name, rest = m.group(0), text[m.end():]
        operands = []
        om = _OPERANDS.match(rest)
        if om:
            values = self.values
            for ref in om.group(1).split(", "):
                v = values.get(ref)
                if v is None:
                    raise ValueError(f"{ref} used before it is defined")
                operands.append(v)
            rest = rest[om.end():]
        attrs = {}
        if rest.startswith(" {"):
            end = self._brace_end(rest, 1)
            attrs = _attrs(rest[2:end])
            rest = rest[end + 1:]
        types: list = []
        if rest.startswith(" : "):
            types = [_type(t) for t in _split_top(rest[3:])]
            rest = ""
        if rest:
            raise ValueError(f"unexpected {rest!r}")
        if results and len(types) != len(results):
            raise ValueError(f"{len(results)} results but {len(types)} result types")
        if not results and types and [v.type for v in operands] != types:
            raise ValueError("operand types that match the operands' definitions")
        op = Operation(name, operands, types if results else (), attrs)
        if has_regions:
            self.regions(op, depth)
        for ref, v in zip(results, op.results):
            self.values[ref] = v
        return op

    def _brace_end(self, text: str, start: int) -> int:
        end = text.find("}", start)
        if end >= 0 and '"' not in text[start:end]:
            return end                  # no string value: the first '}' closes the attributes
        depth, i = 0, start
        while i < len(text):
            c = text[i]
            if c == '"':
                i = _string_end(text, i)
                continue
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    return i
            i += 1
        raise ValueError("a closing '}' for the attributes")

    def regions(self, op: Operation, depth: int) -> None:
        while True:
            region = Region()
            line = self.next_line()
            if line is not None and line.startswith("  " * depth + "^("):
                text = line[len("  " * depth):]
                if not text.endswith("):"):
                    self.fail("'^(%N: type, ...):'")
                names, types = self.params(text[2:-2])
                for n, t in zip(names, types):
                    self.values[n] = region.block.add_arg(t)
                self.i += 1
            region.parent = op
            op.regions.append(region)
            closer = self.block_ops(region.block, depth + 1, closers=("} {", "}"))
            if closer == "} {":
                continue
            if closer != "}":
                op.loc = self._loc(closer[1:])
            return

    @staticmethod
    def _loc(text: str) -> Optional[Location]:
        m = _LOC.match(text)
        if m is None or m.start() != 0:
            raise IRParseError(f"expected a location 'loc(\"file\":line)', got {text!r}")
        return Location(m.group(1), int(m.group(2)))
