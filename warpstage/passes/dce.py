"""Dead-code elimination: drop side-effect-free ops whose results are unused.

Contract: valid IR in, valid IR out. Ops with side effects (stores, barriers, printf, trap,
calls, control flow with effects inside) are kept; a structured op is removed only if it has no
used results and no side effect anywhere in its regions.
"""
from __future__ import annotations

from ..ir import Module
from ..ir.core import Block, Operation

__all__ = ["dead_code_elimination"]

_PURE_PREFIXES = ("arith.", "math.", "ptr.offset")
_PURE_NAMES = {"nvvm.sreg"}


def _pure(op: Operation) -> bool:
    if op.name.startswith(_PURE_PREFIXES) or op.name in _PURE_NAMES:
        return True
    if op.name in ("scf.if", "scf.for"):
        return all(_pure(o) or o.name == "scf.yield" for r in op.regions for o in r.block.ops)
    return False


def dead_code_elimination(module: Module) -> int:
    """Remove dead pure ops in every function; returns how many were removed."""
    removed = 0
    changed = True
    while changed:
        used = set()
        for fn in module.functions:
            for op in fn.walk():
                used.update(id(v) for v in op.operands)
        changed = False
        for fn in module.functions:
            n = _sweep(fn.body.block, used)
            removed += n
            changed |= n > 0
    return removed


def _sweep(block: Block, used: set) -> int:
    n = 0
    keep = []
    for op in block.ops:
        if _pure(op) and not any(id(r) in used for r in op.results):
            n += 1
            continue
        for r in op.regions:
            n += _sweep(r.block, used)
        keep.append(op)
    block.ops[:] = keep
    return n
