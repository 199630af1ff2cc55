"""The compile pipeline of one specialization: the one place its stages are listed, in order.

``STAGES`` names each step, what it takes and what it makes (``jit/stages.py``)::

    trace   Python function + parameter Specs -> Traced     (frontend/ trace, then passes/)
    lower   Traced   -> Lowered    (backend/: IR -> LLVM IR -> PTX)
    ptxas   Lowered  -> Compiled   (backend/ptxas.py: PTX -> cubin, whole program)
    load    Compiled -> Executable (runtime/driver.py: cuModuleLoadData + cuModuleGetFunction)

Every step goes through ``_step``, which shows it in the progress line (``jit/progress.py``),
counts it in ``STAGE_COUNTS`` (tests prove with it that a cache hit did no work) and records
its seconds in the specialization's ``timings`` (keys: trace, llvm_load (loading LLVM and the
lowering's modules: the first compile of a process), lower, ptx, ptxas, load; disk, disk_key,
disk_read for a disk-cache hit). The garbage collector is paused during a step (``core/collector.py``).
``CompiledKernel`` (``jit/compiled.py``) calls these on first use of each
stage's output, so ``ck.ptx`` lowers but does not run ptxas.
"""
from __future__ import annotations

import contextlib
import sys
import threading
import time

from ..core.collector import collection_paused
from . import progress
from .stages import Compiled, Executable, Lowered, Traced

__all__ = ["STAGES", "STAGE_COUNTS", "trace", "lower", "assemble", "load", "start_llvm_load"]

STAGES = (
    ("trace", None, Traced),
    ("lower", Traced, Lowered),
    ("ptxas", Lowered, Compiled),
    ("load", Compiled, Executable),
)
"""(name, input stage, output stage), in the order a specialization goes through them."""

STAGE_COUNTS = {"trace": 0, "lower": 0, "ptx": 0, "ptxas": 0, "disk_hit": 0, "disk_store": 0}
"""Per process, how many times each step really ran (``disk_*``: jit/cache/persist.py)."""


@contextlib.contextmanager
def _step(name: str, step: str, timings: dict, counted: bool = True):
    t0 = time.perf_counter()
    with progress.stage(name, step), collection_paused():
        yield
    if counted:
        STAGE_COUNTS[step] += 1
    timings[step] = time.perf_counter() - t0


def trace(fn, name: str, specs: list, param_names: list, options, block: tuple, kwonly: tuple,
          timings: dict) -> tuple:
    """(Traced, guards): ``fn`` traced for ``specs`` (frontend/specialize.py), the pass pipeline
    run on its module (passes/pipeline.py, the light pipeline's when ``options.llvm_pipeline`` is
    'light'), and the guards on the globals and attributes it read
    (frontend/guards.py). Errors are the user's (CompilationError and its kinds) as raised."""
    from ..frontend.guards import collect_guards
    from ..frontend.specialize import trace_kernel
    from ..passes.pipeline import run_passes
    with _step(name, "trace", timings):
        module, abi, reached, facts = trace_kernel(fn, name, specs, param_names, options,
                                                   {"maxntid": block}, kwonly=kwonly)
        run_passes(module, llvm_pipeline=options.llvm_pipeline)
    guards = collect_guards(reached, facts, _static_values(specs))
    kern = module.kernels[0]
    traced = Traced(kern.name, module, tuple(abi), tuple(block),
                    kern.attrs.get("dynamic_smem", 0))
    return traced, guards


def _static_values(specs) -> list:
    """The static argument values of ``specs``, those inside composites (a tuple's static
    items) included: what ``collect_guards`` follows for the classes and plain functions they
    hold."""
    out = []
    for s in specs:
        if getattr(s, "binding", None) == "static" and hasattr(s, "value"):
            out.append(s.value)
        parts = getattr(s, "parts", None)
        if parts:
            out.extend(_static_values(parts))
    return out


@contextlib.contextmanager
def beside(work: list):
    """Run the callables ``work`` in a thread while the ``with`` body runs, which waits on C
    code that releases the GIL (LLVM through ``backend/llvm_c``) or on a child process
    (ptxas); the body's end waits for the thread. ``work`` fills caches (the IR's text for the
    disk entry): an error in it is dropped, and whoever reads that cache computes it again
    (and raises there)."""
    if not work:
        yield
        return
    thread = threading.Thread(target=_run_quietly, args=(work,), name="warpstage beside",
                              daemon=True)
    thread.start()
    try:
        yield
    finally:
        thread.join()


def _run_quietly(work: list) -> None:
    for fn in work:
        try:
            fn()
        except Exception:       # noqa: BLE001 - computed again, and raised, by its reader
            pass


_llvm_started: list = []


def start_llvm_load() -> None:
    """Start loading LLVM (the ``dlopen`` of libllvmlite, ~10 ms, in a thread: it releases the
    GIL) once per process, when a specialization for a PTX target is about to be traced, so that
    it runs beside the trace instead of beside ``lower``'s imports only (``llvm_load``)."""
    _start_llvm_once()


def _start_llvm_once() -> None:
    """``load_llvm(wait=False)`` the first time this process asks (``start_llvm_load``, or
    ``lower`` when nothing started it)."""
    if not _llvm_started:
        _llvm_started.append(True)
        from ..backend import load_llvm
        load_llvm(wait=False)


def lower(traced: Traced, options, timings: dict, work: list = ()) -> Lowered:
    """The LLVM IR and PTX of ``traced`` for ``options`` (arch, PTX features, opt level).
    ``work``: callables run beside LLVM's optimization and code generation (``beside``)."""
    with _step(traced.name, "llvm_load", timings, counted=False):
        # loading LLVM (the dlopen of libllvmlite, its targets, llvmlite.ir and the lowering
        # rules) is paid by the first compile of a process; timed apart so a cold compile's
        # stages add up to its wall time
        _start_llvm_once()              # the dlopen releases the GIL: the imports run meanwhile
        from ..backend import emit_ptx, load_llvm, lower as to_llvm
        load_llvm()
    with _step(traced.name, "lower", timings):
        llvm_ir = to_llvm(traced.module, options, verified=True)    # verified by run_passes
    _start_launch_stub()
    with _step(traced.name, "ptx", timings), beside(list(work)):
        ptx = emit_ptx(llvm_ir, options)
    return Lowered(traced.name, llvm_ir, ptx)


def _start_launch_stub() -> None:
    """LLVM is loaded now: start compiling the C call path's launch stub (jit/c_call.py,
    jit/c_env.py) in its background thread, so that it is ready before this kernel launches.
    Started only at a kernel's second launch (what a process that loads every kernel from disk
    still does), the compile ran beside the first launches and slowed them: the flagship's
    first 20 calls at 0.75x of the later ones (H200, session 5). Started just before the PTX
    emission: the thread's first ~60 ms are importing ``llvmlite.binding`` (Python, holding
    the GIL), which then runs while LLVM's C code holds no GIL, instead of beside the first
    call's load and launch after ptxas; its own LLVM work waits for ``backend/ptx.py``'s lock,
    which the emission holds, and then runs beside ptxas. Only with torch imported (the stub
    reads torch tensors) and the C path on (``WARPSTAGE_CCALL``)."""
    if "torch" not in sys.modules:
        return
    from ..options import env_c_call
    if env_c_call():
        from . import c_env
        c_env.stub_ready(start=True)


def assemble(lowered: Lowered, options, timings: dict, work: list = ()) -> Compiled:
    """``lowered``'s PTX through ptxas (``Compiled.result`` None, and no step counted, when no
    ptxas is installed). Raises PtxasError with ptxas' message when it rejects the PTX.
    ``work``: callables run while ptxas runs (``beside``)."""
    from ..backend import assemble as ptxas, find_ptxas
    if find_ptxas(options) is None:
        _run_quietly(list(work))
        return Compiled(lowered.name, lowered.ptx, None)
    with _step(lowered.name, "ptxas", timings), beside(list(work)):
        return Compiled(lowered.name, lowered.ptx, ptxas(lowered.ptx, options, [lowered.name]))


def load(compiled: Compiled, abi, timings: dict, device: int = 0) -> Executable:
    """``compiled`` loaded into GPU ``device``'s primary context (the cubin, else the PTX for the
    driver's JIT), with a Launcher for the ABI ``abi`` ((slot, ir type), ...; a TMA descriptor
    is a 128-byte by-value blob). Raises DeviceError when the driver refuses it."""
    from ctypes import c_ubyte
    from ..ir.types import TensorMapType
    from ..runtime import driver
    from ..runtime.launcher import Launcher
    with _step(compiled.name, "load", timings, counted=False), driver.on_device(device):
        if compiled.result:
            mod = driver.load_module(compiled.result.cubin, is_ptx=False, device=device)
        else:
            mod = driver.load_module(compiled.ptx.encode() + b"\0", is_ptx=True, device=device)
        fn = driver.get_function(mod, compiled.name)
    types = [c_ubyte * 128 if isinstance(t, TensorMapType) else t for _, t in abi]
    return Executable(mod, fn, Launcher(fn, types, device=device))
