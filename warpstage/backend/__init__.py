"""IR -> LLVM IR (llvmlite) -> PTX (LLVM NVPTX) -> cubin (ptxas). The only llvmlite user.

    llvm_ir = lower(module, options)          # str, target nvptx64-nvidia-cuda
    ptx = emit_ptx(llvm_ir, options)          # str, '.target sm_90a'
    result = assemble(ptx, options, ["k"])    # CubinResult: cubin, resources, warnings, log

The names are loaded on first use (PEP 562): a disk-cache hit needs ``backend.ptxas_tool``'s data
classes and version query, not LLVM, whose import (llvmlite loads libLLVM) costs tens of ms.
"""
import importlib
import sys
import types

__all__ = ["lower", "emit_ptx", "load_llvm", "find_ptxas", "assemble", "ptxas_version", "llvm_version",
           "CubinResult", "Resources"]

_HOME = {"lower": ".lower", "emit_ptx": ".ptx", "load_llvm": ".ptx", "llvm_version": ".ptx", "assemble": ".ptxas",
         "find_ptxas": ".ptxas_tool", "ptxas_version": ".ptxas_tool",
         "CubinResult": ".ptxas_tool", "Resources": ".ptxas_tool"}


class _Backend(types.ModuleType):
    """The package's module type: importing the submodule ``backend.lower`` (``from
    warpstage.backend.lower import RULES``) makes Python set the package attribute ``lower`` to
    that submodule, which would hide the function ``lower`` from a later ``from warpstage.backend
    import lower``; a submodule named like one of its own functions is replaced by the function."""

    def __setattr__(self, name, value):
        if (isinstance(value, types.ModuleType) and _HOME.get(name) == f".{name}"
                and value.__name__ == f"{__name__}.{name}"):
            value = getattr(value, name)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Backend


def __getattr__(name):
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home, __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(list(globals()) + __all__)
