"""Dead-code elimination: drop removable ops whose results no live op uses.

Contract: valid IR in, valid IR out. An op is removable when its definition has the ``PURE``
trait, or when it is an ``scf.if`` / ``scf.for`` whose regions hold only removable ops and their
terminators (an ``scf.while`` is kept: it may not terminate). Every other op is live (stores,
barriers, waits, async copies, printf, calls, ...), and so is every op a live op uses, and the
terminators of live structured ops. Mark and sweep, linear in the size of the module.
"""
from __future__ import annotations

from ..ir import Module, Trait, ops_with
from ..ir.core import Block, Operation

__all__ = ["dead_code_elimination"]

_STRUCTURED_REMOVABLE = ("scf.if", "scf.for")


def dead_code_elimination(module: Module) -> int:
    """Remove dead removable ops in every function; returns how many were removed (counting a
    removed structured op once, with what it held)."""
    pure = ops_with(Trait.PURE)
    terminators = ops_with(Trait.TERMINATOR)
    defining: dict = {}
    live: set = set()
    work: list = []
    for fn in module.functions:
        _classify(fn.body.block, None, pure, terminators, defining, live, work)
    while work:
        op = work.pop()
        for v in op.operands:
            d = defining.get(id(v))
            if d is not None and id(d) not in live:
                live.add(id(d))
                work.append(d)
        for r in op.regions:
            term = r.block.terminator
            if term is not None and id(term) not in live:
                live.add(id(term))
                work.append(term)
    return sum(_sweep(fn.body.block, live) for fn in module.functions)


def _classify(block: Block, parent, pure, terminators, defining, live, work) -> bool:
    """Record the ops of ``block`` (result -> op; the roots, live from the start) and return
    whether every op in it is removable or a terminator."""
    all_removable = True
    for op in block.ops:
        for r in op.results:
            defining[id(r)] = op
        inner = all([_classify(r.block, op, pure, terminators, defining, live, work)
                     for r in op.regions])
        name = op.name
        if name in terminators:
            if parent is None:          # func.return: ends the function, always live
                live.add(id(op))
                work.append(op)
            continue
        removable = name in pure or (name in _STRUCTURED_REMOVABLE and inner)
        if not removable:
            all_removable = False
            live.add(id(op))
            work.append(op)
    return all_removable


def _sweep(block: Block, live: set) -> int:
    n = 0
    keep = []
    for op in block.ops:
        if id(op) not in live:
            n += 1
            continue
        for r in op.regions:
            n += _sweep(r.block, live)
        keep.append(op)
    if n:
        block.ops[:] = keep
    return n
