"""Pass 2 of the control-flow rewrite: regions and expression calls (see rewrite_passes.py for
pass 1 and the shape of the generated code).

``if test: A else: B`` becomes::

    def __ws_then_7():            # one function per region; assigned names are nonlocal
        nonlocal x, y
        A
    def __ws_else_7():
        nonlocal x, y
        B
    def __ws_get_7():             # the region's variables, read and written by control_flow
        return (x, y)
    def __ws_set_7(__ws_v):
        nonlocal x, y
        (x, y) = __ws_v
    __ws_cf__.if_stmt(test, __ws_then_7, __ws_else_7, __ws_get_7, __ws_set_7, __ws_info__[3])

Loops likewise (``for_stmt(iterable, body(item), ...)``, ``while_stmt(test(), body(), ...)``);
``a if c else b`` becomes ``ifexp(site, c, lambda: a, lambda: b)``, ``a and b``
``and_(site, a, lambda: b)``, ``not a`` ``not_(a)``, ``a < b < c``
``compare(site, a, ('Lt', 'Lt'), (lambda: b, lambda: c))``, ``assert t, m``
``assert_(site, lambda: t, lambda: m)`` and ``min(...)`` ``builtin(min)(...)``.
"""
from __future__ import annotations

import ast

from .regions import Site
from .rewrite_passes import (CF, INFO, RET, RETVAL, Flags, assign, at_header, bound_names, call,
                             cf_attr, lambda_, last_lines, local_nodes, name,
                             no_args, unsupported)


class Context:
    """What the passes share for one rewritten function: file, sites, ids."""

    def __init__(self, file: str, qualname: str, super_args):
        self.file = file
        self.qualname = qualname
        self.super_args = super_args      # (class cell name, first parameter) or None
        self.sites: list = []
        self._next = 0

    def new_id(self) -> int:
        self._next += 1
        return self._next

    def site(self, kind: str, node: ast.AST, **kw) -> ast.expr:
        self.sites.append(Site(kind, self.file, node.lineno, node.col_offset, **kw))
        ref = ast.Subscript(value=name(INFO), slice=ast.Constant(len(self.sites) - 1),
                            ctx=ast.Load())
        return at_header(ref, node)


def _params(fn: ast.FunctionDef) -> set:
    a = fn.args
    out = {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs}
    out.update(x.arg for x in (a.vararg, a.kwarg) if x is not None)
    return out


def _unique(*seqs) -> tuple:
    out: dict = {}
    for s in seqs:
        for n in s:
            out.setdefault(n)
    return tuple(out)


def rewrite_scope(fn: ast.FunctionDef, ctx: Context, top: bool) -> ast.FunctionDef:
    """Rewrite one function scope in place (and the functions nested in it)."""
    if any(isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await)) for n in local_nodes(fn.body)):
        if top:
            raise unsupported(fn, ctx.file, f"{ctx.qualname} is a generator or coroutine; kernel and "
                              "device functions must be plain functions",
                              "remove `yield` / `await` from it")
        return fn
    declared = {}
    for n in local_nodes(fn.body):
        if isinstance(n, (ast.Global, ast.Nonlocal)):
            if isinstance(n, ast.Global) or top:
                raise _outside_write(n, ctx, ctx.qualname if top else fn.name)
            for x in n.names:
                declared[x] = type(n)
    doc = fn.body[:1] if (fn.body and isinstance(fn.body[0], ast.Expr) and
                          isinstance(fn.body[0].value, ast.Constant) and
                          isinstance(fn.body[0].value.value, str)) else []
    body = fn.body[len(doc):]
    flags = Flags(body, ctx.new_id)
    body = flags.run(body)              # what pass 1 makes is positioned (fix_locations)
    like = fn.body[0] if fn.body else fn
    if flags.returns:
        site = ctx.site("return", fn, func=ctx.qualname if top else fn.name)
        body = ([assign(RET, ast.Constant(False), like), assign(RETVAL, cf_attr("UNDEF"), like)]
                + body + [ast.copy_location(ast.Return(call(
                    cf_attr("result"), [site, name(RET), name(RETVAL)])), fn)])
    regions = Regions(ctx, {n for n, k in declared.items() if k is ast.Global}, top)
    body = regions.visit_body(body)
    head = [ast.copy_location(k(names=[n for n, kk in declared.items() if kk is k]), like)
            for k in (ast.Global, ast.Nonlocal) if k in declared.values()]
    skip = _params(fn) | set(declared)
    inits = [assign(n, call(cf_attr("Unbound"), [ast.Constant(n)]), like)
             for n in regions.region_names if n not in skip]
    fn.body = doc + head + inits + (body or [ast.copy_location(ast.Pass(), like)])
    return fn


def _outside_write(node, ctx: Context, where: str):
    """The error for ``global x`` (or a ``nonlocal x`` of the kernel or @ws.jit function itself,
    naming a variable of the Python code around it): traced code runs once per compile, not per
    launch, so an assignment to a name outside the traced code would count compiles, and a
    cache hit would skip it. A ``nonlocal`` of a function nested in traced code names a
    variable of that traced code, which is fine."""
    stmt = "global" if isinstance(node, ast.Global) else "nonlocal"
    names = ", ".join(node.names)
    return unsupported(
        node, ctx.file,
        f"`{stmt} {names}` in {where}: "
        f"a kernel or @ws.jit function cannot assign Python {'globals' if stmt == 'global' else 'variables outside it'}. "
        "Its body runs once, while warpstage compiles it — not at each launch — so an "
        f"assignment to {node.names[0]} would happen per compile, and a cache hit would skip it",
        f"update {node.names[0]} on the host, next to the launch; for a value computed on the "
        "GPU, store it into a tensor argument (e.g. ws.atomic_add(counter.ptr, 1)); to read a "
        f"global, remove the `{stmt}` statement")


class Regions(ast.NodeTransformer):
    """Pass 2 over one function scope (see the module docstring)."""

    def __init__(self, ctx: Context, globals_: set, top: bool):
        self.ctx = ctx
        self.globals_ = globals_
        self.top = top
        self.region_names: dict = {}
        self.in_try = 0             # `try` statements around the node visited

    def visit_body(self, body: list) -> list:
        out = []
        for s in body:
            r = self.visit(s)
            if r is None:
                continue
            out.extend(r if isinstance(r, list) else [r])
        return out

    # -- scopes ----------------------------------------------------------------------------------
    def visit_FunctionDef(self, node):
        node.decorator_list = [self.visit(d) for d in node.decorator_list]
        node.args.defaults = [self.visit(d) for d in node.args.defaults]
        node.args.kw_defaults = [d if d is None else self.visit(d) for d in node.args.kw_defaults]
        return rewrite_scope(node, self.ctx, top=False)

    def visit_AsyncFunctionDef(self, node):
        return node

    def visit_ClassDef(self, node):
        return node

    def visit_Global(self, node):
        return ast.copy_location(ast.Pass(), node)

    visit_Nonlocal = visit_Global

    def visit_Delete(self, node):
        out, keep = [], []
        for t in node.targets:
            if isinstance(t, ast.Name):
                out.append(assign(t.id, call(cf_attr("Unbound"), [
                    ast.Constant(t.id), ast.Constant("it was deleted with `del`")]), node))
            else:
                keep.append(self.visit(t))
        if keep:
            out.insert(0, ast.copy_location(ast.Delete(targets=keep), node))
        return out

    # -- regions ---------------------------------------------------------------------------------
    def _names(self, *seqs) -> tuple:
        names = _unique(*seqs)
        for n in names:
            self.region_names.setdefault(n)
        return names

    def _decls(self, names) -> list:
        out = []
        local = [n for n in names if n not in self.globals_]
        if local:
            out.append(ast.Nonlocal(names=local))
        glob = [n for n in names if n in self.globals_]
        if glob:
            out.append(ast.Global(names=glob))
        return out

    def _def(self, fname: str, names, body: list, like: ast.AST, params=()) -> ast.FunctionDef:
        args = no_args()
        args.args = [ast.arg(arg=p) for p in params]
        fn = ast.FunctionDef(name=fname, args=args,
                             body=self._decls(names) + (body or [ast.Pass()]),
                             decorator_list=[], returns=None)
        return ast.copy_location(fn, like)

    def _state(self, k: int, names, like) -> list:
        get = self._def(f"__ws_get_{k}", (), [ast.Return(ast.Tuple(
            [name(n) for n in names], ast.Load()))], like)
        store = [ast.Assign(targets=[ast.Tuple([name(n, True) for n in names], ast.Store())],
                            value=name("__ws_v"))] if names else []
        put = self._def(f"__ws_set_{k}", names, store, like, params=("__ws_v",))
        return [get, put]

    def visit_If(self, node):
        refine = getattr(node, "_ws_refine", ())
        names = self._names(bound_names(node.body + node.orelse), refine)
        then_lines, else_lines = last_lines(node.body), last_lines(node.orelse)
        lines = tuple((then_lines.get(n, 0), else_lines.get(n, 0)) for n in names)
        node.test = self.visit(node.test)
        body, orelse = self.visit_body(node.body), self.visit_body(node.orelse)
        k = self.ctx.new_id()
        then = self._def(f"__ws_then_{k}", names, body, node)
        other = self._def(f"__ws_else_{k}", names, orelse, node) if orelse else None
        site = self.ctx.site("guard" if refine else "if", node, names=names, lines=lines,
                             refine=refine, refine_else=getattr(node, "_ws_refine_else", ()))
        get, put = self._state(k, names, node)
        c = call(cf_attr("if_stmt"), [node.test, name(then.name),
                                       name(other.name) if other else ast.Constant(None),
                                       name(get.name), name(put.name), site])
        return [then] + ([other] if other else []) + [get, put,
                                                     at_header(ast.Expr(c), node)]

    def visit_For(self, node):
        stop = getattr(node, "_ws_stop", ())
        targets = bound_names([node.target])
        names = self._names(targets, bound_names(node.body), stop)
        body_lines = last_lines(node.body)
        lines = tuple((0, max(body_lines.get(n, 0), node.lineno if n in targets else 0))
                      for n in names)
        it = self.visit(node.iter)
        if isinstance(it, ast.Call):
            it = ast.copy_location(call(cf_attr("iter_call"), [it.func] + it.args, it.keywords),
                                   it)
        body = [ast.copy_location(ast.Assign(targets=[node.target], value=name("__ws_it")),
                                  node)] + self.visit_body(node.body)
        k = self.ctx.new_id()
        fn = self._def(f"__ws_body_{k}", names, body, node, params=("__ws_it",))
        site = self.ctx.site("for", node, names=names, lines=lines, stop=stop, targets=targets)
        get, put = self._state(k, names, node)
        c = call(cf_attr("for_stmt"), [it, name(fn.name), name(get.name), name(put.name), site])
        return [fn, get, put, at_header(ast.Expr(c), node)]

    def visit_AsyncFor(self, node):
        raise unsupported(node, self.ctx.file, "`async for` is not supported in kernel code",
                          "use a plain `for` loop")

    def visit_While(self, node):
        stop = getattr(node, "_ws_stop", ())
        if isinstance(node.test, ast.Constant) and node.test.value and not stop and \
                not any(isinstance(n, ast.Raise) for n in local_nodes(node.body)):
            raise unsupported(node, self.ctx.file, f"`while {node.test.value!r}:` with no "
                              "`break` or `return` in its body never ends: its condition is "
                              "static, so warpstage would unroll it while compiling, forever",
                              "add the `break` that ends it (under a dynamic condition it "
                              "becomes a GPU loop), or loop a dynamic count with "
                              "`for i in range(n):`")
        walrus = [n.target.id for n in ast.walk(node.test) if isinstance(n, ast.NamedExpr)]
        names = self._names(walrus, bound_names(node.body), stop)
        body_lines = last_lines(node.body)
        lines = tuple((0, body_lines.get(n, 0)) for n in names)
        test = self.visit(node.test)
        k = self.ctx.new_id()
        test_fn = self._def(f"__ws_test_{k}", _unique(walrus),
                            [ast.copy_location(ast.Return(test), node)], node)
        body_fn = self._def(f"__ws_body_{k}", names, self.visit_body(node.body), node)
        site = self.ctx.site("while", node, names=names, lines=lines, stop=stop)
        get, put = self._state(k, names, node)
        c = call(cf_attr("while_stmt"), [name(test_fn.name), name(body_fn.name), name(get.name),
                                          name(put.name), site])
        return [test_fn, body_fn, get, put, at_header(ast.Expr(c), node)]

    # -- expressions -----------------------------------------------------------------------------
    def _thunk(self, expr: ast.expr, what: str) -> ast.Lambda:
        for n in ast.walk(expr):
            if isinstance(n, ast.NamedExpr):
                raise unsupported(n, self.ctx.file, f"an assignment expression (:=) inside {what} "
                                  "is not supported in kernel code (that operand is evaluated "
                                  "lazily, in its own function)",
                                  "assign the value in a statement before it")
        return lambda_(expr)

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        kind = "and" if isinstance(node.op, ast.And) else "or"
        site = self.ctx.site(kind, node)
        thunks = [self._thunk(v, f"an `{kind}` operand") for v in node.values[1:]]
        return ast.copy_location(call(cf_attr(kind + "_"), [site, node.values[0]] + thunks), node)

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return ast.copy_location(call(cf_attr("not_"), [node.operand]), node)
        return node

    def visit_IfExp(self, node):
        self.generic_visit(node)
        site = self.ctx.site("ifexp", node)
        what = "a conditional expression"
        return ast.copy_location(call(cf_attr("ifexp"), [
            site, node.test, self._thunk(node.body, what), self._thunk(node.orelse, what)]), node)

    def visit_Compare(self, node):
        self.generic_visit(node)
        if len(node.ops) < 2:
            return node
        site = self.ctx.site("compare", node)
        ops = ast.Tuple([ast.Constant(type(op).__name__) for op in node.ops], ast.Load())
        thunks = ast.Tuple([self._thunk(c, "a chained comparison") for c in node.comparators],
                           ast.Load())
        return ast.copy_location(call(cf_attr("compare"), [site, node.left, ops, thunks]), node)

    def visit_Call(self, node):
        self.generic_visit(node)
        f = node.func
        if isinstance(f, ast.Name) and f.id in ("min", "max"):
            node.func = ast.copy_location(call(cf_attr("builtin"), [f]), f)
        elif (isinstance(f, ast.Name) and f.id == "super" and not node.args and not node.keywords
              and self.top and self.ctx.super_args):
            node.args = [name(a) for a in self.ctx.super_args]
        return node

    def visit_Assert(self, node):
        text = ast.unparse(node.test)
        self.generic_visit(node)
        site = self.ctx.site("assert", node, text=text)
        msg = self._thunk(node.msg, "an assert message") if node.msg else ast.Constant(None)
        c = call(cf_attr("assert_"), [site, self._thunk(node.test, "an assert"), msg])
        return at_header(ast.Expr(c), node)

    def visit_Raise(self, node):
        # `raise E` -> `raise __ws_cf__.raising("raise E", E)`: an error under a dynamic `if`
        # (control_flow.raising). A raise inside a `try` may be caught there: left alone.
        self.generic_visit(node)
        if node.exc is not None and not self.in_try:
            node.exc = ast.copy_location(call(cf_attr("raising"), [
                ast.Constant(ast.unparse(node)), node.exc]), node.exc)
        return node

    def visit_Try(self, node):
        self.in_try += 1
        try:
            return self.generic_visit(node)
        finally:
            self.in_try -= 1

    visit_TryStar = visit_Try

    def visit_Return(self, node):
        self.generic_visit(node)
        if node.value is not None:
            node.value = ast.copy_location(call(cf_attr("returned"), [node.value]), node.value)
        return node

    # Annotations are never evaluated by the rewritten code; leave them alone.
    def visit_arg(self, node):
        return node

    def visit_AnnAssign(self, node):
        if node.value is not None:
            node.value = self.visit(node.value)
        return node


__all__ = ["Context", "rewrite_scope", "Regions", "CF", "INFO"]
