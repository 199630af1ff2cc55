"""scf.if / scf.for / scf.while / func.call: structured control flow under an active mask.

SIMT semantics: a divergent ``if`` runs ``then`` with mask & c and ``else`` with mask & ~c and
merges results per lane; loops keep iterating while any active lane continues, lanes that are
done are masked off and keep their last carried values. When every active lane agrees (the
common case) the uniform path runs without mask changes or merges: an ``if`` runs one branch, a
``for`` with warp-uniform bounds iterates a Python ``range``.

Each op has a plain step and a generator step; the generator form is used when a region (or the
callee) can wait at a barrier, and is the same code with ``yield from`` at region entry.
"""
from __future__ import annotations

import numpy as np

from ..errors import SimulatorError
from ..ir.core import Operation
from .compiler import where
from .dtypes import LANES, register_dtype
from .registry import handler

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
    """Slots and checks of one scf.for, shared by its plain and waiting steps."""

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
                             "would never finish. Use a nonzero step.", where=where(self.op))

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

    if not cx.is_blocking(op):
        body = cx.block(op.regions[0].block)

        def for_(s, w):
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
                body(s, w)
                if k == n:
                    carried = [s[y] for y in yields]
                else:
                    carried = [np.where(go, s[y], v) for y, v in zip(yields, carried)]
                iv = np.where(go, iv + step, iv)
            w.set_mask(mask, n)
            f.finish(s, carried)
        return for_

    body_gen = cx.generator_block(op.regions[0].block)

    def for_waiting(s, w):
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
                    yield from body_gen(s, w)
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
            yield from body_gen(s, w)
            if k == n:
                carried = [s[y] for y in yields]
            else:
                carried = [np.where(go, s[y], v) for y, v in zip(yields, carried)]
            iv = np.where(go, iv + step, iv)
        w.set_mask(mask, n)
        f.finish(s, carried)
    return for_waiting


# -- scf.while --------------------------------------------------------------------------------
@handler("scf.while")
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

    if not cx.is_blocking(op):
        run_before, run_after = cx.block(before_b), cx.block(after_b)

        def while_(s, w):
            mask, n = w.mask, w.nactive
            live, k = mask, n
            vals = [s[i] for i in init]
            results = None
            while True:
                for a, v in zip(before_args, vals):
                    s[a] = v
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
                run_after(s, w)
                vals = [s[y] for y in after_y]
            finish(s, w, mask, n, results)
        return while_

    gen_before, gen_after = cx.generator_block(before_b), cx.generator_block(after_b)

    def while_waiting(s, w):
        mask, n = w.mask, w.nactive
        live, k = mask, n
        vals = [s[i] for i in init]
        results = None
        while True:
            for a, v in zip(before_args, vals):
                s[a] = v
            yield from gen_before(s, w)
            go = s[cond] & live
            kc = _count(go)
            results = exit_lanes(s, live, k, go, kc, results)
            if kc == 0:
                break
            live, k = go, kc
            w.set_mask(live, k)
            for a, x in zip(after_args, forwarded):
                s[a] = s[x]
            yield from gen_after(s, w)
            vals = [s[y] for y in after_y]
        finish(s, w, mask, n, results)
    return while_waiting


# -- func.call --------------------------------------------------------------------------------
@handler("func.call")
def _call(op: Operation, cx):
    callee = cx.program.function(op.attrs["callee"])
    args = cx.slots(op.operands)
    res = cx.slots(op.results)

    def enter(s):
        frame = [None] * callee.nslots
        for d, a in zip(callee.arg_slots, args):
            frame[d] = s[a]
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
