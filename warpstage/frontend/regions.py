"""Dynamic ``if`` regions and merging, shared by control_flow.py and loops.py.

``branches`` traces the two sides of a dynamic condition into the regions of an ``scf.if`` and
merges what they assign (merge.py decides how; this module words the errors for the user). A
``Site`` carries the static facts the rewriter knows about the construct (names, lines, flags).
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import ir
from ..errors import BindingTimeError, UnsupportedError
from ..lang.scalars import Boolean, Scalar
from . import merge
from .merge import Conflict
from ..core.source import format_location
from .contents import StaticWatch, with_contents
from ..core.trace import Origin, builder, maybe_current
from ..core.unbound import UNDEF, Unbound
from ..core.values import is_leaf

__all__ = ["Site", "truth", "is_dynamic", "branches", "plan_var", "promotion_origin",
           "Checkpoint", "is_flag", "not_any"]


@dataclass(frozen=True)
class Site:
    """Static facts about one construct in the source, made by the rewriter.

    ``names``: variables the construct's regions may assign; ``lines``: per name, the line of its
    last assignment on each path (0: not assigned there); ``stop``: for loops, the flags that end
    the loop (break / return); ``refine``/``refine_else``: flags known False in the then-branch /
    True in the else-branch (the guards the rewriter puts after a ``break``/``return``);
    ``targets``: a ``for`` loop's target names; ``text``: an ``assert``'s condition source."""

    kind: str
    file: str
    line: int
    col: int = 0
    names: tuple = ()
    lines: tuple = ()
    stop: tuple = ()
    refine: tuple = ()
    refine_else: tuple = ()
    targets: tuple = ()
    text: str = ""
    func: str = ""

    @property
    def loc(self) -> ir.Location:
        return ir.Location(self.file, self.line, self.col)

    def where(self) -> str:
        return f"{self.file}:{self.line}"


_WHAT = {"if": "`if`", "ifexp": "conditional expression (`a if c else b`)", "and": "`and`",
         "or": "`or`", "compare": "chained comparison", "for": "`for` loop",
         "while": "`while` loop", "assert": "`assert`",
         "guard": "control flow (a `return`, `break` or `continue` under a dynamic condition "
                  "skips the code after it on some paths)"}


def truth(c):
    """The truth of a condition: a Python bool if ``c`` is static, else a ``ws.Boolean``."""
    if isinstance(c, Unbound):
        raise c.error()
    if isinstance(c, Boolean):
        return c
    if isinstance(c, Scalar):
        return c != 0
    if is_leaf(c):
        raise UnsupportedError(f"a dynamic {type(c).__name__} cannot be used as a condition; "
                               "compare it explicitly (e.g. `p != 0`)")
    return bool(c)


def is_dynamic(c) -> bool:
    return isinstance(c, Boolean)


# -- errors ------------------------------------------------------------------------------------

def conflict_error(e: Conflict, site: Site, labels, line_of) -> BindingTimeError:
    """The BindingTimeError for a merge conflict: variable, both values, both lines, the fix."""
    shown = [0, len(e.values) - 1] if len(e.values) > 2 else range(len(e.values))
    parts = []
    for k in shown:
        line = line_of(k)
        where = f"assigned at {site.file}:{line}" if line else "its value from before"
        parts.append(f"  {labels[min(k, len(labels) - 1)]}: {merge.describe(e.values[k])} "
                     f"({where})")
    what = _WHAT.get(site.kind, site.kind)
    msg = (f"cannot merge {merge.quote(e.label)} after the dynamic {what} at {site.where()}: "
           f"{e.why}.\n" + "\n".join(parts) + "\n" +
           format_location(site.loc, site.col) + "\n"
           "Expected: on every path either one static value, or dynamic values of one type with "
           "one static skeleton.\n"
           f"Fix: {e.fix}" + (" (or, if the loop should be unrolled while compiling, iterate over "
                              "ws.static_range(...))" if site.kind == "for" else "") + ".")
    return BindingTimeError(msg, where=site.where())


def display(name: str) -> str:
    """How the message names a variable (the rewriter's flags get descriptions)."""
    if name == "__ws_retval":
        return "the return value"
    if name == "__ws_ret":
        return "the flag recording whether a `return` ran"
    if name.startswith("__ws_brk"):
        return "the flag of a `break`"
    if name.startswith("__ws_cont"):
        return "the flag of a `continue`"
    return name


def plan_var(name: str, values: list, site: Site, labels, index: int = -1, identity=True):
    """merge.plan for variable ``name`` of ``site`` with errors worded for the user."""
    unbound = [isinstance(v, Unbound) for v in values]
    if any(unbound) and not all(unbound):
        return merge.Gone(_one_path_unbound(name, unbound, site, labels, index))
    try:
        return merge.plan(values, display(name), identity)
    except Conflict as e:
        lines = site.lines[index] if 0 <= index < len(site.lines) else ()
        raise conflict_error(e, site, labels,
                             lambda k: lines[min(k, len(lines) - 1)] if lines else 0) from None


def _one_path_unbound(name: str, unbound: list, site: Site, labels, index: int) -> Unbound:
    """The Unbound of variable ``name``, assigned on some paths of ``site`` only (``unbound``:
    per path, whether it has no value there): which path assigns it (and on which line), and,
    for an ``if``, the value of the condition that leaves it without one."""
    k_has, k_lacks = unbound.index(False), unbound.index(True)
    has, lacks = (labels[min(k, len(labels) - 1)] for k in (k_has, k_lacks))
    lines = site.lines[index] if 0 <= index < len(site.lines) else ()
    at = lines[min(k_has, len(lines) - 1)] if lines else 0
    if site.kind != "if" or len(unbound) != 2:
        return Unbound(name, f"it is assigned in {has} but not in {lacks} of the dynamic "
                             f"{_WHAT.get(site.kind, site.kind)} at {site.where()}, so afterwards "
                             "it has a value on one path only")
    return Unbound(
        name, f"it is assigned only in {has}{f' (line {at})' if at else ''} of the `if` at "
              f"{site.where()}, whose condition is dynamic (known only on the GPU), so after the "
              f"`if` it has no value when the condition is {'false' if k_has == 0 else 'true'}",
        f"assign `{name}` before the `if` (line {site.line}), or in both branches")


def promotion_origin(site: Site, between=("on one path", "on the other"), how=None):
    """The Origin of a static number promoted to dynamic by a merge at ``site``."""
    how = how or f"merged after the {site.kind} at {site.where()}"

    def origin(leaf):
        vals = merge.promoted_values(leaf)
        # prefer a static value for the second one: "0 before the loop and 1 after an iteration"
        later = next((v for v, s in zip(vals[1:], leaf.sources[1:]) if merge.is_number(s)),
                     vals[-1])
        return Origin(f"promoted to dynamic: {merge.quote(leaf.label)} is {vals[0]} "
                      f"{between[0]} and {later} {between[1]}, {how}")
    return origin


def not_any(*flags):
    """``not (f1 or f2 ...)`` for break/continue/return flags (pure: no short-circuit needed)."""
    dyn = None
    for f in flags:
        c = truth(f)
        if not is_dynamic(c):
            if c:
                return False
            continue
        dyn = c if dyn is None else dyn | c
    return True if dyn is None else ~dyn


IF_LABELS = ("the then-branch", "the else-branch")
GUARD_LABELS = ("the path that reaches this code", "a path that left earlier")


def branches(c: Boolean, fns, site: Site, get=None, set_=None, labels=IF_LABELS,
             value_label=None):
    """Trace ``fns`` (then, else; None for an empty else) as the regions of an ``scf.if`` on the
    dynamic ``c``, merge the variables ``site.names`` and, with ``value_label``, the values the
    functions return (which is returned). Objects the branches change in place are merged
    too (contents.py)."""
    watch = StaticWatch(fns)
    site, get, set_, contents = with_contents(site, get, set_)
    names = site.names if get is not None else ()
    init = get() if get is not None else ()
    b = builder()
    regions = (ir.Region(), ir.Region())
    ends, vals = [], []
    inside = maybe_current().dynamic_sites
    inside.append(site)                 # for a `raise` in a branch (control_flow.raising)
    try:
        for k, fn in enumerate(fns):
            if get is not None:
                refined = site.refine if k == 0 else site.refine_else
                set_(tuple((k == 1) if n in refined else v for n, v in zip(names, init)))
            with b.at(regions[k].block):
                vals.append(fn() if fn is not None else None)
            ends.append(get() if get is not None else ())
    finally:
        inside.pop()
    no_static_effects(watch, site)
    left = [_has_left(site, names, ends[k], k) for k in range(2)]
    nodes = []
    for i, n in enumerate(names):
        values = _unrefine(site, n, init[i], ends[0][i], ends[1][i])
        if contents is not None:
            values = contents.unify(values, ends)
        # A path that already left (return/break/continue) never reads its variables again
        # before they are reassigned; one unbound there is no reason to unbind it elsewhere.
        values = [UNDEF if left[k] and isinstance(v, Unbound) and not isinstance(
            values[1 - k], Unbound) else v for k, v in enumerate(values)]
        nodes.append(plan_var(n, values, site, labels, i))
    if value_label:
        nodes.append(plan_var(value_label, vals, site, labels))
    nodes = [_condition_as_value(n, c) for n in nodes]
    types = [t for n in nodes for t in merge.types(n)]
    for k in range(2):
        with b.at(regions[k].block):
            values = [v for n in nodes for v in merge.materialize(n, k)]
            builder().yield_(values)
    results = iter(())
    if types or any(len(r.block.ops) > 1 for r in regions):
        results = iter(builder().op("scf.if", (c.value,), types, regions=regions).results)
    origin = promotion_origin(site)
    out = [merge.rebuild(n, results, origin) for n in nodes]
    if get is not None:
        set_(tuple(out[:len(names)]))
    return out[-1] if value_label else None


def no_static_effects(watch, site: Site, why: str = "both branches are traced while compiling"
                      ) -> None:
    """BindingTimeError if a static container ``watch`` saw was changed in the region."""
    got = watch.changed()
    if got is None:
        return
    name, obj = got
    kind = type(obj).__name__
    what = _WHAT.get(site.kind, site.kind)
    raise BindingTimeError(
        f"the {kind} `{name}` was changed inside the dynamic {what} at {site.where()}\n"
        f"{format_location(site.loc)}\nIn a dynamic {what}, {why}, so the change to `{name}` (a "
        "static Python object) would happen at compile time whatever happens at run time — "
        "Python would make it only when (and as often as) that code runs.\nFix: change it "
        "outside the region; make the condition static (ws.static(...), ws.static_range); or "
        "keep the value in a variable (`n = n + 1` merges into a dynamic value).")


def is_flag(name: str) -> bool:
    """A flag of the rewriter: set by a `return`, `break` or `continue`."""
    return name.startswith(("__ws_ret", "__ws_brk_", "__ws_cont_")) and name != "__ws_retval"


def _has_left(site: Site, names, end, k: int) -> bool:
    """Has path k certainly left through a return/break/continue? (The else-path of a guard
    has, by construction.)"""
    if k == 1 and site.refine:
        return True
    return any(v is True and is_flag(n) for n, v in zip(names, end))


def _unrefine(site: Site, name: str, before, then_value, else_value) -> list:
    """A flag refined to False (then) / True (else) and left so still equals its value before
    the `if` on that path; if both paths left it so, it is simply unchanged (no region result)."""
    if (name in site.refine or name in site.refine_else) and (
            then_value is before or (name in site.refine and then_value is False)) and (
            else_value is before or (name in site.refine_else and else_value is True)):
        return [before, before]
    return [then_value, else_value]


def _condition_as_value(node, c: Boolean):
    """A static bool True on the then-path and False on the else-path is the condition itself
    (and the reverse its negation): no region result needed."""
    if isinstance(node, merge.Leaf) and node.promoted and node.type == ir.i1:
        a, b = node.sources
        if a is True and b is False:
            return merge.Keep(c)
        if a is False and b is True:
            return merge.Keep(~c)
    return node


class Checkpoint:
    """The end of the current block now; ``rollback()`` drops what was emitted since. (Outside
    a trace nothing is emitted and rollback does nothing.)"""

    def __init__(self):
        ctx = maybe_current()
        self.block = ctx.builder.block if ctx is not None else None
        self.size = len(self.block.ops) if self.block is not None else 0

    def rollback(self) -> None:
        if self.block is not None:
            del self.block.ops[self.size:]

    def emitted(self) -> bool:
        return self.block is not None and len(self.block.ops) > self.size
