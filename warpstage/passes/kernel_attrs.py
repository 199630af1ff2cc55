"""Kernel attributes that follow from the ops a kernel's module holds.

- ``minctasm = 1`` on every kernel entry of a module that executes ``nvvm.setmaxnreg`` (in the
  kernel or any device function): ptxas honours setmaxnreg only with a register budget at entry,
  ``.maxntid`` (the launch block) and ``.minnctapersm 1``; without them it warns C7508 and
  ignores it (PTX ISA "Performance-Tuning Directives"; DESIGN "Verified toolchain facts").
  A value already set (by the caller) is kept.

Contract: valid IR in, valid IR out; only ``Function.attrs`` of kernels change.
"""
from __future__ import annotations

from ..ir import Module

__all__ = ["kernel_attributes"]


def kernel_attributes(module: Module) -> int:
    """Set the attributes above; returns how many attributes were added."""
    if not any(op.name == "nvvm.setmaxnreg" for fn in module.functions for op in fn.walk()):
        return 0
    added = 0
    for fn in module.kernels:
        if "minctasm" not in fn.attrs:
            fn.attrs["minctasm"] = 1
            added += 1
    return added
