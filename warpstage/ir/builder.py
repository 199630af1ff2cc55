"""Builder: appends operations at an insertion point and returns their results.

Each method documents its semantics in one line. Structured ops are built with context managers::

    with b.if_(cond, result_types=[i32]) as (then, else_):
        ...                                 # then/else_ are Blocks; use b.at(block)
    loop = b.for_(lb, ub, step, [init])    # loop.iv, loop.carried, loop.body
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Optional, Sequence

from .builder_gpu import GpuBuilderMixin
from .core import Block, Function, Location, Operation, Region, Value
from .opdef import op_def
from .types import PointerType, ScalarType, Type, u8

__all__ = ["Builder"]


class Builder(GpuBuilderMixin):
    """Inserts ops at the end of the current block; ``loc`` is stamped on every new op. The GPU
    families' typed methods (barriers, fences, cp.async, TMA, mma, wgmma) are in
    ``builder_gpu``."""

    def __init__(self, block: Optional[Block] = None):
        self.block = block
        self.loc: Optional[Location] = None

    # -- insertion point -------------------------------------------------------------------
    @contextmanager
    def at(self, block: Block):
        """Temporarily insert at the end of ``block``."""
        saved, self.block = self.block, block
        try:
            yield block
        finally:
            self.block = saved

    def op(self, name: str, operands: Sequence[Value] = (), result_types: Sequence[Type] = (),
           attrs: Optional[dict] = None, regions: Sequence[Region] = ()) -> Operation:
        """Append a generic op and return it."""
        if self.block is None:
            raise RuntimeError("Builder has no insertion block")
        return self.block.append(Operation(name, operands, result_types, attrs, regions, self.loc))

    def create(self, name: str, operands: Sequence[Value] = (), attrs: Optional[dict] = None,
               regions: Sequence[Region] = (), result_types: Optional[Sequence[Type]] = None
               ) -> Operation:
        """Append op ``name``; its result types come from its definition's result rule
        (``OpDef.infer``) unless given, and an op without results needs neither."""
        if result_types is None:
            infer = op_def(name).infer
            result_types = infer([v.type for v in operands], attrs or {}) if infer else ()
        return self.op(name, operands, result_types, attrs, regions)

    # -- arith / math ------------------------------------------------------------------------
    def constant(self, type: ScalarType, value) -> Value:
        """result = literal ``value`` of ``type``."""
        if type.is_bool:
            value = bool(value)
        elif type.is_int:
            value = int(value)
        else:
            value = float(value)
        return self.op("arith.constant", (), (type,), {"value": value}).result

    def binary(self, kind: str, a: Value, b: Value) -> Value:
        """result = a <kind> b (``kind`` in ir.ops.BINARY), operands of one type."""
        return self.create(f"arith.{kind}", (a, b)).result

    def unary(self, name: str, a: Value, attrs: Optional[dict] = None) -> Value:
        """result = name(a) for arith.neg / arith.not / math.* unary ops (``attrs``: e.g.
        ``{"approx": True}`` for the fast forms of math.exp2 / exp / tanh)."""
        return self.create(name, (a,), attrs or {}).result

    def fma(self, a: Value, b: Value, c: Value) -> Value:
        """result = a * b + c with one rounding."""
        return self.create("math.fma", (a, b, c)).result

    def cmp(self, pred: str, a: Value, b: Value) -> Value:
        """result: i1 = a <pred> b."""
        return self.create("arith.cmp", (a, b), {"pred": pred}).result

    def select(self, c: Value, a: Value, b: Value) -> Value:
        """result = c ? a : b."""
        return self.create("arith.select", (c, a, b)).result

    def cast(self, x: Value, to: ScalarType) -> Value:
        """result = numeric conversion of x to ``to`` (no op if equal)."""
        if x.type == to:
            return x
        return self.op("arith.cast", (x,), (to,)).result

    def bitcast(self, x: Value, to: ScalarType) -> Value:
        """result = the bits of x read as ``to`` (same width)."""
        return self.op("arith.bitcast", (x,), (to,)).result

    def cvt_pack(self, lo: Value, hi: Value, to: str) -> Value:
        """result: u32 = lo, hi (f32) rounded to nearest even to ``to`` (bf16 | f16), lo in
        bits 0-15 (``cvt.rn.<to>x2.f32``)."""
        return self.create("arith.cvt_pack", (lo, hi), {"to": to}).result

    # -- registers, memory, sync ---------------------------------------------------------------
    def sreg(self, reg: str, type: ScalarType) -> Value:
        """result = PTX special register ``%reg`` (e.g. tid.x)."""
        return self.op("nvvm.sreg", (), (type,), {"reg": reg}).result

    def barrier(self, id=0, count: Optional[int] = None) -> None:
        """bar.sync id[, count]; ``id`` a static int or a dynamic i32 Value."""
        attrs = {"id": id} if isinstance(id, int) else {}
        if count is not None:
            attrs["count"] = count
        self.op("nvvm.barrier", () if isinstance(id, int) else (id,), (), attrs)

    def ptr_offset(self, p: Value, i: Value) -> Value:
        """result = p + i elements."""
        return self.create("ptr.offset", (p, i)).result

    def load(self, p: Value) -> Value:
        """result = *p."""
        if not isinstance(p.type, PointerType):
            raise TypeError(f"load needs a pointer, got {p.type}")
        return self.create("mem.load", (p,)).result

    def store(self, p: Value, v: Value) -> None:
        """*p = v."""
        self.op("mem.store", (p, v))

    def ptr_cast(self, p: Value, pointee: ScalarType) -> Value:
        """result = p read as a pointer to ``pointee`` (same address space); no op if equal."""
        if p.type.pointee == pointee:
            return p
        return self.op("ptr.cast", (p,), (PointerType(pointee, p.type.space),)).result

    def smem_base(self, pointee: ScalarType = u8) -> Value:
        """result = the CTA's dynamic shared memory base, as ``!ptr<pointee, shared>``."""
        return self.op("nvvm.smem_base", (), (PointerType(pointee, "shared"),)).result

    def smem_alloc(self, offset: int, nbytes: int) -> Value:
        """result: ``!ptr<u8, shared>`` = bytes [offset, offset + nbytes) of the CTA's dynamic
        shared memory (legalized into smem_base + offset)."""
        return self.create("smem.alloc", (), {"offset": offset, "nbytes": nbytes}).result

    def atomic(self, kind: str, p: Value, v: Value) -> Value:
        """result = old *p; *p = old <kind> v, atomically."""
        return self.create("mem.atomic", (p, v), {"kind": kind}).result

    def atomic_cas(self, p: Value, cmp: Value, v: Value) -> Value:
        """result = old *p; *p = v if old == cmp, atomically."""
        return self.create("mem.atomic_cas", (p, cmp, v)).result

    # -- warp collectives, fences, mbarriers, cp.async -------------------------------------------
    def shfl(self, mode: str, x: Value, b: Value, width: int = 32,
             mask: int = 0xFFFFFFFF) -> Value:
        """result = x of the lane picked by ``mode`` (idx|up|down|bfly) and b (shfl.sync)."""
        attrs = {"mode": mode}
        if width != 32:
            attrs["width"] = width
        if mask != 0xFFFFFFFF:
            attrs["mask"] = mask
        return self.create("nvvm.shfl", (x, b), attrs).result

    def vote(self, mode: str, p: Value, mask: int = 0xFFFFFFFF) -> Value:
        """result = vote.sync.<mode> over the warp's p: i1 (all|any|uni) or u32 (ballot)."""
        attrs = {"mode": mode} if mask == 0xFFFFFFFF else {"mode": mode, "mask": mask}
        return self.create("nvvm.vote", (p,), attrs).result

    def elect(self, mask: int = 0xFFFFFFFF) -> Value:
        """result: i1 = true in exactly one active lane of ``mask`` (elect.sync)."""
        return self.create("nvvm.elect", (), {} if mask == 0xFFFFFFFF else {"mask": mask}).result

    def mbarrier(self, name: str, bar: Value, *operands: Value) -> Optional[Value]:
        """mbarrier.<name> (bar, *operands); returns the result of ops that have one."""
        op = self.create(f"mbarrier.{name}", (bar, *operands))
        return op.result if op.results else None

    def printf(self, fmt: str, args: Sequence[Value]) -> None:
        """printf(fmt, *args) on the device."""
        self.op("gpu.printf", args, (), {"format": fmt})

    # -- structured control flow -------------------------------------------------------------
    def yield_(self, values: Sequence[Value] = ()) -> None:
        """Terminate the current region, passing ``values`` to the parent op."""
        self.op("scf.yield", values)

    def if_(self, cond: Value, result_types: Sequence[Type] = ()) -> Operation:
        """An scf.if with empty then/else blocks; fill each and end it with yield_."""
        return self.op("scf.if", (cond,), result_types, regions=(Region(), Region()))

    def for_(self, lb: Value, ub: Value, step: Value, init: Sequence[Value] = (),
             attrs: Optional[dict] = None) -> Operation:
        """An scf.for; its body block has args (iv, *carried); fill it and end it with yield_."""
        body = Block([lb.type] + [v.type for v in init])
        return self.op("scf.for", (lb, ub, step, *init), [v.type for v in init], attrs,
                       (Region(body),))

    def while_(self, init: Sequence[Value]) -> Operation:
        """An scf.while; before(args) ends in condition(c, *args), after(args) ends in yield_."""
        types = [v.type for v in init]
        return self.op("scf.while", init, types, regions=(Region(Block(types)), Region(Block(types))))

    def condition(self, c: Value, values: Sequence[Value]) -> None:
        """End a while's before region: continue with ``values`` while c, else exit with them."""
        self.op("scf.condition", (c, *values))

    def call(self, callee: Function, args: Sequence[Value]) -> list:
        """results = callee(*args)."""
        return self.op("func.call", args, callee.result_types, {"callee": callee.name}).results

    def return_(self, values: Sequence[Value] = ()) -> None:
        """End the function body, returning ``values``."""
        self.op("func.return", values)
