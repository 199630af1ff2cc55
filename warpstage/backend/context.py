"""What an op's lowering rule sees: the builder, operand values, and declaration helpers.

A rule is ``rule(ctx: LoweringContext, op: Operation) -> list[ir.Value]`` (the op's results, in
order). Rules live in ``lower_arith``, ``lower_math``, ``lower_gpu``, ``lower_sync`` and
``lower_smem``; control flow and calls, which need to lower nested regions, live in ``lower``.
"""
from __future__ import annotations

from typing import Callable, Optional, Sequence

from llvmlite import ir

from ..errors import UnsupportedError
from ..ir.core import Operation, Value
from .llvm_builder import Builder
from .llvm_types import I8

__all__ = ["LoweringContext", "Rule"]


class LoweringContext:
    """State of lowering one function: ``builder`` inserts into ``function`` of ``module``:
    a ``llvm_builder.Builder`` into a ``llvm_builder.Body``, or (``builder=ir.IRBuilder``,
    the reference the tests compare with) llvmlite's builder into the ``ir.Function``."""

    def __init__(self, module: ir.Module, function, strings: dict, builder=Builder):
        self.module = module
        self.strings = strings          # text -> global, shared by the functions of a module
        self.function = function
        self.builder = builder()
        self.values: dict[int, ir.Value] = {}
        self.op: Optional[Operation] = None
        self.parts: dict = {}           # id(element) -> (vector, index): see ``part_of``
        self.words: dict = {}           # id(vector) -> the word it was bitcast from
        self._reused: dict = {}         # (id(block), key) -> value: see ``reuse``

    # -- SSA values ------------------------------------------------------------------------------
    def bind(self, value: Value, llvm_value: ir.Value) -> None:
        self.values[id(value)] = llvm_value

    def get(self, value: Value) -> ir.Value:
        return self.values[id(value)]

    def operands(self, op: Operation) -> list:
        return [self.values[id(v)] for v in op.operands]

    # -- values the rules may reuse ------------------------------------------------------------
    def split_from(self, vector: ir.Value, elements: Sequence[ir.Value],
                   word: Optional[ir.Value] = None) -> None:
        """Record that ``elements`` are ``vector``'s elements in order (``extractelement``), and
        that ``vector`` is ``word`` bitcast, so packing them again can return ``vector``/``word``."""
        for j, e in enumerate(elements):
            self.parts[id(e)] = (vector, j)
        if word is not None:
            self.words[id(vector)] = word

    def whole_of(self, elements: Sequence[ir.Value]) -> Optional[ir.Value]:
        """The vector whose elements, in order, are exactly ``elements``, if one was split
        (``split_from``); it dominates them, so it can stand for their repacking anywhere."""
        first = self.parts.get(id(elements[0]))
        if first is None or first[1] != 0:
            return None
        vector = first[0]
        if vector.type.count != len(elements):
            return None
        for j, e in enumerate(elements[1:], 1):
            part = self.parts.get(id(e))
            if part is None or part[0] is not vector or part[1] != j:
                return None
        return vector

    def word_of(self, vector: ir.Value) -> Optional[ir.Value]:
        """The value ``vector`` was bitcast from (``split_from``), if any."""
        return self.words.get(id(vector))

    def reuse(self, key: tuple, make: Callable[[], ir.Value]) -> ir.Value:
        """``make()``, unless it was built for ``key`` earlier in the current basic block (which
        then dominates the insertion point): the value built then. ``key`` names the inputs by
        ``id``; they are operands of instructions in the module, so they stay alive."""
        k = (id(self.builder.block), key)
        v = self._reused.get(k)
        if v is None:
            v = self._reused[k] = make()
        return v

    # -- declarations ----------------------------------------------------------------------------
    def intrinsic(self, name: str, ret: ir.Type, args: Sequence[ir.Type]) -> ir.Function:
        """Declare (once) and return the function ``name`` of type ``ret(args)``."""
        fn = self.module.globals.get(name)
        if fn is None:
            fn = ir.Function(self.module, ir.FunctionType(ret, list(args)), name)
        return fn

    def call_intrinsic(self, name: str, ret: ir.Type, args: Sequence[ir.Value],
                       fastmath: Sequence[str] = ()) -> ir.Value:
        """result = name(*args); declares ``name`` from the argument types on first use."""
        fn = self.intrinsic(name, ret, [a.type for a in args])
        return self.builder.call(fn, list(args), fastmath=tuple(fastmath))

    def global_string(self, text: str) -> ir.Value:
        """A generic pointer to a NUL-terminated UTF-8 copy of ``text`` in global memory.

        Equal strings share one global.
        """
        gv = self.strings.get(text)
        if gv is None:
            data = bytearray(text.encode("utf-8") + b"\0")
            ty = ir.ArrayType(I8, len(data))
            gv = ir.GlobalVariable(self.module, ty, self.module.get_unique_name(".str"),
                                   addrspace=1)
            gv.global_constant = True
            gv.linkage = "private"
            gv.unnamed_addr = True
            gv.initializer = ir.Constant(ty, data)
            self.strings[text] = gv
        # vprintf and friends take generic pointers (PTX ISA "State Spaces": generic addressing).
        return self.builder.addrspacecast(gv, ir.PointerType())

    def entry_alloca(self, ty: ir.Type) -> ir.Value:
        """A stack slot of ``ty`` allocated in the entry block, so loops do not grow the stack.

        The entry block holds only allocas until the function is finished (the lowering then
        branches from it to the body), so appending here never moves ``builder``'s position.
        """
        return type(self.builder)(self.function.entry_basic_block).alloca(ty)

    # -- errors ----------------------------------------------------------------------------------
    def unsupported(self, message: str) -> UnsupportedError:
        """An UnsupportedError about the op being lowered, located at its source position."""
        op = self.op
        where = str(op.loc) if op is not None and op.loc else None
        prefix = f"{op.name}" + (f" at {where}" if where else "") + ": " if op is not None else ""
        return UnsupportedError(prefix + message, where)


Rule = Callable[[LoweringContext, Operation], list]
