"""The ops of a module checked against the target architecture before LLVM sees them.

LLVM's NVPTX backend cannot select an intrinsic the architecture lacks (setmaxnreg or elect.sync
under sm_80) and, built with assertions as llvmlite's is, it then aborts the whole Python
process ("LLVM ERROR: Cannot select"). ``check_target`` raises ``UnsupportedError`` first, naming
the op, its source line, the architecture and the one it needs (``OpDef.requires``, decided by
``core.target.Target.has``).
"""
from __future__ import annotations

from ..core.target import Target, target_for
from ..errors import UnsupportedError
from ..ir import OPS, Module

__all__ = ["check_target", "target_of"]


def target_of(arch: str) -> Target:
    """The Target of ``CompileOptions.arch``; UnsupportedError naming the known ones."""
    try:
        return target_for(arch)
    except ValueError as e:
        raise UnsupportedError(str(e)) from None


def check_target(module: Module, target: Target) -> None:
    """Raise UnsupportedError for the first op of ``module`` that ``target`` lacks."""
    for fn in module.functions:
        for op in fn.walk():
            need = OPS[op.name].requires
            if need and not target.has(need):
                where = f" at {op.loc}" if op.loc else ""
                raise UnsupportedError(
                    f"{op.name}{where} (in function {fn.name}) needs {need}"
                    f"{' (the arch-specific variant)' if need.endswith('a') else ' or newer'}, "
                    f"and the kernel is compiled for {target.arch}.\nExpected: arch {need!r} "
                    f"or newer; got {target.arch!r}.\nFix: compile with "
                    f"arch={need!r} (CompileOptions / @ws.kernel(arch=...)), or leave the op out "
                    f"for {target.arch}", where=str(op.loc) if op.loc else None)
