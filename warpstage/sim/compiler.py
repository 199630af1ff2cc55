"""Compile IR functions once into Python closures over a slot frame.

Every SSA value of a function gets a slot number; a frame is a list holding one 32-lane numpy
register per slot. Each op becomes a ``step(s, w)`` closure that reads and writes slots by index
(no dict lookups while running). A block becomes a runner: a plain function that calls its steps
in order, or, when the block contains an op that can wait (a barrier, or control flow / a call
around one), a generator that ``yield from``s the waiting steps and calls the rest directly.

``compile_module(module)`` caches the compiled ``Program`` per module object (dropped when the
module is garbage collected); a module that gained or lost ops since is recompiled.
"""
from __future__ import annotations

import weakref
from typing import Callable, Optional

from ..errors import SimulatorError
from ..ir.core import Block, Function, Module, Operation, Value
from ..ir.opdef import unlowered_op_message
from .registry import BLOCKING, BLOCKING_IF, HANDLERS

__all__ = ["Program", "CompiledFunction", "FunctionCompiler", "compile_module", "where"]


def where(op: Operation) -> str:
    """``file:line`` of ``op`` for messages."""
    return str(op.loc) if op is not None and op.loc is not None else "<unknown location>"


class CompiledFunction:
    """A function compiled for the simulator.

    ``run(frame, warp)`` executes the body (a generator function when ``blocking``);
    ``arg_slots`` / ``result_slots`` are where parameters go (slots 0 .. n-1, in order) and where
    ``func.return``'s operands are found afterwards; ``nslots`` is the frame size.
    """

    def __init__(self, fn: Function):
        self.fn = fn
        self.name = fn.name
        self.nslots = 0
        self.arg_slots: list[int] = []
        self.result_slots: list[int] = []
        self.run: Optional[Callable] = None
        self.blocking = False

    def new_frame(self) -> list:
        return [None] * self.nslots


class Program:
    """The compiled form of a Module: functions compiled on first use."""

    def __init__(self, module: Module):
        self._module = weakref.ref(module)   # the cache entry must not keep the module alive
        self.functions: dict[str, CompiledFunction] = {}
        self._blocking: dict[str, Optional[bool]] = {}
        self._op_blocking: dict[int, bool] = {}

    @property
    def module(self) -> Module:
        return self._module()

    def function(self, name: str) -> CompiledFunction:
        cf = self.functions.get(name)
        if cf is None:
            fn = self.module.get(name)
            if fn is None:
                have = ", ".join(f.name for f in self.module.functions) or "none"
                raise SimulatorError(f"no function {name!r} in the module; it has {have}")
            cf = CompiledFunction(fn)
            self.functions[name] = cf  # before compiling the body, so recursion finds it
            FunctionCompiler(self, fn, cf).compile()
        return cf

    def function_blocks(self, name: str) -> bool:
        """Whether calling ``name`` can suspend the warp (recursion counts as 'can')."""
        if name in self._blocking:
            state = self._blocking[name]
            return True if state is None else state
        self._blocking[name] = None
        fn = self.module.get(name)
        result = fn is not None and any(self.op_blocks(op) for op in fn.body.block.ops)
        self._blocking[name] = result
        return result

    def op_blocks(self, op: Operation) -> bool:
        """Whether ``op`` can suspend the warp: a waiting op, or one that contains or calls one."""
        known = self._op_blocking.get(id(op))
        if known is None:
            known = (op.name in BLOCKING
                     or (op.name in BLOCKING_IF and BLOCKING_IF[op.name](op))
                     or (op.name == "func.call" and self.function_blocks(op.attrs["callee"]))
                     or any(self.op_blocks(inner) for r in op.regions for inner in r.block.ops))
            self._op_blocking[id(op)] = known
        return known


class FunctionCompiler:
    """Compiles one function: assigns slots and turns blocks into runners via the op table."""

    def __init__(self, program: Program, fn: Function, out: CompiledFunction):
        self.program = program
        self.fn = fn
        self.out = out
        self._slots: dict[int, int] = {}

    # -- slots --------------------------------------------------------------------------------
    def slot(self, value: Value) -> int:
        """The frame index of ``value`` (allocated on first request)."""
        key = id(value)
        s = self._slots.get(key)
        if s is None:
            s = self._slots[key] = len(self._slots)
        return s

    def slots(self, values) -> list[int]:
        return [self.slot(v) for v in values]

    # -- blocking analysis --------------------------------------------------------------------
    def is_blocking(self, op: Operation) -> bool:
        """Whether ``op`` must be compiled as a generator step."""
        return self.program.op_blocks(op)

    def block_blocks(self, block: Block) -> bool:
        return any(self.program.op_blocks(op) for op in block.ops)

    # -- compilation --------------------------------------------------------------------------
    def compile(self) -> None:
        block = self.fn.body.block
        self.out.arg_slots = self.slots(block.args)      # the first slots: 0 .. n-1
        self.out.blocking = self.block_blocks(block)
        self.out.run = self.block(block)
        term = block.terminator
        self.out.result_slots = self.slots(term.operands) if term is not None else []
        self.out.nslots = len(self._slots)

    def step(self, op: Operation):
        h = HANDLERS.get(op.name)
        if h is None:
            raise SimulatorError(f"{unlowered_op_message(op.name, 'the simulator')} (at "
                                 f"{where(op)})")
        return h(op, self)

    def block(self, block: Block) -> Callable:
        """A runner for ``block``'s ops (its terminator compiles to nothing: the parent op reads
        the terminator's operands from their slots). Plain function, or generator function if
        ``block_blocks(block)``."""
        n = len(block.ops)
        groups: list[tuple] = []   # (plain steps, waiting step or None)
        plain: list = []
        for op in block.ops:
            fn = self.step(op)
            if fn is None:
                continue
            if self.is_blocking(op):
                groups.append((tuple(plain), fn))
                plain = []
            else:
                plain.append(fn)
        if not any(g for _, g in groups):
            return _plain_runner(tuple(plain), n)
        groups.append((tuple(plain), None))
        return _generator_runner(tuple(groups), n)

    def generator_block(self, block: Block) -> Callable:
        """Like ``block`` but always a generator function (for waiting control-flow steps)."""
        run = self.block(block)
        if self.block_blocks(block):
            return run

        def run_plain(s, w):
            run(s, w)
            return
            yield
        return run_plain

    def terminator_slots(self, block: Block, kind: str) -> list[int]:
        term = block.terminator
        if term is None or term.name != kind:
            raise SimulatorError(f"block must end in {kind} (in function {self.fn.name})")
        return self.slots(term.operands)


def _plain_runner(steps: tuple, n: int) -> Callable:
    def run(s, w):
        w.ops += n
        for f in steps:
            f(s, w)
    return run


def _generator_runner(groups: tuple, n: int) -> Callable:
    def run(s, w):
        w.ops += n
        for plain, waiting in groups:
            for f in plain:
                f(s, w)
            if waiting is not None:
                yield from waiting(s, w)
    return run


_cache: dict[int, tuple] = {}


def _op_count(module: Module) -> int:
    return sum(1 for fn in module.functions for _ in fn.walk())


def compile_module(module: Module) -> Program:
    """The cached ``Program`` of ``module`` (compiled functions are added lazily)."""
    key = id(module)
    entry = _cache.get(key)
    count = _op_count(module)
    if entry is not None:
        ref, program, old_count = entry
        if ref() is module and old_count == count:
            return program
    program = Program(module)
    # the callback binds the dict itself: module globals may already be None at interpreter exit
    forget = weakref.ref(module, lambda _r, k=key, c=_cache: c.pop(k, None))
    _cache[key] = (forget, program, count)
    return program

