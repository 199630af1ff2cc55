"""Legalization: rewrite every non-primitive op into primitives, so that the backend and the
simulator implement primitives only.

An op is non-primitive when its definition says ``legalized=True`` (``ir.opdef``); each has one
rule here, registered by the family modules ``legalize_arith`` (``arith.floordiv``,
``arith.mod``) and ``legalize_gpu`` (``wgmma.descriptor``, ``smem.alloc``). A rule gets a
``Builder`` inserting where the op stood (with the op's source location) and the op, builds the
replacement and returns the values that stand for the op's results; every later use is
rewired to them. Replacements hold primitives only (a rule never emits a legalized op).

Contract: valid IR in, valid IR out, no legalized op left. One walk over the module, in program
order (a definition is visited before its uses), linear in its size.
"""
from __future__ import annotations

from typing import Callable

from ..ir import Builder, Module
from ..ir.core import Block, Operation

__all__ = ["legalize", "RULES", "rule"]

Rule = Callable[[Builder, Operation], list]
RULES: dict = {}
"""op name -> rule(builder, op) -> replacement values (one per result of the op)."""


def rule(*names: str):
    """Decorator: register ``fn`` as the legalization of the ops ``names``."""
    def register(fn: Rule) -> Rule:
        for name in names:
            if name in RULES:
                raise ValueError(f"op {name} has two legalization rules")
            RULES[name] = fn
        return fn
    return register


def legalize(module: Module) -> int:
    """Rewrite the non-primitive ops of every function in place; returns how many ops were
    rewritten."""
    scratch = Block()
    b = Builder(scratch)
    mapping: dict = {}              # a rewritten op's result -> the value replacing it
    return sum(_block(fn.body.block, b, mapping) for fn in module.functions)


def _block(block: Block, b: Builder, mapping: dict) -> int:
    n = 0
    out = None                      # the new op list, once the first op is rewritten
    for i, op in enumerate(block.ops):
        if mapping:
            op.operands = [mapping.get(v, v) for v in op.operands]
        for r in op.regions:
            n += _block(r.block, b, mapping)
        fn = RULES.get(op.name)
        if fn is None:
            if out is not None:
                out.append(op)
            continue
        if out is None:
            out = block.ops[:i]
        b.block.ops = []
        b.loc = op.loc
        values = fn(b, op)
        for new in b.block.ops:
            new.parent = block
        out.extend(b.block.ops)
        mapping.update(zip(op.results, values))
        n += 1
    if out is not None:
        block.ops[:] = out
    return n


from . import legalize_arith, legalize_gpu  # noqa: E402,F401  (they register their rules)
