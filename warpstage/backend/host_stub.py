"""The launch stub: x86-64 code, compiled once per machine with LLVM's MCJIT, that reads a
launch's arguments, finds its specialization and calls ``cuLaunchKernel`` (docs/launch.md,
"The C-level call path").

:func:`stub_address` returns the address of one C function with CPython's ``METH_FASTCALL``
signature, ``PyObject *stub(PyObject *self, PyObject *const *args, Py_ssize_t nargs)``; its
``self`` is a Python int, the address of a *context* (the int64 fields of :data:`CTX_FIELDS`, one
context per launch configuration, built by ``jit/c_call.py``). Per argument, by the parameter's
kind code (:data:`KINDS`), it appends *facts* to an int64 vector:

- a ``torch.Tensor`` (exact type): first the checks of :data:`CHECK_FIELDS` through torch's own
  C getters (``data_ptr()`` answers and is not 0, the dtype is one torch exports, not nested:
  torch's reader crashes the process on the tensors its ``__dlpack__`` refuses), then read by
  torch's C DLPack exchange API, ``dltensor_from_py_object_no_sync`` (dlpack.h
  ``DLPackExchangeAPI``, DLPack 1.2+; no allocation); facts: dtype (``code | bits << 8 | lanes
  << 16``), ndim, shape, strides (elements), address mod 16; it must be on the context's device
  type, and all tensors on one device id;
- an int or bool for an annotated integer scalar: no fact; range-checked against the context's
  per-parameter bounds;
- an unannotated parameter: tag 0 (int in int32 range), 1 (int64), 3 (bool), 4 (None), or 5
  then the tensor facts;
- a static parameter given an int, bool or None: tag 10/11/12, then the value.

then the device id. Anything else (a float, another tensor type, a failed read, two devices)
returns a *miss* code (:data:`MISS`) without launching. The fact vector is compared with each
entry of the context (:data:`ENTRY_FIELDS`: facts, CUfunction, dynamic shared memory, stream
rule, a template of the packed parameter buffer, the ``void*[]`` offsets, and per parameter the
byte offset and width where its value goes). On a match the stub copies the template to its
stack, writes the pointers and scalars, takes the stream (the context's fixed one, torch's
current stream through the exchange API's ``current_work_stream``, or 0), releases the GIL and
calls the context's ``cuLaunchKernel`` (CUDA Driver API, Execution Control); it returns None when
the driver accepted the launch, ``MISS['driver']`` when it refused (nothing was launched).

In *dry* mode (the context's ``dry`` field set) it launches nothing: a match writes what it
would launch to the context's ``dry_out`` (function, six dims, smem, stream, device, buffer
size, then at byte 128 the buffer), a miss writes the fact vector to ``scratch`` (count first).
``jit/c_call.py`` registers an entry only after a dry run reproduced the Python path's launch.

The stub never raises and never returns NULL: a Python error inside a producer's function is
cleared and reported as a miss, after which the Python path runs and raises what it raises.
The IR is ``host_stub.ll``; its layouts and codes are backend/host_stub_ir.py's.
"""
from __future__ import annotations

import ctypes
import threading

import llvmlite.binding as llvm

from .host_stub_ir import (CHECK_FIELDS, CTX_FIELDS, ENTRY_FIELDS, KINDS, MAX_BUFFER, MAX_FACTS,
                           MAX_PARAMS, MAX_SLOTS, MISS, stub_source)

__all__ = ["stub_address", "call_address", "getitem_addresses", "cache_key_parts", "stub_source", "CTX_FIELDS", "CHECK_FIELDS", "ENTRY_FIELDS", "KINDS",
           "MISS", "MAX_FACTS", "MAX_BUFFER", "MAX_SLOTS", "MAX_PARAMS"]

_PYTHON_API = ("PyLong_AsVoidPtr", "PyLong_AsLongLongAndOverflow", "PyLong_FromLong", "Py_IncRef",
               "Py_DecRef", "PyErr_Clear", "PyEval_SaveThread", "PyEval_RestoreThread", "PyDict_GetItem",
               "PyObject_RichCompareBool", "PyObject_Vectorcall", "PyObject_GetAttr")
_lock = threading.Lock()
_compiled = None          # (execution engine, address) once compiled; False: it failed
_error = ""


def stub_address(object_cache=None) -> int:
    """The address of the compiled stub, compiling it now if needed (LLVM O2 and MCJIT: 0.1-0.5 s
    of CPU; the code lives as long as the process). ``object_cache``: ``(load, store)``, where
    ``load()`` returns the object code of an earlier compile or None and ``store(bytes)`` keeps
    it (jit/c_env.py: the disk cache), so a later process loads instead of compiling. Raises
    ``RuntimeError`` with LLVM's message if the host target cannot compile it."""
    global _compiled, _error
    if _compiled is None:
        with _lock:
            if _compiled is None:
                try:
                    _compiled = _compile(object_cache)
                except Exception as e:      # noqa: BLE001 - raised below, now and later
                    _compiled, _error = False, f"{type(e).__name__}: {e}"
    if _compiled is False:
        raise RuntimeError(f"the launch stub did not compile for this host ({_error})")
    return _compiled[1]


def call_address(object_cache=None) -> int:
    """The address of the launch object's call, ``ws_launch_call`` (METH_FASTCALL |
    METH_KEYWORDS; ``self`` the context's address): keywords, the target, the context's guard
    table, then the stub; on anything but a launch it returns what the context's ``fallback``
    returns for the same arguments. Compiles as :func:`stub_address` does."""
    stub_address(object_cache)
    return _compiled[2]


def getitem_addresses(object_cache=None) -> tuple:
    """``(function, context word)``: the address of ``ws_kernel_getitem`` (``Kernel.__getitem__``
    in C, METH_FASTCALL; host_stub.ll says what it reads) and of the pointer to its words, which
    the caller sets. Compiles as :func:`stub_address` does."""
    stub_address(object_cache)
    return _compiled[3], _compiled[4]


def cache_key_parts() -> tuple:
    """What the stub's object code depends on: its source, LLVM's version, the host triple."""
    from .ptx import llvm_version
    return ("warpstage launch stub", stub_source(), llvm_version(), llvm.get_default_triple())


def _compile(object_cache):
    from .ptx import _lock as llvm_lock
    with llvm_lock:                         # LLVM's target registry: set up by one thread
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
    return _build(object_cache)


def _build(object_cache):
    for name in _PYTHON_API:
        llvm.add_symbol(name, ctypes.cast(getattr(ctypes.pythonapi, name), ctypes.c_void_p).value)
    libc = ctypes.CDLL(None)
    for name in ("memcpy", "memset", "memmove"):
        llvm.add_symbol(name, ctypes.cast(getattr(libc, name), ctypes.c_void_p).value)
    # a context of its own: the PTX emission of backend/ptx.py (the global context, under its
    # lock) runs meanwhile in other threads
    module = llvm.parse_assembly(stub_source(), llvm.create_context())
    module.verify()
    target = llvm.Target.from_default_triple()
    machine = target.create_target_machine(opt=2, codemodel="jitdefault")
    module.triple = machine.triple
    module.data_layout = str(machine.target_data)
    cached = object_cache[0]() if object_cache is not None else None
    if cached is None:                      # else the cached object code is the optimized one
        options = llvm.create_pipeline_tuning_options(speed_level=2)
        pass_builder = llvm.create_pass_builder(machine, options)
        pass_builder.getModulePassManager().run(module, pass_builder)
    engine = llvm.create_mcjit_compiler(module, machine)
    if object_cache is not None:
        engine.set_object_cache(lambda _module, data: object_cache[1](data),
                                lambda _module: cached)
    engine.finalize_object()
    return (engine, engine.get_function_address("ws_launch_stub"),
            engine.get_function_address("ws_launch_call"),
            engine.get_function_address("ws_kernel_getitem"),
            engine.get_global_value_address("ws_getitem_ctx"))
