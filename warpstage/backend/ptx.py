"""LLVM IR text -> PTX text with LLVM's NVPTX backend (through llvmlite.binding).

``emit_ptx`` parses and verifies the module, runs LLVM's default new-pass-manager pipeline at
``options.opt_level`` (O3 by default), and prints PTX for ``options.arch`` (sm_90a) with PTX ISA
``options.ptx_version`` (``+ptx80`` -> ``.version 8.0``).

LLVM's targets are initialized once, on first use; target machines are cached per
(arch, features, opt level). llvmlite shares one LLVM context, so emission is serialized by a
lock; two threads may call ``emit_ptx`` but run one at a time.
"""
from __future__ import annotations

import functools
import threading

import llvmlite
import llvmlite.binding as llvm

from ..errors import CompilationError
from ..options import CompileOptions

__all__ = ["emit_ptx", "target_machine", "llvm_version", "TRIPLE"]

TRIPLE = "nvptx64-nvidia-cuda"
_lock = threading.RLock()
_initialized = False


def _initialize() -> None:
    global _initialized
    if _initialized:
        return
    with _lock:
        if not _initialized:
            # llvmlite >= 0.45 initializes LLVM itself; only targets and printers remain.
            llvm.initialize_all_targets()
            llvm.initialize_all_asmprinters()
            _initialized = True


@functools.lru_cache(maxsize=None)
def target_machine(arch: str, features: str, opt_level: int) -> llvm.TargetMachine:
    """The cached NVPTX TargetMachine for ``cpu=arch`` (e.g. sm_90a), ``features`` (+ptx80)."""
    _initialize()
    target = llvm.Target.from_triple(TRIPLE)
    return target.create_target_machine(cpu=arch, features=features,
                                        opt=max(0, min(3, opt_level)))


def llvm_version() -> str:
    """'LLVM <x.y.z> (llvmlite <v>)': part of the compile cache key."""
    return "LLVM {}.{}.{} (llvmlite {})".format(*llvm.llvm_version_info, llvmlite.__version__)


def emit_ptx(llvm_ir: str, options: CompileOptions) -> str:
    """PTX text for the LLVM IR ``llvm_ir`` (as ``backend.lower`` returns it).

    Raises CompilationError if LLVM rejects the IR (a backend bug: the message holds LLVM's).
    """
    tm = target_machine(options.arch, options.ptx_version, options.opt_level)
    with _lock:
        try:
            mod = llvm.parse_assembly(llvm_ir)
            mod.verify()
        except RuntimeError as e:
            raise CompilationError(f"internal error: the backend produced invalid LLVM IR: {e}") \
                from e
        mod.triple = TRIPLE
        mod.data_layout = str(tm.target_data)
        if options.opt_level > 0:
            pto = llvm.create_pipeline_tuning_options(speed_level=min(3, options.opt_level))
            pb = llvm.create_pass_builder(tm, pto)
            pb.getModulePassManager().run(mod, pb)
        ptx = tm.emit_assembly(mod)
    if f".target {options.arch}" not in ptx:
        raise CompilationError(f"internal error: LLVM's PTX lacks '.target {options.arch}'; "
                               f"check CompileOptions.arch={options.arch!r}")
    return ptx
