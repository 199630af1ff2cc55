"""Pass 1 of the control-flow rewrite (and the AST helpers both passes use), applied to each
function scope; pass 2 is in rewrite_regions.py.

Pass 1 (``Flags``) removes ``break``, ``continue`` and — when a ``return`` sits inside a compound
statement — ``return``: each becomes an assignment to a flag (``__ws_brk_N``, ``__ws_cont_N``,
``__ws_ret`` with the value in ``__ws_retval``), and the statements after it in its block are
wrapped in ``if __ws_cf__.not_any(flags...):`` guards. The function then ends with
``return __ws_cf__.result(...)``. Loops get the flags that end them (``Site.stop``); a loop's
``else`` becomes a guarded ``if`` after it.

Pass 2 (``Regions``) turns each ``if``/``for``/``while`` into nested functions (the regions, which
declare the variables they assign ``nonlocal``), a getter and a setter of those variables, and a
call into ``control_flow``; ternaries, ``and``/``or``/``not``, chained comparisons, ``assert`` and
calls of ``min``/``max`` become calls too. Every variable a region assigns is bound at the top of
the function to ``Unbound(name)`` so ``nonlocal`` always has a binding.
"""
from __future__ import annotations

import ast
from typing import Callable, Optional

from ..errors import UnsupportedError
from ..core.source import format_location

CF = "__ws_cf__"
INFO = "__ws_info__"
RET, RETVAL = "__ws_ret", "__ws_retval"
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_COMPS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_LOOPS = (ast.For, ast.While, ast.AsyncFor)


def cf_attr(name: str) -> ast.expr:
    return ast.Attribute(value=ast.Name(CF, ast.Load()), attr=name, ctx=ast.Load())


def fix_locations(node: ast.AST, at: Optional[tuple] = None) -> ast.AST:
    """Give every node the rewriter made without a position the *first line* of its nearest
    positioned ancestor (``ast.fix_missing_locations`` gives it the ancestor's whole extent);
    ``at``: the position an unpositioned ``node`` itself takes (the first line of the positioned
    node it will be placed under), else (1, 0, 1, 0).
    It matters for the generated ``__ws_cf__.f(...)`` calls: CPython puts a method call's CALL
    on the line where its attribute ends, and the attribute of a call made for a compound
    statement (``for``, ``while``, ``if``) would otherwise end on the statement's last line, so
    an error raised under that call (a tensor's ``__iter__`` in ``for v in x``, ``__bool__`` in
    ``if x:``) would name a line of the body instead of the statement's header."""
    todo = [(node, _first_line(node) if getattr(node, "lineno", None) is not None
             else at or (1, 0, 1, 0))]
    while todo:                     # depth first, children in order: the recursion's order
        n, pos = todo.pop()
        if "lineno" in n._attributes:
            if getattr(n, "lineno", None) is None:
                n.lineno, n.col_offset, n.end_lineno, n.end_col_offset = pos
            else:
                pos = _first_line(n)
        todo.extend((child, pos) for child in reversed(child_nodes(n)))
    return node


def at_header(new: ast.AST, node: ast.AST) -> ast.AST:
    """``new`` placed on ``node``'s first line (its header if ``node`` is a compound statement):
    the position of a call the rewriter makes for ``node`` (see :func:`fix_locations`)."""
    new.lineno, new.col_offset, new.end_lineno, new.end_col_offset = _first_line(node)
    return new


def _first_line(n: ast.AST) -> tuple:
    """(line, col, end line, end col) of ``n`` cut to its first line: all of it if it fits on
    one line, else its header (a ``for``'s ``for x in it``, an ``if``'s/``while``'s test) if
    that ends there, else only its start."""
    line, col = n.lineno, n.col_offset
    for end in (n, getattr(n, "iter", None), getattr(n, "test", None)):
        if isinstance(end, ast.AST) and getattr(end, "end_lineno", None) == line:
            return line, col, line, end.end_col_offset
    return line, col, line, col


def call(func: ast.expr, args, keywords=()) -> ast.Call:
    return ast.Call(func=func, args=list(args), keywords=list(keywords))


def name(n: str, store=False) -> ast.Name:
    return ast.Name(n, ast.Store() if store else ast.Load())


def assign(n: str, value: ast.expr, like: ast.AST) -> ast.Assign:
    node = ast.copy_location(ast.Assign(targets=[name(n, True)], value=value), like)
    return fix_locations(node)


def no_args() -> ast.arguments:
    return ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[],
                         kwarg=None, defaults=[])


def lambda_(body: ast.expr) -> ast.Lambda:
    return ast.copy_location(ast.Lambda(args=no_args(), body=body), body)


def child_nodes(node: ast.AST) -> list:
    """``ast.iter_child_nodes(node)`` as a list, less the expression contexts (``Load``,
    ``Store``, ``Del``: a marker of their parent, never a position or a binding)."""
    out = []
    for field in node._fields:
        value = getattr(node, field, None)
        if isinstance(value, ast.AST):
            if not isinstance(value, ast.expr_context):
                out.append(value)
        elif isinstance(value, list):
            out.extend(v for v in value if isinstance(v, ast.AST))
    return out


def local_nodes(nodes):
    """The nodes of ``nodes`` in this function scope, depth first in source order (expression
    contexts left out: ``child_nodes``): nested functions, lambdas, classes and comprehensions
    are not entered (a comprehension's walrus targets are yielded). One generator and a stack
    of iterators, not one generator per level (a ``yield from`` chain passes every node
    through each enclosing level: the rewrite's largest cost on a deep kernel)."""
    stack = [iter(nodes)]
    while stack:
        node = next(stack[-1], None)
        if node is None:
            stack.pop()
            continue
        yield node
        if isinstance(node, _SCOPES):
            continue
        if isinstance(node, _COMPS):
            yield from (n for n in ast.walk(node) if isinstance(n, ast.NamedExpr))
        else:
            stack.append(iter(child_nodes(node)))


def bound_names(nodes) -> list:
    """Names bound by ``nodes`` in this function scope, in first-binding order. (``except E as
    e`` is left out: Python deletes ``e`` when its handler ends, so it never outlives a region.)"""
    out: dict = {}
    for n in local_nodes(nodes):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            out.setdefault(n.id)
        elif isinstance(n, ast.NamedExpr):
            out.setdefault(n.target.id)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.setdefault(n.name)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            for a in n.names:
                out.setdefault(a.asname or a.name.split(".")[0])
        elif isinstance(n, (ast.MatchAs, ast.MatchStar)) and n.name:
            out.setdefault(n.name)
        elif isinstance(n, ast.MatchMapping) and n.rest:
            out.setdefault(n.rest)
    return list(out)


def last_lines(nodes) -> dict:
    """{name: the line of its last binding in ``nodes``}, in one walk (a lookup per name of
    each construct made rewriting a deeply nested function quadratic)."""
    out: dict = {}
    for node in local_nodes(nodes):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            n = node.id
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            n = node.name
        else:
            continue
        line = getattr(node, "lineno", 0)
        if line > out.get(n, 0):
            out[n] = line
    return out


_RETURN, _BREAK, _CONTINUE = 1, 2, 4
_END_BITS = {ast.Return: _RETURN, ast.Break: _BREAK, ast.Continue: _CONTINUE}


def _ends(body: list) -> dict:
    """{id(node): bits} for every node of ``body`` (statements) in this function scope: _RETURN
    where a ``return`` is at or under it, _BREAK / _CONTINUE where a ``break`` / ``continue``
    is at or under it outside the bodies of nested loops (one that ends the loop around the
    node, not a nested one); what ``local_nodes`` walks (nested scopes and comprehensions hold
    none). One walk of the body, children before their parent, so that pass 1 does not walk a
    statement's subtree again at each level of nesting above it."""
    bits: dict = {}
    stack = [(n, False) for n in reversed(body)]
    while stack:
        node, done = stack.pop()
        if isinstance(node, (_SCOPES, _COMPS)):
            bits[id(node)] = 0
        elif not done:
            stack.append((node, True))
            stack.extend((c, False) for c in reversed(child_nodes(node)))
        else:
            b = _END_BITS.get(type(node), 0)
            if isinstance(node, _LOOPS):
                for c in child_nodes(node):
                    b |= bits[id(c)] & _RETURN
                for c in node.orelse:
                    b |= bits[id(c)]
            else:
                for c in child_nodes(node):
                    b |= bits[id(c)]
            bits[id(node)] = b
    return bits


RewriteError = UnsupportedError
"""A construct the rewriter cannot handle, with its location: the public UnsupportedError itself
(a subclass here would show its internal module path, warpstage.frontend..., in tracebacks)."""


def unsupported(node: ast.AST, file: str, what: str, fix: str) -> RewriteError:
    from ..ir import Location
    loc = Location(file, getattr(node, "lineno", 0), getattr(node, "col_offset", 0))
    return RewriteError(f"{what}\n{format_location(loc, loc.col)}\nFix: {fix}", where=str(loc))


# -- pass 1: break / continue / return -> flags -----------------------------------------------

class _LoopFlags:
    def __init__(self, brk: Optional[str], cont: Optional[str]):
        self.brk = brk
        self.cont = cont


class Flags:
    """Pass 1 over one function body (see the module docstring)."""

    def __init__(self, body: list, new_id: Callable[[], int]):
        self.new_id = new_id
        self.ends = _ends(body)
        self.returns = any(self.ends[id(s)] & _RETURN for s in body
                           if not isinstance(s, ast.Return))

    def _any(self, stmts: list, bit: int) -> bool:
        """Whether one of ``stmts`` (statements of the body as parsed) holds ``bit``."""
        ends = self.ends
        return any(ends[id(s)] & bit for s in stmts)

    def run(self, body: list) -> list:
        return self.block(body, None)

    def block(self, stmts: list, loop: Optional[_LoopFlags]) -> list:
        out: list = []
        for i, s in enumerate(stmts):
            if isinstance(s, ast.Return) and self.returns:
                value = s.value if s.value is not None else ast.Constant(None)
                value = ast.copy_location(call(cf_attr("returned"), [value]), s)
                out += [assign(RETVAL, value, s), assign(RET, ast.Constant(True), s)]
                return out
            if isinstance(s, ast.Break) and loop is not None:
                return out + [assign(loop.brk, ast.Constant(True), s)]
            if isinstance(s, ast.Continue) and loop is not None:
                return out + [assign(loop.cont, ast.Constant(True), s)]
            flags = self.may_set(s, loop)
            out.extend(self.compound(s, loop))
            if flags:
                rest = self.block(stmts[i + 1:], loop)
                if rest:
                    out.append(self.guard(flags, rest))
                return out
        return out

    def may_set(self, s: ast.stmt, loop: Optional[_LoopFlags]) -> list:
        flags = []
        bits = self.ends[id(s)]
        if self.returns and bits & _RETURN:
            flags.append(RET)
        if loop is not None:
            if bits & _BREAK:
                flags.append(loop.brk)
            if bits & _CONTINUE:
                flags.append(loop.cont)
        return flags

    def guard(self, flags: list, rest: list) -> ast.If:
        node = ast.copy_location(ast.If(test=call(cf_attr("not_any"), [name(f) for f in flags]),
                                        body=rest, orelse=[]), rest[0])
        fix_locations(node.test, _first_line(node))    # the rest is positioned already
        node._ws_refine = tuple(flags)
        node._ws_refine_else = tuple(flags) if len(flags) == 1 else ()
        return node

    def compound(self, s: ast.stmt, loop: Optional[_LoopFlags]) -> list:
        if isinstance(s, ast.If):
            s.body = self.block(s.body, loop) or [ast.copy_location(ast.Pass(), s)]
            s.orelse = self.block(s.orelse, loop)
        elif isinstance(s, (ast.With, ast.AsyncWith)):
            s.body = self.block(s.body, loop) or [ast.copy_location(ast.Pass(), s)]
        elif isinstance(s, ast.Try) or type(s).__name__ == "TryStar":
            s.body = self.block(s.body, loop) or [ast.copy_location(ast.Pass(), s)]
            for h in s.handlers:
                h.body = self.block(h.body, loop) or [ast.copy_location(ast.Pass(), h)]
            s.orelse = self.block(s.orelse, loop)
            s.finalbody = self.block(s.finalbody, loop)
        elif isinstance(s, ast.Match):
            for case in s.cases:
                case.body = self.block(case.body, loop) or [ast.copy_location(ast.Pass(), s)]
        elif isinstance(s, (ast.For, ast.While)):
            return self.loop(s, loop)
        return [s]

    def loop(self, s, outer: Optional[_LoopFlags]) -> list:
        k = self.new_id()
        inner = _LoopFlags(f"__ws_brk_{k}" if self._any(s.body, _BREAK) else None,
                           f"__ws_cont_{k}" if self._any(s.body, _CONTINUE) else None)
        has_ret = self.returns and self._any(s.body, _RETURN)
        body = self.block(s.body, inner)
        if inner.cont:
            body.insert(0, assign(inner.cont, ast.Constant(False), s))
        s.body = body or [ast.copy_location(ast.Pass(), s)]
        ends = [f for f in (inner.brk,) if f]
        if has_ret:
            ends.append(RET)
        s._ws_stop = tuple(ends)
        out = [assign(inner.brk, ast.Constant(False), s)] if inner.brk else []
        out.append(s)
        orelse, s.orelse = s.orelse, []
        if orelse:
            lowered = self.block(orelse, outer)
            if ends and lowered:
                out.append(self.guard(ends, lowered))
            else:
                out.extend(lowered)
        return out

