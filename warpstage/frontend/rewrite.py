"""The control-flow rewrite: a kernel's Python function -> the same function with its ``if``,
loops, ternaries, ``and``/``or``/``not``, chained comparisons, ``assert``, ``return``, ``break``
and ``continue`` turned into calls that decide, while tracing, whether each is static (plain
Python) or dynamic (IR regions). See control_flow.py for the run-time half and
docs/control-flow.md for the user's view.

``rewrite(fn)`` returns the rewritten function (cached per function object). Call it with the
same arguments as ``fn``; it returns what ``fn`` returns (for a device function with a dynamic
``return``, the value merged over all paths). How it is built:

1. The source comes from ``fn.__code__`` (so a ``functools.wraps`` wrapper is rewritten as
   itself, not as the function it wraps). No source (REPL, ``exec``) -> ``UnsupportedError``.
2. It is parsed with its original line numbers and columns; the decorators of the top function
   are dropped (``fn`` is already the decorated-into object we were given); names private to a
   class (``self.__x``) are mangled as the class body would; ``super()`` gets explicit arguments.
3. The passes of rewrite_passes.py / rewrite_regions.py run on each function scope.
4. The result is compiled with the original file name inside a factory function whose
   parameters are ``fn``'s free variables, and the inner code object is turned into a function
   with ``fn``'s real ``__globals__`` (globals are read live) and ``fn``'s own closure cells
   (closure variables are read live too, and ``nonlocal`` writes reach the enclosing function).
   The reserved names ``__ws_cf__`` (control_flow) and ``__ws_info__`` (the sites) are extra
   closure cells, so the user's module namespace is not touched.
5. A closure cell holding ``fn.__wrapped__`` (a wrapping decorator under ``@ws.jit``) is replaced,
   in the rewritten function only, by a cell holding the rewritten wrapped function.

Steps 1-4 (parse, passes, ``compile()``) cost ~10-30 ms per kernel-sized function, in every fresh
process. With a code store installed (rewrite_store.py; ``jit/cache/code_store.py`` keeps them in
the disk cache) the inner code object and the sites are kept and read back instead.
"""
from __future__ import annotations

import __future__
import ast
import inspect
import linecache
import sys
import types
import weakref

from ..errors import UnsupportedError
from . import control_flow
from .rewrite_reads import HostReads, check_source
from .rewrite_passes import fix_locations
from .rewrite_regions import CF, INFO, Context, rewrite_scope
from . import rewrite_store
from ..core.source import register_user_code

__all__ = ["rewrite", "is_rewritten"]

_CACHE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_FUTURE_FLAGS = 0
for _f in __future__.all_feature_names:
    _FUTURE_FLAGS |= getattr(__future__, _f).compiler_flag


def is_rewritten(fn) -> bool:
    return getattr(fn, "__ws_rewritten__", False)


def rewrite(fn):
    """The rewritten version of ``fn`` (see the module docstring). Bound methods, staticmethod
    and classmethod objects are unwrapped and rewrapped. Raises ``UnsupportedError`` if ``fn``
    is not a plain Python function with source in a file."""
    if isinstance(fn, types.MethodType):
        return types.MethodType(rewrite(fn.__func__), fn.__self__)
    if isinstance(fn, (staticmethod, classmethod)):
        return type(fn)(rewrite(fn.__func__))
    if is_rewritten(fn):
        return fn
    if not isinstance(fn, types.FunctionType):
        raise UnsupportedError(
            f"warpstage can only compile plain Python functions (def ...), got "
            f"{type(fn).__name__} {getattr(fn, '__qualname__', fn)!r}.\n"
            "Fix: decorate a `def` function with @ws.kernel / @ws.jit.")
    got = _CACHE.get(fn)
    if got is not None and got[0] is fn.__code__:   # a replaced __code__ (autoreload) rebuilds
        return got[1]
    new = _build(fn)
    _CACHE[fn] = (fn.__code__, new)
    return new


def _no_source(fn, why: str) -> UnsupportedError:
    return UnsupportedError(
        f"cannot compile {fn.__qualname__}: warpstage needs its source code to rewrite its "
        f"control flow, but {why}.\nFunctions typed at the interactive prompt or made with exec() "
        "have no source file.\n"
        f"Fix: define {fn.__name__} in a .py file and import it (Jupyter cells also work).")


def _source(fn, tokenize: bool = False):
    """(lines, first line number) of fn's definition, decorators included. ``tokenize``: find
    the block's end with inspect.getblock rather than from the code's positions."""
    code = fn.__code__
    if fn.__name__ == "<lambda>":
        raise UnsupportedError(f"cannot compile a lambda ({code.co_filename}:"
                               f"{code.co_firstlineno}) as a kernel or device function.\n"
                               "Fix: write it as a `def` function.")
    # linecache directly, as inspect.findsource does after inspect.getmodule, which stats every
    # module in sys.modules the first time (~100 ms of a first compile in a big process);
    # fn.__globals__ lets linecache ask the module's loader (zip imports, notebooks).
    file = code.co_filename
    linecache.checkcache(file)
    lines = linecache.getlines(file, fn.__globals__)
    first = code.co_firstlineno                     # the first decorator's line, if any
    if not lines or not 0 < first <= len(lines):
        raise _no_source(fn, f"its source is not available (no lines for {file}:{first})")
    last = None if tokenize else _last_line(code)
    if last is not None and first <= last <= len(lines) and not _body_goes_on(lines, first, last):
        return lines[first - 1:last], first
    try:
        return inspect.getblock(lines[first - 1:]), first
    except (IndentationError, SyntaxError) as e:    # tokenizing a file changed since import
        raise _no_source(fn, f"its source does not tokenize ({e})") from None


def _body_goes_on(lines, first: int, last: int) -> bool:
    """Whether the def at line ``first`` has body lines after ``last`` (1-based): the next line
    that is not blank or a comment is indented deeper than the def. The code's positions end at
    the last statement the compiler kept, so dead code at the end of a body (after a constant-true
    ``if ...: return``) lies past them, and cutting the text there would change what is traced
    (the dead tail is live in warpstage's trace when the condition is dynamic)."""
    head = lines[first - 1]
    indent = len(head) - len(head.lstrip())
    for line in lines[last:]:
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        return len(line) - len(line.lstrip()) > indent
    return False


def _last_line(code):
    """The last source line of ``code``'s definition: the largest end line of its instructions
    and those of the code nested in it (co_positions, Python >= 3.11), or None where positions
    are not recorded (``-X no_debug_ranges``). Finding the block's end with inspect.getblock
    would tokenize, whose first use compiles tokenize's regular expressions (~10 ms)."""
    positions = getattr(code, "co_positions", None)
    if positions is None:
        return None
    last = None
    for _, end, _, _ in positions():
        if end is not None and (last is None or end > last):
            last = end
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            inner = _last_line(c)
            if inner is not None and (last is None or inner > last):
                last = inner
    return last


def _parse(fn, tokenize: bool = False):
    lines, first = _source(fn, tokenize)
    text = "".join(lines)
    indented = bool(lines) and lines[0][:1] in (" ", "\t")
    # blank lines in front give the nodes their lines in the file as parsed (an indented
    # method goes under an `if 1:` on the line before it), instead of a walk of the tree that
    # moves every node (ast.increment_lineno); a def on the file's first line has no room
    pad = first - (2 if indented else 1)
    head = "\n" * pad if pad >= 0 else ""
    try:
        tree = ast.parse(head + ("if 1:\n" + text if indented else text))
    except SyntaxError as e:
        if not tokenize:        # the positions' extent fell short (a body that is a docstring)
            return _parse(fn, tokenize=True)
        raise _no_source(fn, f"the source found for it does not parse ({e.msg}); the file may "
                             "have changed since it was imported") from None
    node = tree.body[0].body[0] if indented else tree.body[0]
    if pad < 0:
        ast.increment_lineno(node, pad)
    if isinstance(node, ast.AsyncFunctionDef):
        raise UnsupportedError(f"{fn.__qualname__} is `async def`; kernel and device functions "
                               "must be plain `def` functions: a kernel runs on the GPU, not "
                               "in an event loop.\nFix: write `def "
                               f"{fn.__code__.co_name}(...)` and remove `await` from its body.")
    if not isinstance(node, ast.FunctionDef) or node.name != fn.__code__.co_name:
        raise _no_source(fn, "the source at its recorded line is not its `def`; the file may have "
                             "changed since it was imported")
    return node


def _class_name(qualname: str):
    """The class a method is defined in (for name mangling), from its qualname."""
    parts = qualname.split(".")
    if len(parts) >= 2 and parts[-2] != "<locals>":
        return parts[-2]
    return None


class _Mangle(ast.NodeTransformer):
    """Private-name mangling of a class body: ``__x`` -> ``_Cls__x``."""

    def __init__(self, cls: str):
        self.prefix = "_" + cls.lstrip("_")
        self.active = bool(cls.lstrip("_"))

    def m(self, n):
        if self.active and n and n.startswith("__") and not n.endswith("__") and "." not in n:
            return self.prefix + n
        return n

    def visit_Name(self, node):
        node.id = self.m(node.id)
        return node

    def visit_Attribute(self, node):
        self.generic_visit(node)
        node.attr = self.m(node.attr)
        return node

    def visit_arg(self, node):
        node.arg = self.m(node.arg)
        return node

    def visit_FunctionDef(self, node):
        node.name = self.m(node.name)
        self.generic_visit(node)
        return node

    def visit_Global(self, node):
        node.names = [self.m(n) for n in node.names]
        return node

    visit_Nonlocal = visit_Global

    def visit_ClassDef(self, node):
        node.name = self.m(node.name)
        return node


def _build(fn):
    key = rewrite_store.key_for(fn)
    stored = rewrite_store.load(key)
    if stored is None:
        inner, sites = _rewrite_code(fn)
        rewrite_store.keep(key, inner, sites)
    else:
        inner, sites = stored
    return _function(fn, inner, sites)


def _rewrite_code(fn):
    """(the rewritten inner code object, its sites) of ``fn``: steps 1-4 of the docstring."""
    code = fn.__code__
    node = _parse(fn)
    top_name = "__ws_inner__"   # not the function's own name: a recursive call must still find
    node.decorator_list = []    # the global (or its own closure cell), not the factory's local
    cls = _class_name(fn.__qualname__)
    if cls:
        _Mangle(cls).visit(node)
    node.name = top_name
    params = [a.arg for a in node.args.posonlyargs + node.args.args]
    super_args = ("__class__", params[0]) if "__class__" in code.co_freevars and params else None
    check_source(fn, node)
    ctx = Context(code.co_filename, fn.__qualname__, super_args)
    rewrite_scope(node, ctx, top=True)
    HostReads().visit(node)
    free = list(code.co_freevars)
    factory_args = ast.arguments(posonlyargs=[], args=[ast.arg(arg=n) for n in free + [CF, INFO]],
                                 vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                                 defaults=[])
    factory = ast.FunctionDef(name="__ws_factory__", args=factory_args,
                              body=[node, ast.Return(ast.Name(top_name, ast.Load()))],
                              decorator_list=[], returns=None)
    ast.copy_location(factory, node)
    module = ast.Module(body=[factory], type_ignores=[])
    fix_locations(module)
    try:
        compiled = compile(module, code.co_filename, "exec",
                           flags=code.co_flags & _FUTURE_FLAGS, dont_inherit=True)
    except SyntaxError as e:
        raise UnsupportedError(f"warpstage could not rewrite {fn.__qualname__} "
                               f"({code.co_filename}:{e.lineno}): {e.msg}. This is a warpstage "
                               "bug unless the source file changed since import.") from None
    factory_code = _const_code(compiled, "__ws_factory__")
    return _const_code(factory_code, top_name), tuple(ctx.sites)


def _function(fn, inner, sites):
    """The rewritten function of ``fn`` around its rewritten code ``inner``."""
    code = fn.__code__
    inner = _rename_regions(inner.replace(co_name=code.co_name), code.co_name,
                            getattr(code, "co_qualname", code.co_name))
    if sys.version_info >= (3, 11):
        inner = inner.replace(co_qualname=code.co_qualname)
    new = types.FunctionType(inner, fn.__globals__, fn.__name__, fn.__defaults__,
                             _closure(fn, inner, sites))
    new.__kwdefaults__ = dict(fn.__kwdefaults__) if fn.__kwdefaults__ else None
    new.__qualname__ = fn.__qualname__
    new.__module__ = fn.__module__
    new.__doc__ = fn.__doc__
    new.__annotations__ = dict(getattr(fn, "__annotations__", {}) or {})
    new.__dict__.update(fn.__dict__)
    new.__wrapped__ = fn
    new.__ws_rewritten__ = True
    register_user_code(new.__code__)
    return new


_REGION_PREFIXES = ("__ws_then_", "__ws_else_", "__ws_body_", "__ws_test_", "__ws_get_",
                    "__ws_set_")
_REGION_CODE: set = set()


def is_region_code(code) -> bool:
    """Whether ``code`` is a region function made by the rewrite (an ``if``/loop body)."""
    return code in _REGION_CODE


def _rename_regions(code, owner: str, owner_qualname: str):
    """``code`` with its nested region functions (``__ws_then_3``...) named like the function
    that holds them, so a traceback through a kernel's ``if`` shows the kernel's name."""
    consts = []
    changed = False
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            region = c.co_name.startswith(_REGION_PREFIXES)
            name = owner if region else c.co_name
            qual = owner_qualname if region else getattr(c, "co_qualname", c.co_name)
            new = _rename_regions(c, name, qual)
            if region:
                new = new.replace(co_name=owner)
                if sys.version_info >= (3, 11):
                    new = new.replace(co_qualname=owner_qualname)
                _REGION_CODE.add(new)
            changed |= new is not c
            c = new
        consts.append(c)
    return code.replace(co_consts=tuple(consts)) if changed else code


def _const_code(code, name: str):
    for c in code.co_consts:
        if isinstance(c, types.CodeType) and c.co_name == name:
            return c
    raise UnsupportedError(f"warpstage could not find the rewritten code of {name}; this is a "
                           "warpstage bug")


def _closure(fn, inner, sites: tuple):
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    wrapped = getattr(fn, "__wrapped__", None)
    out = []
    for n in inner.co_freevars:
        if n == CF:
            out.append(types.CellType(control_flow))
        elif n == INFO:
            out.append(types.CellType(sites))
        elif n in cells:
            cell = cells[n]
            try:
                content = cell.cell_contents
            except ValueError:
                content = None
            if (wrapped is not None and content is wrapped and
                    isinstance(wrapped, types.FunctionType)):
                cell = types.CellType(rewrite(wrapped))
            out.append(cell)
        else:
            raise UnsupportedError(f"warpstage could not rebuild the closure of "
                                   f"{fn.__qualname__} (free variable {n!r}); this is a warpstage "
                                   "bug")
    return tuple(out) if out else None

