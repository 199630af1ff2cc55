"""Helpers for backend tests: build a one-kernel module by hand, lower it, emit PTX.

Every lowering test also emits PTX: an op that LLVM's NVPTX backend cannot select aborts the
whole process (llvmlite's LLVM has assertions on), so emission is the check that matters.
"""
import llvmlite.binding as llvm

from warpstage.backend import emit_ptx, lower
from warpstage.backend.lower import lower_module
from warpstage.ir import Builder, Function, Module
from warpstage.options import CompileOptions
from warpstage.passes.legalize import legalize

OPTIONS = CompileOptions()


class KernelBuilder:
    """A kernel ``name(*arg_types)`` under construction: ``b`` inserts into its body."""

    def __init__(self, arg_types, name="k", attrs=None):
        self.module = Module()
        self.fn = self.module.add(Function(name, list(arg_types), is_kernel=True,
                                           attrs=dict(attrs or {})))
        self.b = Builder(self.fn.body.block)
        self.args = self.fn.args

    def finish(self):
        """End the body (func.return) and return (llvm_ir, ptx); the LLVM IR must verify."""
        self.b.return_()
        return compile_module(self.module)


def compile_module(module, options=OPTIONS):
    """Legalize (hand-built modules may hold arith.floordiv/mod, wgmma.descriptor), lower, check
    the LLVM IR, emit PTX; returns (llvm_ir, ptx). The text is ``backend.lower``'s, checked to be
    byte for byte what llvmlite's own builder and printer make of the same rules
    (``lower_module(..., reference=True)``), so every op family's rules check
    ``backend/llvm_builder.py``."""
    legalize(module)
    ll = lower(module, options)
    assert ll == str(lower_module(module, options, reference=True)[0])
    mod = llvm.parse_assembly(ll)
    mod.verify()
    assert "nvvm.annotations" not in ll
    ptx = emit_ptx(ll, options)
    assert ".target sm_90a" in ptx
    return ll, ptx


def region_block(op, i):
    return op.regions[i].block
