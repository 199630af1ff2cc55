"""IR -> LLVM IR (llvmlite) -> PTX (LLVM NVPTX) -> cubin (ptxas). The only llvmlite user.

    llvm_ir = lower(module, options)          # str, target nvptx64-nvidia-cuda
    ptx = emit_ptx(llvm_ir, options)          # str, '.target sm_90a'
    result = assemble(ptx, options, ["k"])    # CubinResult: cubin, resources, warnings, log
"""
from .lower import lower
from .ptx import emit_ptx, llvm_version
from .ptxas import CubinResult, Resources, assemble, find_ptxas, ptxas_version

__all__ = ["lower", "emit_ptx", "find_ptxas", "assemble", "ptxas_version", "llvm_version",
           "CubinResult", "Resources"]
