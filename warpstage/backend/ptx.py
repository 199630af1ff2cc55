"""LLVM IR text -> PTX text with LLVM's NVPTX backend (llvmlite's LLVM, through backend/llvm_c.py).

``emit_ptx`` parses and verifies the module, runs LLVM's default new-pass-manager pipeline at
``options.opt_level`` (O3 by default; ``options.llvm_pipeline='light'``: four passes instead,
``llvm_c.LIGHT_PASSES``), and prints PTX for ``options.arch`` (sm_90a) with PTX ISA
``options.ptx_version`` (``+ptx80`` -> ``.version 8.0``).

LLVM's targets are initialized once, when the library is first loaded (``llvm_c.api()``);
target machines are cached per (arch, features, opt level). llvmlite shares one LLVM context,
so emission is serialized by a lock; two threads may call ``emit_ptx`` but run one at a time.
"""
from __future__ import annotations

import functools
import threading

from ..errors import CompilationError
from ..options import CompileOptions
from . import llvm_c

__all__ = ["emit_ptx", "load_llvm", "target_machine", "data_layout", "llvm_version", "TRIPLE"]

TRIPLE = "nvptx64-nvidia-cuda"
_lock = threading.RLock()


def _llvm():
    with _lock:
        return llvm_c.api()


def load_llvm(wait: bool = True) -> threading.Thread | None:
    """Load LLVM (libllvmlite's ``dlopen`` and its targets' initialization, once per process).
    ``wait=False``: in a daemon thread, returned, so that the caller's Python (importing the
    lowering rules and llvmlite.ir) runs meanwhile; a later ``load_llvm()`` waits for it and
    raises what loading raised."""
    if wait:
        _llvm()
        return None
    thread = threading.Thread(target=_quietly_load, name="warpstage-llvm-load", daemon=True)
    thread.start()
    return thread


def _quietly_load() -> None:
    try:
        _llvm()
    except Exception:       # raised again by the caller's own load_llvm(), in its thread
        pass


@functools.lru_cache(maxsize=None)
def target_machine(arch: str, features: str, opt_level: int):
    """The cached NVPTX TargetMachine (a handle of ``llvm_c.api()``) for ``cpu=arch`` (e.g.
    sm_90a), ``features`` (+ptx80), codegen level ``opt_level`` clamped to 0-3."""
    llvm = _llvm()
    with _lock:
        return llvm.target_machine(TRIPLE, arch, features, max(0, min(3, opt_level)))


@functools.lru_cache(maxsize=None)
def data_layout(arch: str, features: str, opt_level: int) -> str:
    """The NVPTX data layout string of ``target_machine(arch, features, opt_level)``."""
    tm = target_machine(arch, features, opt_level)
    with _lock:
        return _llvm().data_layout(tm)


def llvm_version() -> str:
    """'LLVM <x.y.z> (llvmlite <v>)': part of the compile cache key."""
    return "LLVM {}.{}.{} (llvmlite {})".format(*_llvm().version(), llvm_c.llvmlite_version())


def emit_ptx(llvm_ir: str, options: CompileOptions) -> str:
    """PTX text for the LLVM IR ``llvm_ir`` (as ``backend.lower`` returns it).

    Raises CompilationError if LLVM rejects the IR (a backend bug: the message holds LLVM's).
    """
    tm = target_machine(options.arch, options.ptx_version, options.opt_level)
    with _lock:
        try:
            ptx = _llvm().emit(tm, llvm_ir, TRIPLE, min(3, options.opt_level),
                               options.llvm_pipeline)
        except RuntimeError as e:
            raise CompilationError(f"internal error: the backend produced invalid LLVM IR: {e}") \
                from e
    if f".target {options.arch}" not in ptx:
        raise CompilationError(f"internal error: LLVM's PTX lacks '.target {options.arch}'; "
                               f"check CompileOptions.arch={options.arch!r}")
    return ptx
