"""What rewritten kernel code calls: decide each construct's binding time, build regions, merge.

``rewrite.py`` turns ``if``/``while``/``for``, ternaries, ``and``/``or``/``not``, chained
comparisons, ``assert`` and ``return``/``break``/``continue`` into calls to this module (through the
reserved name ``__ws_cf__``). Each call looks at the binding time of its condition *while tracing*:

- static (a Python value): plain Python — one branch runs, nothing is emitted;
- dynamic (``ws.Boolean``; other dynamic scalars are tested ``!= 0``): every branch is traced into
  its own region of an ``scf.if`` and the variables the branches assign are merged (``merge.py``).

A region is a Python function without arguments made by the rewriter; the variables it may assign
are ``site.names``, read and written through ``get()`` / ``set_(values)``. Loops live in
``loops.py``.
"""
from __future__ import annotations

import builtins
import operator

from .. import ir
from ..errors import CompilationError, StaticAssertionError, UnsupportedError, WarpstageError
from ..lang import control
from .facts import read_attr  # noqa: F401  (called by rewritten code: __ws_cf__.read_attr)
from .host_checks import call_print, format_value, read_item  # noqa: F401  (the same)
from .loops import for_stmt, while_stmt
from .regions import (GUARD_LABELS, IF_LABELS, Checkpoint, Site, branches, is_dynamic,
                      not_any, truth)
from ..core.source import format_location, is_library_file, user_location
from ..core.trace import builder, maybe_current
from ..core.unbound import UNDEF, Unbound, UnboundVariableError

__all__ = ["Site", "if_stmt", "ifexp", "and_", "or_", "not_", "not_any", "compare", "builtin",
           "iter_call", "assert_", "result", "for_stmt", "while_stmt", "Unbound", "UNDEF",
           "UnboundVariableError", "StaticAssertionError", "truth", "returned", "raising"]


def returned(value):
    """What a ``return`` statement returns, after checking it holds no unbound variable. A
    value's ``return`` line is kept in the trace (``last_return``): the last one before a kernel
    ends is the kernel's own, which returning a value is an error at."""
    _check_bound(value)
    if value is not None:
        ctx = maybe_current()
        if ctx is not None:
            ctx.last_return = user_location(2)
    return value


def _check_bound(value):
    if isinstance(value, Unbound):
        raise value.error()
    if type(value) in (tuple, list):
        for v in value:
            _check_bound(v)
    elif type(value) is dict:
        for v in value.values():
            _check_bound(v)


# -- if / ternary / and / or -------------------------------------------------------------------

def if_stmt(cond, then_fn, else_fn, get, set_, site: Site) -> None:
    """``if cond: then_fn() else: else_fn()`` — Python if ``cond`` is static, else an scf.if."""
    c = truth(cond)
    if not is_dynamic(c):
        if c:
            then_fn()
        elif else_fn is not None:
            else_fn()
        return
    branches(c, (then_fn, else_fn), site, get, set_,
             labels=GUARD_LABELS if site.kind == "guard" else IF_LABELS)


def ifexp(site: Site, cond, then_thunk, else_thunk):
    """``then_thunk() if cond else else_thunk()``; only the taken side is evaluated."""
    c = truth(cond)
    if not is_dynamic(c):
        return then_thunk() if c else else_thunk()
    return branches(c, (then_thunk, else_thunk), site, labels=("the true side", "the false side"),
                    value_label="the conditional expression")


def and_(site: Site, value, *thunks):
    """``value and t1() and t2() ...`` with Python's short-circuit: returns the first falsy
    operand or the last; a dynamic operand makes the rest a region."""
    for k, t in enumerate(thunks):
        c = truth(value)
        if not is_dynamic(c):
            if not c:
                return value
            value = t()
            continue
        rest, left = thunks[k + 1:], value
        return branches(c, (lambda: and_(site, t(), *rest), lambda: left), site,
                        labels=("the right operand", "the left operand"),
                        value_label="the `and` expression")
    return value


def or_(site: Site, value, *thunks):
    """``value or t1() or t2() ...``: returns the first truthy operand or the last."""
    for k, t in enumerate(thunks):
        c = truth(value)
        if not is_dynamic(c):
            if c:
                return value
            value = t()
            continue
        rest, left = thunks[k + 1:], value
        return branches(c, (lambda: left, lambda: or_(site, t(), *rest)), site,
                        labels=("the left operand", "the right operand"),
                        value_label="the `or` expression")
    return value


def not_(value):
    """``not value``: a Python bool if static, else a ws.Boolean."""
    c = truth(value)
    return ~c if is_dynamic(c) else not c


_COMPARE = {"Lt": operator.lt, "LtE": operator.le, "Gt": operator.gt, "GtE": operator.ge,
            "Eq": operator.eq, "NotEq": operator.ne, "Is": operator.is_,
            "IsNot": operator.is_not, "In": lambda a, b: a in b,
            "NotIn": lambda a, b: a not in b}


def compare(site: Site, left, ops: tuple, thunks: tuple):
    """``left op0 r0 op1 r1 ...`` (a chained comparison): each right operand is evaluated once,
    and only while the comparisons so far hold."""
    right = thunks[0]()
    r = _COMPARE[ops[0]](left, right)
    if len(ops) == 1:
        return r
    return and_(site, r, lambda: compare(site, right, ops[1:], thunks[1:]))


# -- builtins and loop headers -----------------------------------------------------------------

def builtin(f):
    """What a call to ``f`` means in kernel code: ``min``/``max`` that also take dynamic values;
    any other callable (including a shadowing local named ``min``) unchanged."""
    if f is builtins.min or f is builtins.max:
        return control.min if f is builtins.min else control.max
    return f


def iter_call(f, *args, **kwargs):
    """The iterable of ``for x in f(...)``: ``range(...)`` becomes a dynamic loop (scf.for);
    anything else is called as usual."""
    if f is builtins.range:
        return control.range(*args, **kwargs)
    return f(*args, **kwargs)


# -- assert and return -------------------------------------------------------------------------

def assert_(site: Site, test, msg) -> None:
    """``assert test(), msg()``: static — checked now; dynamic — with the ``device_asserts``
    option a device check (printf of file:line and message, then trap), otherwise dropped."""
    ctx = maybe_current()
    point = Checkpoint()
    c = truth(test())
    if not is_dynamic(c):
        if not c:
            text = msg() if msg is not None else None
            raise StaticAssertionError(
                f"assertion `{site.text}` failed while compiling (its operands are static)"
                + (f": {text}" if text is not None else "") + f"\n{format_location(site.loc)}",
                where=site.where())
        return
    if not getattr(ctx.options if ctx is not None else None, "device_asserts", False):
        point.rollback()
        return
    b = builder()
    failed = ~c
    then, otherwise = ir.Region(), ir.Region()
    with b.at(then.block):
        head = f"{site.file}:{site.line}: assertion `{site.text}` failed".replace("%", "%%")
        fmt, args = "", []
        if msg is not None:
            fmt, args = control.format_printf("{}", (msg(),))
            fmt = ": " + fmt
        builder().printf(head + fmt + "\n", args)
        builder().op("gpu.trap")
        builder().yield_()
    with b.at(otherwise.block):
        builder().yield_()
    builder().op("scf.if", (failed.value,), (), regions=(then, otherwise))


def raising(text: str, exc):
    """``raise exc`` (``text``: the statement): ``exc`` itself, unless the ``raise`` is traced
    inside a branch of a dynamic ``if``. Both branches are traced while compiling, so there it
    would fail every compile whatever the condition is at run time (and the GPU cannot raise a
    Python exception): an UnsupportedError naming the ``if``. A warpstage error (library code
    rejecting a static configuration) passes through: it is a compile-time error on any path;
    so does a ``raise`` whose only dynamic branches around it are warpstage's own (a user's
    matmul epilogue under the kernel's role dispatch by warp index): the user's code runs on
    every path there, and the ``if`` named would be one the user cannot change."""
    ctx = maybe_current()
    if ctx is None or not ctx.dynamic_sites or isinstance(exc, WarpstageError):
        return exc
    sites = [s for s in ctx.dynamic_sites if not is_library_file(s.file)]
    if not sites:       # only warpstage's own branches (a library kernel's role dispatch) are
        return exc      # around: the user's code runs on every path there, raising while compiling
    site = sites[-1]
    what = "`if`" if site.kind == "if" else "condition"
    said = str(exc) if isinstance(exc, BaseException) else ""
    raise UnsupportedError(
        f"`{text}` inside the dynamic {what} at {site.where()}: the condition is known only on "
        "the GPU, so warpstage traces both branches while compiling, and this `raise` would "
        "run at every compile, whatever the condition is at run time (a kernel cannot raise a "
        "Python exception on the GPU)" + (f"; it says: {said}" if said else "") + ".\n"
        "Expected: a `raise` under a static condition (checked while compiling); got one under "
        "a dynamic condition.\nFix: for a run-time check write `assert not (<condition>), "
        "\"<message>\"` (a device-side trap with @ws.kernel(device_asserts=True)); to reject "
        "a configuration while compiling, make the condition static (ws.static(...)) or raise "
        "before the `if`.")


def result(site: Site, returned, value):
    """The single exit of a function whose ``return``s were turned into flags: ``returned`` says
    whether a ``return`` ran, ``value`` what it returned (merged over the paths)."""
    if value is UNDEF or value is None:
        return None
    if is_dynamic(truth(returned)):
        raise CompilationError(
            f"{site.func or 'this function'} returns a value on some paths but reaches its end "
            f"without `return` on others (decided at run time); on the GPU every path must return "
            f"the same kind of value.\n{format_location(site.loc)}\n"
            "Fix: add a `return` with a value at the end of the function.", where=site.where())
    return value
