"""Common-subexpression elimination: a pure op that repeats an earlier one in scope is dropped,
and its results' uses read the earlier op's results.

Contract: valid IR in, valid IR out, same behaviour. An op is a candidate when its definition
has the ``PURE`` trait and its results are a function of its operands and attributes: every
pure op with operands, and ``arith.constant``. A pure op without operands other than a constant
reads machine state (``nvvm.sreg`` reads ``clock64`` as well as ``tid.x``; each ``smem.alloc``
is a new buffer), so it is never merged. Two candidates are the same when their names,
operands (by identity), attributes and result types are equal. Scopes follow the structured
IR: an op in a block is in scope for the rest of that block and for the regions nested in it
after it (which it dominates); nothing leaves a region. One walk, linear in the module's size.

Why it runs: unrolled tile code repeats its address arithmetic and constants (a FlashAttention
kernel's trace holds ~1,500 ``arith.constant`` and recomputes ``row * stride`` per fragment);
every op removed here is one the backend does not lower and LLVM does not parse and fold.
"""
from __future__ import annotations

from ..ir import Module, Trait, ops_with
from ..ir.core import Block

__all__ = ["common_subexpressions"]


def common_subexpressions(module: Module) -> int:
    """Merge the repeated pure ops of every function; returns how many ops were removed."""
    pure = ops_with(Trait.PURE)
    replaced: dict = {}                 # id(result of a removed op) -> the earlier result
    removed: list = []                  # keeps the removed ops (and so their ids) alive
    for fn in module.functions:
        _block(fn.body.block, {}, pure, replaced, removed)
    return len(removed)


def _canon(v):
    """An attribute value as a key: floats by their bits (0.0 and -0.0 differ, as do 1 and
    1.0), tuples element by element; raises TypeError for an unhashable value."""
    if isinstance(v, float):
        return ("float", v.hex())
    if isinstance(v, tuple):
        return ("tuple",) + tuple(_canon(x) for x in v)
    hash(v)
    return (type(v).__name__, v)


def _key(op):
    """What makes ``op`` equal to another candidate, or None when ``op`` is not one."""
    attrs = op.attrs
    try:
        attrs = tuple((k, _canon(attrs[k])) for k in sorted(attrs)) if attrs else ()
    except TypeError:                   # an unhashable attribute (a list): never merged
        return None
    return (op.name, tuple(map(id, op.operands)), attrs, tuple(r.type for r in op.results))


def _block(block: Block, in_scope: dict, pure, replaced: dict, removed: list) -> None:
    """Rewire ``block``'s operands through ``replaced`` and merge its candidates with those in
    ``in_scope`` (the candidates of the enclosing blocks before the region being walked, and
    of this block so far: one table for all scopes, so one lookup per op; what this block adds
    leaves the table when the walk leaves the block)."""
    added = []
    keep = []
    for op in block.ops:
        if replaced:
            op.operands = [replaced.get(id(v), v) for v in op.operands]
        if op.regions:
            for r in op.regions:
                _block(r.block, in_scope, pure, replaced, removed)
        elif op.name in pure and (op.operands or op.name == "arith.constant"):
            key = _key(op)
            if key is not None:
                earlier = in_scope.get(key)
                if earlier is not None:
                    for r, e in zip(op.results, earlier.results):
                        replaced[id(r)] = e
                    removed.append(op)
                    continue
                in_scope[key] = op
                added.append(key)
        keep.append(op)
    for key in added:
        del in_scope[key]
    if len(keep) != len(block.ops):
        block.ops[:] = keep
