"""IR data structures: values, operations, blocks, regions, functions, modules.

The IR is SSA with structured control flow (MLIR's ``scf`` style): an operation may own regions;
each region here holds exactly one block; a block has arguments and a list of operations. Values
are defined once, by an operation result or a block argument, and used by later operations in the
same block or in blocks nested inside it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator, Optional, Sequence

from .types import Type

__all__ = ["Location", "Value", "Operation", "Block", "Region", "Function", "Module"]


@dataclass(frozen=True)
class Location:
    """A source position: file, 1-based line, 0-based column."""

    file: str
    line: int
    col: int = 0

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


class Value:
    """An SSA value: a result of ``owner`` (an Operation) or an argument of ``owner`` (a Block)."""

    __slots__ = ("type", "owner", "index", "name_hint")

    def __init__(self, type: Type, owner: Any = None, index: int = 0, name_hint: str = ""):
        self.type = type
        self.owner = owner
        self.index = index
        self.name_hint = name_hint

    @property
    def is_block_arg(self) -> bool:
        return isinstance(self.owner, Block)

    def __repr__(self) -> str:
        return f"<Value {self.name_hint or '?'}: {self.type}>"


class Operation:
    """One operation: ``results = name(operands) {attrs} (regions)`` at ``loc``.

    ``name`` is dialect-qualified ("arith.add", "scf.for"); the op set and each op's contract are
    listed in ``ir.ops``.
    """

    __slots__ = ("name", "operands", "results", "attrs", "regions", "loc", "parent")

    def __init__(self, name: str, operands: Sequence[Value] = (), result_types: Sequence[Type] = (),
                 attrs: Optional[dict] = None, regions: Sequence["Region"] = (),
                 loc: Optional[Location] = None):
        self.name = name
        self.operands = list(operands)
        self.results = [Value(t, self, i) for i, t in enumerate(result_types)]
        self.attrs = dict(attrs or {})
        self.regions = list(regions)
        for r in self.regions:
            r.parent = self
        self.loc = loc
        self.parent: Optional[Block] = None

    @property
    def result(self) -> Value:
        """The single result (error if the op has not exactly one)."""
        if len(self.results) != 1:
            raise ValueError(f"{self.name} has {len(self.results)} results, not 1")
        return self.results[0]

    def walk(self) -> Iterator["Operation"]:
        """This op, then every op nested in its regions, in program order (pre-order)."""
        yield self
        for r in self.regions:
            for op in r.block.ops:
                yield from op.walk()

    def __repr__(self) -> str:
        return f"<Operation {self.name}>"


class Block:
    """A list of operations with typed arguments (loop induction variables, carried values)."""

    __slots__ = ("args", "ops", "parent")

    def __init__(self, arg_types: Sequence[Type] = ()):
        self.args = [Value(t, self, i) for i, t in enumerate(arg_types)]
        self.ops: list[Operation] = []
        self.parent: Optional[Region] = None

    def append(self, op: Operation) -> Operation:
        op.parent = self
        self.ops.append(op)
        return op

    def add_arg(self, type: Type, name_hint: str = "") -> Value:
        v = Value(type, self, len(self.args), name_hint)
        self.args.append(v)
        return v

    @property
    def terminator(self) -> Optional[Operation]:
        return self.ops[-1] if self.ops else None


class Region:
    """A region holding one block. ``parent`` is the owning Operation or Function."""

    __slots__ = ("block", "parent")

    def __init__(self, block: Optional[Block] = None):
        self.block = block if block is not None else Block()
        self.block.parent = self
        self.parent: Any = None


@dataclass
class Function:
    """A function: a kernel entry (``is_kernel``) or a device function.

    ``body.block.args`` are the parameters; ``result_types`` what ``func.return`` returns (device
    functions only; kernels return nothing). ``attrs`` carries launch properties such as
    ``maxntid`` (threads per CTA, 3 ints) and ``minctasm`` (min CTAs per SM), and ``param_names``.
    """

    name: str
    arg_types: list
    result_types: list = field(default_factory=list)
    is_kernel: bool = False
    attrs: dict = field(default_factory=dict)
    loc: Optional[Location] = None
    body: Region = field(default=None)

    def __post_init__(self):
        if self.body is None:
            self.body = Region(Block(self.arg_types))
        self.body.parent = self

    @property
    def args(self) -> list:
        return self.body.block.args

    def walk(self) -> Iterator[Operation]:
        for op in self.body.block.ops:
            yield from op.walk()


@dataclass
class Module:
    """A compilation unit: functions, looked up by name; the kernel entries have ``is_kernel``."""

    functions: list = field(default_factory=list)

    def add(self, fn: Function) -> Function:
        if self.get(fn.name) is not None:
            raise ValueError(f"function {fn.name!r} already in module")
        self.functions.append(fn)
        return fn

    def get(self, name: str) -> Optional[Function]:
        for f in self.functions:
            if f.name == name:
                return f
        return None

    @property
    def kernels(self) -> list:
        return [f for f in self.functions if f.is_kernel]
