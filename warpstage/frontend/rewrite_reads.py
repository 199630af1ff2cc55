"""Two parts of the rewrite that concern what traced code reads from the host.

``HostReads`` (run after the region passes, so their syntactic patterns see the source as
written) turns, in traced code:

- each attribute read ``x.name`` into ``__ws_cf__.read_attr(x, "name")``, which records the fact
  for the specialization's guards (facts.py), and each ``getattr(x, name[, default])`` into
  ``__ws_cf__.read_attr(x, name[, default])``, the same fact for the name read while tracing;
- each subscript read ``x[i]`` into ``__ws_cf__.read_item(x, i, "x")``: a dict or numpy array
  indexed by a dynamic value is an error naming ``x`` (host_checks.py);
- each ``print(...)`` call into ``__ws_cf__.call_print(print, ...)`` and each f-string field
  ``{v}`` into ``{__ws_cf__.format_value(v)}``: a dynamic value there is an error pointing to
  ``ws.printf`` instead of a placeholder printed once while compiling.

``check_source`` checks that the source about to be rewritten is the code that runs.
"""
from __future__ import annotations

import __future__
import ast
import dis
import sys
import types

from ..errors import UnsupportedError
from .rewrite_passes import CF, INFO, cf_attr

__all__ = ["HostReads", "check_source"]

_FUTURE_FLAGS = 0
for _f in __future__.all_feature_names:
    _FUTURE_FLAGS |= getattr(__future__, _f).compiler_flag


class HostReads(ast.NodeTransformer):
    """See the module docstring."""

    def visit_Attribute(self, node):
        self.generic_visit(node)
        if not isinstance(node.ctx, ast.Load) or (
                isinstance(node.value, ast.Name) and node.value.id in (CF, INFO)):
            return node
        new = ast.Call(func=cf_attr("read_attr"), args=[node.value, ast.Constant(node.attr)],
                       keywords=[])
        return ast.copy_location(new, node)

    def visit_Subscript(self, node):
        self.generic_visit(node)
        if not isinstance(node.ctx, ast.Load) or isinstance(node.slice, ast.Slice):
            return node
        new = ast.Call(func=cf_attr("read_item"),
                       args=[node.value, node.slice, ast.Constant(_text(node.value))], keywords=[])
        return ast.copy_location(new, node)

    def visit_Call(self, node):
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id == "getattr" and \
                2 <= len(node.args) <= 3 and not node.keywords and \
                not any(isinstance(a, ast.Starred) for a in node.args):
            new = ast.Call(func=cf_attr("read_attr"), args=node.args, keywords=[])
            return ast.copy_location(new, node)     # the same fact as `x.name`
        if isinstance(node.func, ast.Name) and node.func.id == "print":
            new = ast.Call(func=cf_attr("call_print"), args=[node.func] + node.args,
                           keywords=node.keywords)
            return ast.copy_location(new, node)
        return node

    def visit_FormattedValue(self, node):
        self.generic_visit(node)
        node.value = ast.copy_location(ast.Call(func=cf_attr("format_value"),
                                                args=[node.value], keywords=[]), node.value)
        return node


def _text(node) -> str:
    try:
        return ast.unparse(node)
    except Exception:       # a node the rewrite made: no source text
        return "the value"


def _const_code(code, name: str):
    for c in code.co_consts:
        if isinstance(c, types.CodeType) and c.co_name == name:
            return c
    raise UnsupportedError(f"no code object {name}")


_PLAIN_LOADERS = frozenset({"SourceFileLoader", "SourcelessFileLoader", "NoneType"})


def check_source(fn, node) -> None:
    """The source about to be rewritten must be the source of the code that runs: a kernel file
    edited after import would otherwise be traced as the new text but keyed (memory and disk) by
    the loaded code. Compiles the parsed ``def`` unrewritten (inside a factory giving it the same
    free variables) and compares it with ``fn.__code__``."""
    code = fn.__code__
    if "__class__" in code.co_freevars:
        return          # zero-argument super(): its cell cannot be recreated outside the class
    loader = getattr(sys.modules.get(fn.__module__), "__loader__", None)
    if loader is not None and type(loader).__name__ not in _PLAIN_LOADERS:
        return          # an import hook transformed the code (pytest rewrites `assert`)
    orig = ast.FunctionDef(name=node.name, args=node.args, body=node.body, decorator_list=[],
                           returns=node.returns, type_comment=None)
    if sys.version_info >= (3, 12):
        orig.type_params = []
    free = list(code.co_freevars)
    factory = ast.FunctionDef(
        name="__ws_check__", args=ast.arguments(posonlyargs=[], args=[ast.arg(arg=n) for n in free],
                                                vararg=None, kwonlyargs=[], kw_defaults=[],
                                                kwarg=None, defaults=[]),
        body=[orig, ast.Return(ast.Constant(None))] if free else [orig], decorator_list=[],
        returns=None)
    if sys.version_info >= (3, 12):
        factory.type_params = []
    for n in free:      # make each free variable used by the factory's body, as a closure needs
        factory.body.insert(0, ast.Expr(ast.Name(n, ast.Load())))
    # the nodes made here take the def's position; the parsed ones have theirs (a walk of the
    # whole tree, ast.fix_missing_locations, would only find these)
    made = [orig, factory, *factory.args.args, *factory.body[:len(free)],
            *(e.value for e in factory.body[:len(free)])]
    if free:
        made += [factory.body[-1], factory.body[-1].value]
    for n in made:
        ast.copy_location(n, node)
    imports = [ast.copy_location(ast.Import(names=[ast.copy_location(ast.alias(name=n), node)]),
                                 node) for n in _imported_names(fn)]
    module = ast.Module(body=imports + ([factory] if free else [orig]), type_ignores=[])
    try:
        compiled = compile(module, code.co_filename, "exec",
                           flags=code.co_flags & _FUTURE_FLAGS, dont_inherit=True)
        outer = _const_code(compiled, "__ws_check__") if free else compiled
        again = _const_code(outer, node.name)
    except (SyntaxError, UnsupportedError, ValueError):
        return
    if _same_code(again, code):
        return
    raise UnsupportedError(
        f"cannot compile {fn.__qualname__}: its source file {code.co_filename} changed since it "
        f"was imported (the text at line {code.co_firstlineno} is not the code Python loaded).\n"
        "warpstage traces the source text; tracing the new text under the old code's cache key "
        "would run a kernel that does not match the program.\nFix: restart the program, or "
        "importlib.reload() the module and use the kernel object it defines.")


def _imported_names(fn) -> list:
    """The globals ``fn``'s code reads that its module most likely bound by an import: a module,
    or an object defined in another module. CPython 3.11+ compiles ``name.attr(...)`` as an
    attribute load and a call, not as a method call, where ``name`` is imported at the top of
    the module (its symbol table says so); the check's module imports these names too (it is
    compiled, never run), so that the usual case compiles to the same bytecode as the loaded
    code and is compared without disassembling. A wrong guess only sends the comparison to the
    disassembled form (``_same_code``)."""
    glob, out, todo = fn.__globals__, [], [fn.__code__]
    seen = set()
    while todo:
        code = todo.pop()
        todo.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
        for n in code.co_names:
            if n in seen or n not in glob:
                continue
            seen.add(n)
            value = glob[n]
            if isinstance(value, types.ModuleType) or getattr(value, "__module__",
                                                               fn.__module__) != fn.__module__:
                out.append(n)
    return out


_SKIP_OPS = frozenset({"NOP", "CACHE", "EXTENDED_ARG", "RESUME", "PRECALL", "PUSH_NULL"})


def _ops(code) -> list:
    """``code``'s instructions as (operation, argument value), in a form that does not depend on
    how the compiler was driven (from source or from an AST; method-call forms, jump offsets)."""
    out = []
    for ins in dis.get_instructions(code):
        op = ins.opname
        if op in _SKIP_OPS:
            continue
        if op == "LOAD_METHOD":
            op = "LOAD_ATTR"
        if ins.opcode in dis.hasjrel or ins.opcode in dis.hasjabs or "JUMP" in op:
            out.append((op, None))
        elif isinstance(ins.argval, types.CodeType):
            out.append((op, "<code>"))
        else:
            out.append((op, repr(ins.argval)))
    return out


def _same_code(a, b) -> bool:
    if _same_bytecode(a, b):            # the usual case: one compiler, one text
        na = [c for c in a.co_consts if isinstance(c, types.CodeType)]
        nb = [c for c in b.co_consts if isinstance(c, types.CodeType)]
        return all(_same_code(x, y) for x, y in zip(na, nb))
    if a.co_varnames != b.co_varnames or _ops(a) != _ops(b):
        return False
    ca = [c for c in a.co_consts if not isinstance(c, types.CodeType)]
    cb = [c for c in b.co_consts if not isinstance(c, types.CodeType)]
    if ca != cb:
        return False
    na = [c for c in a.co_consts if isinstance(c, types.CodeType)]
    nb = [c for c in b.co_consts if isinstance(c, types.CodeType)]
    return len(na) == len(nb) and all(_same_code(x, y) for x, y in zip(na, nb))


def _same_bytecode(a, b) -> bool:
    """The same bytecode reading the same names and constants (nested code objects in the same
    places): then ``_ops`` of both are equal too, without disassembling them."""
    if (a.co_code != b.co_code or a.co_names != b.co_names or a.co_varnames != b.co_varnames
            or a.co_freevars != b.co_freevars or a.co_cellvars != b.co_cellvars
            or len(a.co_consts) != len(b.co_consts)):
        return False
    for x, y in zip(a.co_consts, b.co_consts):
        if isinstance(x, types.CodeType) or isinstance(y, types.CodeType):
            if not (isinstance(x, types.CodeType) and isinstance(y, types.CodeType)):
                return False
        elif type(x) is not type(y) or x != y:
            return False
    return True
