"""Kernel attributes that follow from the ops a kernel's module holds.

- ``dynamic_smem`` (bytes): the end of the furthest ``smem.alloc`` (``offset + nbytes``) in the
  module (the kernel or any device function), on every kernel entry of a module that has one:
  the dynamic shared memory the launch must pass (``ws.smem.allocate`` emits the allocations;
  ``CompiledKernel.dynamic_smem`` reads the attribute). A larger value already set is kept.
- ``minctasm = 1`` on every kernel entry of a module that executes ``nvvm.setmaxnreg`` (in the
  kernel or any device function): ptxas honours setmaxnreg only with a register budget at entry,
  ``.maxntid`` (the launch block) and ``.minnctapersm 1``; without them it warns C7508 and
  ignores it (PTX ISA "Performance-Tuning Directives"; DESIGN "Verified toolchain facts").
  A value already set (by the caller) is kept.

Runs before legalization, which rewrites ``smem.alloc`` (``passes/pipeline.py``), and before
DCE, so an allocation nothing reads still counts, as it did when ``allocate`` kept the total.

Contract: valid IR in, valid IR out; only ``Function.attrs`` of kernels change.
"""
from __future__ import annotations

from ..ir import Module

__all__ = ["kernel_attributes"]


def kernel_attributes(module: Module) -> int:
    """Set the attributes above; returns how many attributes were added or changed."""
    smem_end, setmaxnreg = None, False
    for fn in module.functions:
        for op in fn.walk():
            if op.name == "smem.alloc":
                end = op.attrs["offset"] + op.attrs["nbytes"]
                smem_end = end if smem_end is None else max(smem_end, end)
            elif op.name == "nvvm.setmaxnreg":
                setmaxnreg = True
    added = 0
    for fn in module.kernels:
        if smem_end is not None and fn.attrs.get("dynamic_smem", -1) < smem_end:
            fn.attrs["dynamic_smem"] = smem_end
            added += 1
        if setmaxnreg and "minctasm" not in fn.attrs:
            fn.attrs["minctasm"] = 1
            added += 1
    return added
