"""Loops in kernel code: static iteration in Python, dynamic loops as ``scf.for`` / ``scf.while``.

- ``for x in <anything but a dynamic range>`` (tuple, list, ``ws.static_range``, ...) is a Python
  loop: its body is traced once per item (unrolled). A ``break``/``return`` under a dynamic
  condition makes the remaining iterations conditional (one ``scf.if`` each).
- ``for i in range(...)`` / ``ws.range(...)`` is an ``scf.for``; if a ``break``/``return`` can
  end it early, an ``scf.while`` that carries the index instead.
- ``while c:`` runs in Python while ``c`` and the break/return flags are static; from the first
  check where either is dynamic, the remaining iterations are one ``scf.while``.

Loop-carried variables are found by tracing. The first trace carries every variable the body
assigns whose value before the loop is dynamic; static ones enter the body as they are. A name
holding a mutable object with dynamic leaves (a list, a protocol object) is guessed rebound by
the body (``acc = f(acc)``, ``state = state.advance()``): it enters as a fresh object, and the
object it held is carried as its contents (contents.py); if the body keeps the object instead,
that trace is dropped and the next carries the name as the object it held. If after
the body a variable differs from its value before the loop (a static number changed, as in
``phase ^= 1``; a static became dynamic; a dynamic one is new), the trace is dropped and the body
traced again with it carried too (promoted per merge.py), until a trace agrees with its own
assumptions. So a body may be traced more than once: its trace-time Python side effects
(printing, appending to a list) may repeat.
"""
from __future__ import annotations

import builtins
import itertools
from dataclasses import replace

from .. import ir
from ..errors import CompilationError
from ..lang.control import DynamicRange, unroll_error
from ..lang.scalars import DTYPES, Boolean
from . import merge
from . import regions as cf
from .contents import StaticWatch, with_contents
from ..core.unbound import Unbound
from ..core.trace import Origin, builder, maybe_current

__all__ = ["for_stmt", "while_stmt", "STATIC_WHILE_LIMIT"]

STATIC_WHILE_LIMIT = 100_000
"""Iterations after which a ``while`` whose condition stays static is reported as endless."""


def _running(state: tuple, site) -> object:
    """True/False (static) or a Boolean: no break/return flag of the loop is set."""
    if not site.stop:
        return True
    return cf.not_any(*(state[site.names.index(f)] for f in site.stop))


def for_stmt(iterable, body, get, set_, site) -> None:
    """``for <target> in iterable: body(item)`` (see the module docstring)."""
    if isinstance(iterable, DynamicRange):
        if maybe_current() is not None:
            _Loop(site, get, set_).run_range(iterable, body)
            return
        # not tracing (the rewritten function called as plain Python): Python's range
        iterable = builtins.range(iterable.start, iterable.stop, iterable.step)
    guarded = replace(site, refine=site.stop)
    ctx = maybe_current()
    limit = getattr(getattr(ctx, "options", None), "max_unroll", 0) if ctx is not None else 0
    for item in iterable:
        if limit:
            ctx.unrolled += 1
            if ctx.unrolled > limit:
                raise unroll_error(site.where(), limit, iterable)
        running = _running(get(), site)
        if running is False:
            break
        if running is True:
            body(item)
        else:
            cf.branches(running, (lambda: body(item), None), guarded, get, set_,
                        labels=("the iteration", "the skipped iteration"))


def while_stmt(test, body, get, set_, site) -> None:
    """``while test(): body()`` (see the module docstring)."""
    for count in itertools.count():
        if count >= STATIC_WHILE_LIMIT:
            raise CompilationError(
                f"the `while` loop at {site.where()} ran {STATIC_WHILE_LIMIT} iterations while "
                "compiling: its condition stayed static, so it is unrolled, and it does not end.\n"
                "Fix: if it should be a loop on the GPU, make its condition dynamic (e.g. compare "
                "a ws.Int32), or use `for i in range(n)`.", where=site.where())
        state = get()
        running = _running(state, site)
        if running is False:
            return
        if isinstance(running, Boolean):
            break
        point = cf.Checkpoint()
        _, get_all, set_all, _ = with_contents(site, get, set_)  # to undo in-place changes too
        saved = get_all()
        c = cf.truth(test())
        if isinstance(c, Boolean):
            point.rollback()
            set_all(saved)
            break
        if not c:
            return
        body()
        if site.stop and isinstance(_running(get(), site), Boolean):
            point.rollback()
            set_all(saved)
            break
    _Loop(site, get, set_).run_while(test, body)


class _Loop:
    """One dynamic loop being traced (see the module docstring for the method)."""

    def __init__(self, site, get, set_):
        self.watch = StaticWatch()
        site, get, set_, self.contents = with_contents(site, get, set_)
        self.site = site
        self.get = get
        self.set_ = set_
        self.names = site.names
        self.init = get()
        self.seen: list = []     # states from dropped traces (only their types are used)
        self.guessed: list = []  # indices of the names guessed rebound (first_plans)
        self.entered: list = []  # the objects the guessed names entered the body with
        self.origin = cf.promotion_origin(site, ("before the loop", "after an iteration"),
                                          f"carried by the {site.kind} loop at {site.where()}")

    # -- plans ---------------------------------------------------------------------------------
    def first_plans(self) -> list:
        """The first guess of the carried variables: a slot for every dynamic value, and a name
        that holds a mutable object (a list, a protocol object) carried as rebound by the body
        (``acc = f(acc)``), not as that object changed in place (contents.py); ``guess_wrong``
        checks the guess after the trace."""
        if self.contents is not None:
            init = self.contents.guess_rebound(self.init)
            self.guessed = [i for i, (a, b) in enumerate(zip(self.init, init)) if a is not b]
            if self.guessed:
                return self.plans(identity=False, first=init)
        return self.plans(identity=False)

    def guess_wrong(self, end) -> bool:
        """After the first trace: does a name hold, after the body, the object a guessed name
        entered it with (the body kept the object, ``acc = acc`` or an assignment not taken)?
        Then the trace is dropped and the loop traced again without the guess, the name carried
        as the object it held. Where the guess holds, the trace is the one a first trace
        without it would have led to: its merge (``Contents.unify``) carries a rebound root's
        name as that root's contents before the loop, which is the guess."""
        if not self.guessed:
            return False
        n = len(self.names) - len(self.contents.roots)
        wrong = any(end[j] is obj for obj in self.entered for j in range(n))
        self.guessed, self.entered = [], []
        return wrong

    def plans(self, extra=(), identity=True, first=None) -> list:
        paths = [self.init if first is None else first, *self.seen, *extra]
        labels = ("before the loop",) + ("the loop body",) * (len(paths) - 1)
        out = []
        for i, name in enumerate(self.names):
            values = [p[i] for p in paths]
            if self.contents is not None:
                values = self.contents.unify(values, paths)
            node = cf.plan_var(name, values, self.site, labels, i, identity)
            if isinstance(node, merge.Gone) and isinstance(values[0], Unbound) and not all(
                    isinstance(v, Unbound) for v in values):
                node = merge.Gone(Unbound(name, self._unbound_reason(name),
                                          self._unbound_fix(name)))
            out.append(node)
        return out

    def _unbound_reason(self, name) -> str:
        what = f"the dynamic `{self.site.kind}` loop at {self.site.where()}"
        if name in self.site.targets:
            return (f"it is the loop variable of {what}, and a dynamic loop may run zero times, "
                    "so it has no value after the loop")
        return (f"it is first assigned inside {what}; it has no value before the loop, so it is "
                "not carried from one iteration to the next nor out of the loop (which may run "
                "zero times)")

    def _unbound_fix(self, name) -> str:
        return (f"assign `{name}` before the loop (line {self.site.line}), e.g. `{name} = 0`, so "
                f"the loop carries it out; or use `{name}` only inside the loop body")

    def entry_state(self, carried, args, reset_stop=False) -> tuple:
        out = []
        for name, node, v0 in zip(self.names, carried, self.init):
            v = merge.rebuild(node, args, self.origin) if merge.has_slots(node) else v0
            if reset_stop and name in self.site.stop:
                v = False        # inside the body no break/return flag is set yet
            out.append(v)
        self.entered = [out[i] for i in self.guessed]
        return tuple(out)

    @staticmethod
    def values(nodes, path) -> list:
        return [v for n in nodes for v in merge.materialize(n, path)]

    @staticmethod
    def slot_types(nodes) -> list:
        return [t for n in nodes for t in merge.types(n)]

    def finish(self, final, results) -> None:
        cf.no_static_effects(self.watch, self.site, "its body is traced while compiling, not "
                             "run once per iteration")
        self.set_(tuple(merge.rebuild(n, results, self.origin) for n in final))

    def attempts(self):
        limit = 2 * len(self.names) + 4
        for k in range(limit):
            yield k
        raise CompilationError(f"the types of the variables carried by the loop at "
                               f"{self.site.where()} did not settle after {limit} traces; this "
                               "is a warpstage bug — please report it", where=self.site.where())

    def settled(self, carried, final) -> bool:
        return all(merge.same_shape(a, b) for a, b in zip(carried, final))

    def stop_carried(self, final) -> bool:
        return any(merge.has_slots(final[self.names.index(f)]) for f in self.site.stop)

    # -- range loops ---------------------------------------------------------------------------
    def run_range(self, spec: DynamicRange, body) -> None:
        self.watch.watch_code((body,))
        lb, ub, step = spec.bounds()
        form = "for"
        carried = self.first_plans()
        for _ in self.attempts():
            if form == "for":
                block, end = self.trace_for(carried, lb, body)
                if self.guess_wrong(end):
                    carried = self.plans(identity=False)
                    continue
                final = self.plans([end])
                if self.stop_carried(final):
                    form = "while"          # a break/return can end it early
                    self.seen.append(end)
                    carried = self.plans()
                    continue
                if self.settled(carried, final):
                    return self.commit_for(final, block, lb, ub, step, spec.unroll)
                self.seen.append(end)
            else:
                trace = self.trace_range_while(carried, ub, step, spec.step_sign, body)
                if self.guess_wrong(trace[-1]):
                    carried = self.plans(identity=False)
                    continue
                final = self.plans([trace[-2], trace[-1]])
                if self.settled(carried, final):
                    return self.commit_while(final, trace, lb.value, step)
                self.seen.extend(trace[-2:])
            carried = self.plans()

    def _index(self, block):
        t = block.args[0].type
        return DTYPES[t]._wrap(block.args[0], Origin(f"the index of the `for` loop at "
                                                     f"{self.site.where()}"))

    def trace_for(self, carried, lb, body):
        block = ir.Block([lb.value.type] + self.slot_types(carried))
        with builder().at(block):
            self.set_(self.entry_state(carried, iter(block.args[1:])))
            body(self._index(block))
            end = self.get()
        return block, end

    def commit_for(self, final, block, lb, ub, step, unroll) -> None:
        with builder().at(block):
            builder().yield_(self.values(final, -1))
        inits = self.values(final, 0)
        attrs = {"unroll": unroll} if unroll else None
        op = builder().op("scf.for", (lb.value, ub.value, step.value, *inits),
                          self.slot_types(final), attrs, (ir.Region(block),))
        self.finish(final, iter(op.results))

    def trace_range_while(self, carried, ub, step, sign, body):
        types = [ub.value.type] + self.slot_types(carried)
        before, after = ir.Block(types), ir.Block(types)
        with builder().at(before):
            iv = self._index(before)
            state = self.entry_state(carried, iter(before.args[1:]))
            self.set_(state)
            if sign == 1:
                cond = iv < ub
            elif sign == -1:
                cond = iv > ub
            else:
                cond = ((step > 0) & (iv < ub)) | ((step < 0) & (iv > ub))
            running = _running(state, self.site)
            cond = cond & running if isinstance(running, Boolean) else (cond if running else False)
            cond_state = self.get()
        with builder().at(after):
            iv_after = self._index(after)
            self.set_(self.entry_state(carried, iter(after.args[1:]), reset_stop=True))
            body(iv_after)
            end = self.get()
        return before, after, (iv, cond), iv_after, cond_state, end

    def commit_while(self, final, trace, init_iv, step=None) -> None:
        before, after, (iv, cond), iv_after = trace[:4]
        with builder().at(before):
            if not isinstance(cond, Boolean):
                cond = Boolean._wrap(builder().constant(ir.i1, bool(cond)))
            head = [iv.value] if iv is not None else []
            builder().condition(cond.value, head + self.values(final, -2))
        with builder().at(after):
            head = [(iv_after + step).value] if iv is not None else []
            builder().yield_(head + self.values(final, -1))
        inits = ([init_iv] if iv is not None else []) + self.values(final, 0)
        types = [v.type for v in inits[:1]] if iv is not None else []
        op = builder().op("scf.while", inits, types + self.slot_types(final),
                          regions=(ir.Region(before), ir.Region(after)))
        self.finish(final, iter(op.results[1 if iv is not None else 0:]))

    # -- while loops ---------------------------------------------------------------------------
    def run_while(self, test, body) -> None:
        self.watch.watch_code((test, body))
        carried = self.first_plans()
        for _ in self.attempts():
            trace = self.trace_while(carried, test, body)
            if self.guess_wrong(trace[-1]):
                carried = self.plans(identity=False)
                continue
            final = self.plans([trace[-2], trace[-1]])
            if self.settled(carried, final):
                return self.commit_while(final, trace, None)
            self.seen.extend(trace[-2:])
            carried = self.plans()

    def trace_while(self, carried, test, body):
        types = self.slot_types(carried)
        before, after = ir.Block(types), ir.Block(types)
        with builder().at(before):
            state = self.entry_state(carried, iter(before.args))
            self.set_(state)
            cond = self.condition(test, _running(state, self.site))
            cond_state = self.get()
        with builder().at(after):
            self.set_(self.entry_state(carried, iter(after.args), reset_stop=True))
            body()
            end = self.get()
        return before, after, (None, cond), None, cond_state, end

    def condition(self, test, running):
        """``running and test()``, evaluating ``test`` only when running."""
        if running is False:
            return False
        if running is True:
            return cf.truth(test())
        state = self.get()
        point = cf.Checkpoint()
        c = cf.truth(test())
        if not isinstance(c, Boolean) and not point.emitted():
            return running if c else False
        point.rollback()
        self.set_(state)
        return cf.branches(running, (lambda: cf.truth(test()), lambda: False),
                           replace(self.site, refine=self.site.stop), self.get, self.set_,
                           labels=("the condition", "a finished loop"),
                           value_label="the loop condition")
