"""Helpers for the simulator tests: build small kernels with ir.Builder and run them."""
from __future__ import annotations

import numpy as np

from warpstage import ir, sim
from warpstage.ir import Builder, Function, Location, Module, PointerType
from warpstage.passes.legalize import legalize

FILE = "kern.py"


class KernelBuilder:
    """A module with one kernel under construction; ``line(n)`` stamps the next ops' location."""

    def __init__(self, name: str, arg_types, module: Module | None = None):
        self.module = module or Module()
        self.fn = self.module.add(Function(name, list(arg_types), is_kernel=True))
        self.b = Builder(self.fn.body.block)
        self.line(1)

    @property
    def args(self):
        return self.fn.args

    def line(self, n: int) -> "KernelBuilder":
        self.b.loc = Location(FILE, n)
        return self

    def const(self, t, v):
        return self.b.constant(t, v)

    def global_tid(self):
        """ctaid.x * ntid.x + tid.x as i32."""
        b = self.b
        i32 = ir.i32
        return b.binary("add", b.binary("mul", b.sreg("ctaid.x", i32), b.sreg("ntid.x", i32)),
                        b.sreg("tid.x", i32))

    def if_(self, cond, result_types=(), then=None, else_=None):
        """scf.if whose then/else bodies are built by callables returning the yielded values."""
        op = self.b.if_(cond, result_types)
        for region, body in zip(op.regions, (then, else_)):
            with self.b.at(region.block):
                vals = body() if body else []
                self.b.yield_(vals or [])
        return op.results

    def for_(self, lb, ub, step, init, body):
        """scf.for; ``body(iv, *carried)`` returns the next carried values."""
        op = self.b.for_(lb, ub, step, init)
        blk = op.regions[0].block
        with self.b.at(blk):
            self.b.yield_(body(*blk.args) or [])
        return op.results

    def while_(self, init, before, after):
        """scf.while; ``before(*args)`` -> (cond, forwarded), ``after(*args)`` -> next values."""
        op = self.b.while_(init)
        with self.b.at(op.regions[0].block):
            c, vals = before(*op.regions[0].block.args)
            self.b.condition(c, vals)
        with self.b.at(op.regions[1].block):
            self.b.yield_(after(*op.regions[1].block.args))
        return op.results

    def store_at(self, ptr, index, value):
        self.b.store(self.b.ptr_offset(ptr, index), value)

    def load_at(self, ptr, index):
        return self.b.load(self.b.ptr_offset(ptr, index))

    def finish(self) -> Module:
        self.b.return_()
        ir.verify(self.module)
        return self.module


def gptr(t):
    return PointerType(t, "global")


def sptr(t):
    return PointerType(t, "shared")


def launch(module, grid, block, args, memory=None, smem_bytes=0, name=None, **kw):
    """Run the module's (only) kernel, legalized (``passes.legalize``: hand-built modules may hold
    arith.floordiv/mod); numpy arrays in ``args`` are registered in ``memory``."""
    legalize(module)
    memory = memory or sim.Memory()
    flat = [memory.register(a) if isinstance(a, np.ndarray) else a for a in args]
    kname = name or module.kernels[0].name
    return sim.run(module, kname, grid, block, flat, memory, smem_bytes, echo=False, **kw)
