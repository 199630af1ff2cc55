"""Loop-invariant code motion: a pure op at the top level of a loop body whose operands are all
defined outside the loop moves to just before the loop.

Contract: valid IR in, valid IR out, same behaviour. The loops are ``scf.for`` (its body) and
``scf.while`` (its before and after regions). A candidate has the ``PURE`` trait (no side
effect, no memory read), no regions, and is either an op with operands or ``arith.constant``
(a pure op without operands reads machine state, as in ``passes/cse``: ``nvvm.sreg`` reads
``clock64`` as well as ``tid.x``); integer ``arith.div`` / ``arith.rem`` are candidates only
with a constant divisor other than 0 and -1 (a loop that runs zero times must not trap or
overflow where it did not before). Only the ops at the top level of a body move: an op inside an
``scf.if`` of the body stays (it runs only when its condition holds), and an op that reads a
body argument (the induction variable, a carried value) or a result of an op that stays, stays.
Loops are visited innermost first, so an op hoisted out of an inner loop is a candidate of the
outer one. Hoisted ops keep their order.

First, a carried value that every iteration passes on unchanged (``scf.for``: the body yields
its own argument back; ``scf.while``: the condition forwards the before region's argument and
the after region yields its own argument back) is its initial value throughout: its uses in
the body, and the uses of the loop's result, read the initial value instead (the loop keeps
the slot; LLVM folds the phi). The trace carries every variable a loop body may assign, so a
FlashAttention loop carries its strides and base pointers this way, and without this step no
address arithmetic on them would be invariant (LLVM's InstCombine does the same to its phis
before its LICM runs). Two walks, each linear in the module's size.

Why it runs (only with ``CompileOptions.llvm_pipeline == 'light'``, ``passes/pipeline``):
LLVM's O3 pipeline hoists loop invariants itself (its LICM pass); the light pipeline
(``backend/llvm_c.LIGHT_PASSES``) has no LICM (llvmlite exposes none), which left the address
arithmetic of the mma.sync FlashAttention's K/V loop inside the loop (72 bytes of spills) and
is the suspect of the wgmma D=64 kernel's 3.5% loss (docs/compile-time.md, 18. and 20.).
"""
from __future__ import annotations

from ..ir import Module, Trait, ops_with
from ..ir.core import Block, Operation

__all__ = ["loop_invariant_code_motion", "LOOPS"]

LOOPS = ("scf.for", "scf.while")
"""The loop ops; every region of one is a loop body (run zero or more times per entry)."""

_DIVISIONS = ("arith.div", "arith.rem")


def loop_invariant_code_motion(module: Module) -> int:
    """Hoist the loop invariants of every function; returns how many ops moved (an op hoisted
    out of two nested loops counts twice)."""
    pure = ops_with(Trait.PURE)
    moved = [0]
    for fn in module.functions:
        _forward_unchanged(fn.body.block, {})
        _block(fn.body.block, pure, moved)
    return moved[0]


def _forward_unchanged(block: Block, replaced: dict) -> None:
    """Rewire the operands of ``block`` (and the blocks nested in it) through ``replaced`` (id of a
    value -> the value it always equals), adding each loop's unchanged carried values (its body
    arguments and its results -> the initial value) before walking the loop's regions."""
    for op in block.ops:
        if replaced:
            op.operands = [replaced.get(id(v), v) for v in op.operands]
        if op.name == "scf.for":
            body = op.regions[0].block
            carried = body.args[1:]
            passed = body.terminator.operands
            for k, init in enumerate(op.operands[3:]):
                if passed[k] is carried[k]:
                    replaced[id(carried[k])] = replaced[id(op.results[k])] = init
        elif op.name == "scf.while":
            before, after = (r.block for r in op.regions)
            forwarded = before.terminator.operands[1:]
            passed = after.terminator.operands
            for k, init in enumerate(op.operands):
                if forwarded[k] is before.args[k] and passed[k] is after.args[k]:
                    replaced[id(before.args[k])] = replaced[id(after.args[k])] = init
                    replaced[id(op.results[k])] = init
        for r in op.regions:
            _forward_unchanged(r.block, replaced)


def _block(block: Block, pure, moved: list) -> None:
    """Visit the loops nested in ``block`` innermost first, putting what each hoists right
    before it in ``block``."""
    out = []
    hoisted_any = False
    for op in block.ops:
        for r in op.regions:
            _block(r.block, pure, moved)
        if op.name in LOOPS:
            hoisted = _hoist(op, pure)
            if hoisted:
                hoisted_any = True
                moved[0] += len(hoisted)
                for h in hoisted:
                    h.parent = block
                out.extend(hoisted)
        out.append(op)
    if hoisted_any:
        block.ops[:] = out


def _hoist(loop: Operation, pure) -> list:
    """Take the invariant ops out of ``loop``'s bodies; returns them in order."""
    hoisted = []
    for r in loop.regions:
        body = r.block
        variant = {id(a) for a in body.args}
        keep = []
        for op in body.ops:
            if _candidate(op, pure) and not any(id(v) in variant for v in op.operands):
                hoisted.append(op)
                continue
            variant.update(id(v) for v in op.results)
            keep.append(op)
        if len(keep) != len(body.ops):
            body.ops[:] = keep
    return hoisted


def _candidate(op: Operation, pure) -> bool:
    name = op.name
    if name not in pure or op.regions:
        return False
    if not op.operands:
        return name == "arith.constant"
    if name in _DIVISIONS and op.results[0].type.is_int:
        d = op.operands[1].owner
        return (isinstance(d, Operation) and d.name == "arith.constant"
                and d.attrs.get("value") not in (0, -1))
    return True
