"""The simulator's op table: op name -> handler that compiles one op into a step.

A handler is ``handler(op, cx) -> step or None``. ``cx`` is the ``FunctionCompiler`` compiling the
enclosing function (slot numbers, nested blocks, callees). A step is ``step(s, w)``: ``s`` is the
frame (a list of registers indexed by slot), ``w`` the executing ``Warp``. Ops that can suspend
the warp (barrier waits, and any control-flow op or call whose body contains one) compile to a
generator function instead, which ``yield``s a ``Wait`` to the scheduler; ``cx.is_blocking(op)``
says which form to build. A handler returning None compiles to nothing (terminators: the parent
op reads their operands).

Registers are immutable: a step stores a new array into its result slot and never writes into an
array it read from a slot (constants, special registers and loop-invariant values are shared
between slots, frames and loop iterations).

Adding an op: write its handler in the ``ops_*`` module of its family (or a new one imported by
``sim/__init__.py``) with ``@handler("dialect.name")``; pass ``blocking=True`` if it can wait.
"""
from __future__ import annotations

from typing import Callable

__all__ = ["HANDLERS", "BLOCKING", "BLOCKING_IF", "handler"]

HANDLERS: dict[str, Callable] = {}
BLOCKING: set[str] = set()
BLOCKING_IF: dict[str, Callable] = {}   # op name -> predicate(op): this op can wait


def handler(*names: str, blocking=False):
    """Register the decorated function as the compile handler of ``names``. ``blocking``: True
    for an op that can wait, or a predicate ``op -> bool`` for one that can wait in some forms
    (an scf.while that reads memory yields to let the warps it polls for run)."""
    def register(fn):
        for name in names:
            if name in HANDLERS:
                raise ValueError(f"simulator handler for {name} registered twice")
            HANDLERS[name] = fn
            if callable(blocking):
                BLOCKING_IF[name] = blocking
            elif blocking:
                BLOCKING.add(name)
        return fn
    return register
