"""scf.if / scf.for / scf.while / func.call: structured control flow under an active mask.

SIMT semantics: a divergent ``if`` runs ``then`` with mask & c and ``else`` with mask & ~c and
merges results per lane; loops keep iterating while any active lane continues, lanes that are
done are masked off and keep their last carried values. When every active lane agrees (the
common case) the uniform path runs without mask changes or merges: an ``if`` runs one branch, a
``for`` with warp-uniform bounds iterates a Python ``range``.

Each op has a plain step and a generator step; the generator form is used when a region (or the
callee) can wait at a barrier. For ``scf.if`` and ``func.call`` these are two copies of the same
code, the generator one with ``yield from`` at region entry (an ``if`` runs too often to pay for
a generator). A loop is written once, as a generator that ``yield from``s its regions only when
they can wait; its plain step drives that generator, which never yields (measured: no slower).
An ``scf.while`` that reads memory always takes the generator form: it yields a ``SpinWait``
every ``SPIN_ITERATIONS`` iterations, so that a warp polling a flag lets the writer run (see
sim/scheduler.py for the livelock rule). An ``scf.while`` whose regions only compute on
registers (``_pure``: no op with the READS_MEMORY or WAITS trait, no clock) compares its state (active lanes and
carried values) every ``FROZEN_CHECK`` iterations with the previous check's: equal states mean
the loop repeats itself forever, a ``LivelockError`` naming the loop's line.
"""
from __future__ import annotations

import numpy as np

from ..errors import LivelockError, SimulatorError
from ..ir import Trait, ops_with
from ..ir.core import Operation
from .compiler import where
from .dtypes import LANES, register_dtype
from .registry import handler
from .scheduler import SPIN_ITERATIONS, SpinWait

_count = np.count_nonzero


@handler("scf.yield", "scf.condition", "func.return")
def _terminator(op: Operation, cx):
    return None   # the parent op reads the terminator's operands from their slots


# -- scf.if -----------------------------------------------------------------------------------
@handler("scf.if")
def _if(op: Operation, cx):
    c = cx.slot(op.operands[0])
    then_b, else_b = op.regions[0].block, op.regions[1].block
    res = cx.slots(op.results)
    then_y = cx.terminator_slots(then_b, "scf.yield")
    else_y = cx.terminator_slots(else_b, "scf.yield")
    then_pairs, else_pairs = list(zip(res, then_y)), list(zip(res, else_y))
    triples = list(zip(res, then_y, else_y))

    def merge(s, cm):
        for r, t, e in triples:
            s[r] = np.where(cm, s[t], s[e])

    if not cx.is_blocking(op):
        run_then, run_else = cx.block(then_b), cx.block(else_b)

        def if_(s, w):
            mask, n = w.mask, w.nactive
            cm = s[c] & mask
            k = _count(cm)
            if k == n:
                run_then(s, w)
                for r, y in then_pairs:
                    s[r] = s[y]
            elif k == 0:
                run_else(s, w)
                for r, y in else_pairs:
                    s[r] = s[y]
            else:
                w.set_mask(cm, k)
                run_then(s, w)
                w.set_mask(mask ^ cm, n - k)
                run_else(s, w)
                w.set_mask(mask, n)
                merge(s, cm)
        return if_

    gen_then, gen_else = cx.generator_block(then_b), cx.generator_block(else_b)

    def if_waiting(s, w):
        mask, n = w.mask, w.nactive
        cm = s[c] & mask
        k = _count(cm)
        if k == n:
            yield from gen_then(s, w)
            for r, y in then_pairs:
                s[r] = s[y]
        elif k == 0:
            yield from gen_else(s, w)
            for r, y in else_pairs:
                s[r] = s[y]
        else:
            w.set_mask(cm, k)
            yield from gen_then(s, w)
            w.set_mask(mask ^ cm, n - k)
            yield from gen_else(s, w)
            w.set_mask(mask, n)
            merge(s, cm)
    return if_waiting


# -- scf.for ----------------------------------------------------------------------------------
class _ForShape:
    """Slots and checks of one scf.for."""

    def __init__(self, op: Operation, cx):
        self.op = op
        self.lb, self.ub, self.st = cx.slots(op.operands[:3])
        self.init = cx.slots(op.operands[3:])
        body = op.regions[0].block
        self.iv = cx.slot(body.args[0])
        self.args = cx.slots(body.args[1:])
        self.yields = cx.terminator_slots(body, "scf.yield")
        self.res = cx.slots(op.results)
        self.dtype = register_dtype(op.operands[0].type)

    def uniform_range(self, s, w):
        """``range`` of the iteration values when all active lanes share lb, ub and step."""
        lbv, ubv, stv = s[self.lb], s[self.ub], s[self.st]
        if w.nactive != LANES:
            m = w.mask
            lbv, ubv, stv = lbv[m], ubv[m], stv[m]
        l0, u0, s0 = lbv[0], ubv[0], stv[0]
        if _count(lbv != l0) or _count(ubv != u0) or _count(stv != s0):
            return None
        if s0 == 0:
            self.zero_step(w)
        return range(int(l0), int(u0), int(s0))

    def zero_step(self, w):
        raise SimulatorError(f"scf.for at {where(self.op)} has step 0 (in warp {w.index}); it "
                             "would never finish.\nExpected: a nonzero step; got 0.\nFix: pass "
                             "a nonzero step to range(), or skip the loop when the step is 0 "
                             "(`if step != 0:`).", where=where(self.op))

    def lane_start(self, s, w):
        """(iv, ub, step, up) vectors for a loop whose lanes have different bounds."""
        stv = s[self.st]
        if _count((stv == 0) & w.mask):
            self.zero_step(w)
        return s[self.lb], s[self.ub], stv, stv > 0

    def finish(self, s, carried):
        for r, v in zip(self.res, carried):
            s[r] = v


@handler("scf.for")
def _for(op: Operation, cx):
    f = _ForShape(op, cx)
    iv_slot, arg_slots, yields, init, dtype = f.iv, f.args, f.yields, f.init, f.dtype

    # one implementation, a generator; the plain step drives it (module docstring)
    body = cx.block(op.regions[0].block)
    body_waits = cx.block_blocks(op.regions[0].block)

    def for_loop(s, w):
        carried = [s[i] for i in init]
        iters = f.uniform_range(s, w)
        if iters is not None:
            if iters:
                iv = np.full(LANES, iters[0], dtype)
                step = np.full(LANES, iters.step, dtype)
                for _ in iters:
                    s[iv_slot] = iv
                    for a, v in zip(arg_slots, carried):
                        s[a] = v
                    if body_waits:
                        yield from body(s, w)
                    else:
                        body(s, w)
                    carried = [s[y] for y in yields]
                    iv = iv + step
            f.finish(s, carried)
            return
        mask, n = w.mask, w.nactive
        iv, ub, step, up = f.lane_start(s, w)
        while True:
            go = np.where(up, iv < ub, iv > ub) & mask
            k = _count(go)
            if k == 0:
                break
            w.set_mask(go, k)
            s[iv_slot] = iv
            for a, v in zip(arg_slots, carried):
                s[a] = v
            if body_waits:
                yield from body(s, w)
            else:
                body(s, w)
            if k == n:
                carried = [s[y] for y in yields]
            else:
                carried = [np.where(go, s[y], v) for y, v in zip(yields, carried)]
            iv = np.where(go, iv + step, iv)
        w.set_mask(mask, n)
        f.finish(s, carried)

    if cx.is_blocking(op):
        return for_loop

    def for_(s, w):
        for _ in for_loop(s, w):
            raise SimulatorError(f"internal: scf.for at {where(op)} yielded in its plain form")
    return for_


# -- scf.while --------------------------------------------------------------------------------
_CLOCKS = frozenset({"clock", "clock64", "globaltimer"})


FROZEN_CHECK = 4096
"""Iterations between two state comparisons of a while loop that reads no memory."""


def _pure(op: Operation) -> bool:
    """Whether the loop's next iteration depends only on its carried values: its regions read
    no memory (no op with the ``READS_MEMORY`` trait), wait for nothing (``WAITS``) and read no
    clock."""
    unsettled = ops_with(Trait.READS_MEMORY) | ops_with(Trait.WAITS)
    return not _reads_clock(op) and not any(
        inner.name in unsettled for inner in op.walk() if inner is not op)


def may_spin(op: Operation) -> bool:
    """Whether scf.while ``op`` reads memory synchronously (an op with the ``READS_MEMORY``
    trait and neither ``WAITS`` nor ``ASYNC``; a function call counts): it may be polling for
    another warp's write, so it yields to the scheduler every ``SPIN_ITERATIONS`` iterations (a
    ``SpinWait``) and cannot be a plain Python loop. (A loop around an mbarrier wait is left to
    the wait, which suspends the warp itself; an async copy's read is not seen by the loop.)"""
    polls = ops_with(Trait.READS_MEMORY) - ops_with(Trait.WAITS) - ops_with(Trait.ASYNC)
    return any(inner.name in polls for inner in op.walk())


def _reads_clock(op: Operation) -> bool:
    return any(inner.name == "nvvm.sreg" and inner.attrs.get("reg") in _CLOCKS
               for inner in op.walk())


def condition_slice(op: Operation):
    """Indices of ``scf.while`` ``op``'s carried values that its condition depends on, closed
    under the loop's update (a carried value in the set is updated from values in the set, the
    loop's memory reads and values defined outside the loop), or None when the loop's regions
    write memory (an op with the WRITES_MEMORY trait: the write could change what the condition
    reads). A spin loop whose sliced state and active lanes stay the same has a condition that
    only another warp can change, whatever its other carried values do (a counter ``f += 1``
    beside ``while flag[0] == 0``), so it is idle for the scheduler's livelock rule."""
    writes = ops_with(Trait.WRITES_MEMORY)
    owner_of_block, defining = {}, {}
    for inner in op.walk():
        if inner is op:
            continue
        if inner.name in writes:
            return None
        for r in inner.regions:
            owner_of_block[id(r.block)] = inner
        for v in inner.results:
            defining[id(v)] = inner
    before_b, after_b = op.regions[0].block, op.regions[1].block
    before = {id(a): i for i, a in enumerate(before_b.args)}
    after = {id(a): j for j, a in enumerate(after_b.args)}
    condition, yielded = before_b.terminator, after_b.terminator
    if condition is None or yielded is None:
        return None
    outside_uses: dict = {}

    def uses(o) -> list:
        """The values ``o`` and the ops nested in it use (what its results depend on)."""
        got = outside_uses.get(id(o))
        if got is None:
            got = outside_uses[id(o)] = [v for x in o.walk() for v in x.operands]
        return got

    def carried(values) -> set:
        found, todo, seen = set(), list(values), set()
        while todo:
            v = todo.pop()
            if id(v) in seen:
                continue
            seen.add(id(v))
            if id(v) in before:
                found.add(before[id(v)])
            elif id(v) in after:                # forwarded from the before region
                todo.append(condition.operands[1 + after[id(v)]])
            elif id(v) in defining:
                todo.extend(uses(defining[id(v)]))
            elif v.is_block_arg and id(v.owner) in owner_of_block:
                todo.extend(uses(owner_of_block[id(v.owner)]))
        return found

    part = carried(condition.operands[:1])
    grown = True
    while grown:
        more = carried([yielded.operands[i] for i in part]) - part
        grown = bool(more)
        part |= more
    return sorted(part)


def _same_state(a: list, b: list) -> bool:
    return all(x is y or np.array_equal(x, y) for x, y in zip(a, b))


@handler("scf.while", blocking=may_spin)
def _while(op: Operation, cx):
    before_b, after_b = op.regions[0].block, op.regions[1].block
    init = cx.slots(op.operands)
    before_args, after_args = cx.slots(before_b.args), cx.slots(after_b.args)
    cond_slots = cx.terminator_slots(before_b, "scf.condition")
    cond, forwarded = cond_slots[0], cond_slots[1:]
    after_y = cx.terminator_slots(after_b, "scf.yield")
    res = cx.slots(op.results)

    def exit_lanes(s, live, k, go, kc, results):
        """Record the forwarded values of the lanes leaving the loop this iteration."""
        if kc == k:
            return results
        fwd = [s[x] for x in forwarded]
        if results is None:
            return fwd
        leaving = live ^ go
        return [np.where(leaving, f, r) for f, r in zip(fwd, results)]

    def finish(s, w, mask, n, results):
        w.set_mask(mask, n)
        for r, v in zip(res, results):
            s[r] = v

    # one implementation, a generator; the plain step drives it (module docstring). A loop that
    # may spin yields a SpinWait every SPIN_ITERATIONS iterations.
    run_before, run_after = cx.block(before_b), cx.block(after_b)
    before_waits, after_waits = cx.block_blocks(before_b), cx.block_blocks(after_b)
    spins, timed = may_spin(op), _reads_clock(op)
    frozen_check = not spins and _pure(op)
    sliced = condition_slice(op) if spins else None     # the state a spin's idleness compares
    # reports name the loop condition's line: the while statement (the op has the body's)
    site = next((o for o in before_b.ops if o.loc is not None), op)

    def while_loop(s, w):
        mask, n = w.mask, w.nactive
        live, k = mask, n
        vals = [s[i] for i in init]
        results = None
        count = total = idle_iterations = 0
        last = None
        while True:
            for a, v in zip(before_args, vals):
                s[a] = v
            if before_waits:
                yield from run_before(s, w)
            else:
                run_before(s, w)
            go = s[cond] & live
            kc = _count(go)
            results = exit_lanes(s, live, k, go, kc, results)
            if kc == 0:
                break
            live, k = go, kc
            w.set_mask(live, k)
            for a, x in zip(after_args, forwarded):
                s[a] = s[x]
            if after_waits:
                yield from run_after(s, w)
            else:
                run_after(s, w)
            vals = [s[y] for y in after_y]
            if spins:
                count += 1
                if count == SPIN_ITERATIONS:
                    total += count
                    count = 0
                    state = [live] + (vals if sliced is None else [vals[i] for i in sliced])
                    idle = not timed and last is not None and _same_state(last, state)
                    idle_iterations = idle_iterations + SPIN_ITERATIONS if idle else 0
                    last = state
                    if total >= w.cta.max_loop > 0:
                        raise _unbounded(site, w, total)
                    yield SpinWait(site, idle, total, idle_iterations)
            elif frozen_check:
                count += 1
                if count == FROZEN_CHECK:
                    total += count
                    count = 0
                    state = [live] + vals
                    if last is not None and _same_state(last, state):
                        raise _endless(site, w, total)
                    if total >= w.cta.max_loop > 0:
                        raise _unbounded(site, w, total)
                    last = state
        finish(s, w, mask, n, results)

    if cx.is_blocking(op):
        return while_loop

    def while_(s, w):
        for _ in while_loop(s, w):
            raise SimulatorError(f"internal: scf.while at {where(op)} yielded in its plain form")
    return while_


def _endless(site, w, total: int) -> LivelockError:
    at = where(site)
    return LivelockError(
        f"endless loop in warp {w.index} of block ({','.join(map(str, w.cta.ctaid))}): the "
        f"while loop at {at} has the same state (active lanes and carried values) after "
        f"{total} iterations as {FROZEN_CHECK} iterations earlier, and its body reads no "
        "memory, so it repeats forever (here and on the GPU). Fix: make the condition depend "
        "on values the body changes (e.g. update the loop variable), or bound the loop.",
        where=at)


def _unbounded(site, w, total: int) -> LivelockError:
    at = where(site)
    return LivelockError(
        f"unbounded loop in warp {w.index} of block ({','.join(map(str, w.cta.ctaid))}): the "
        f"while loop at {at} ran {total} iterations without exiting (WARPSTAGE_SIM_MAX_LOOP "
        f"= {w.cta.max_loop}); its state changes every iteration, so it is not seen as idle, "
        "but it never ends (a spin loop with a retry counter, or a condition that no write "
        "makes false). Fix: bound the loop (e.g. give up after N retries), check that the "
        "value it waits for is written, or, for a loop that is meant to run this long, set "
        "WARPSTAGE_SIM_MAX_LOOP to a larger count (0: no bound).", where=at)


# -- func.call --------------------------------------------------------------------------------
@handler("func.call")
def _call(op: Operation, cx):
    callee = cx.program.function(op.attrs["callee"])
    args = cx.slots(op.operands)
    res = cx.slots(op.results)

    def enter(s):
        # the callee's parameters are its first slots, in order (FunctionCompiler.compile
        # numbers them before anything else), so its frame starts as the argument list
        frame = [s[a] for a in args]
        frame += [None] * (callee.nslots - len(frame))
        return frame

    def leave(s, frame):
        for r, x in zip(res, callee.result_slots):
            s[r] = frame[x]

    if not cx.is_blocking(op):
        def call(s, w):
            frame = enter(s)
            callee.run(frame, w)
            leave(s, frame)
        return call

    def call_waiting(s, w):
        frame = enter(s)
        if callee.blocking:
            yield from callee.run(frame, w)
        else:
            callee.run(frame, w)
        leave(s, frame)
    return call_waiting
