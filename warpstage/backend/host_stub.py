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

One stub serves every kernel and parameter list (the context carries the kinds), so its object
code is made once per machine: compiled from the IR (LLVM O2 for the generic host CPU, through
backend/llvm_c.py's host JIT, not ``llvmlite.binding``), kept by the caller's ``object_cache``
(the disk cache), and in later processes loaded from those bytes into an MCJIT engine without
parsing or compiling anything (``llvm_c.Direct.load_host_object``). ``COUNTS`` says which
happened in this process.
"""
from __future__ import annotations

import ctypes
import threading

from .host_stub_ir import (CHECK_FIELDS, CTX_FIELDS, ENTRY_FIELDS, KINDS, MAX_BUFFER, MAX_FACTS,
                           MAX_PARAMS, MAX_SLOTS, MISS, stub_source)

__all__ = ["stub_address", "call_address", "getitem_addresses", "cache_key_parts", "stub_source",
           "COUNTS", "CTX_FIELDS", "CHECK_FIELDS", "ENTRY_FIELDS", "KINDS", "MISS", "MAX_FACTS",
           "MAX_BUFFER", "MAX_SLOTS", "MAX_PARAMS"]

_PYTHON_API = ("PyLong_AsVoidPtr", "PyLong_AsLongLongAndOverflow", "PyLong_FromLong", "Py_IncRef",
               "Py_DecRef", "PyErr_Clear", "PyEval_SaveThread", "PyEval_RestoreThread", "PyDict_GetItem",
               "PyObject_RichCompareBool", "PyObject_Vectorcall", "PyObject_GetAttr")
_SPEED = 2                  # LLVM's pipeline and code generation level for the stub
_lock = threading.Lock()
_compiled = None          # (HostCode, stub, call, getitem, its word) once loaded; False: it failed
_error = ""
COUNTS = {"compiled": 0, "loaded": 0}
"""In this process: how often the stub's IR was compiled to object code, how often object code
was loaded (a process that finds it in the disk cache: compiled 0, loaded 1)."""


def stub_address(object_cache=None) -> int:
    """The address of the compiled stub, loading it now if needed: from ``object_cache``, a
    ``(load, store)`` pair where ``load()`` returns the object code of an earlier compile (bytes)
    or None and ``store(bytes)`` keeps it (jit/c_env.py: the disk cache); else compiled from the
    IR (LLVM O2: 0.1-0.3 s of CPU) and stored. The code lives as long as the process. Raises
    ``RuntimeError`` with LLVM's message if the host target cannot compile or load it."""
    global _compiled, _error
    if _compiled is None:
        with _lock:
            if _compiled is None:
                try:
                    _compiled = _load(object_cache)
                except Exception as e:      # noqa: BLE001 - raised below, now and later
                    _compiled, _error = False, f"{type(e).__name__}: {e}"
    if _compiled is False:
        raise RuntimeError(f"the launch stub did not compile for this host ({_error})")
    return _compiled[1]


def call_address(object_cache=None) -> int:
    """The address of the launch object's call, ``ws_launch_call`` (METH_FASTCALL |
    METH_KEYWORDS; ``self`` the context's address): keywords, the target, the context's guard
    table, then the stub; on anything but a launch it returns what the context's ``fallback``
    returns for the same arguments. Loads as :func:`stub_address` does."""
    stub_address(object_cache)
    return _compiled[2]


def getitem_addresses(object_cache=None) -> tuple:
    """``(function, context word)``: the address of ``ws_kernel_getitem`` (``Kernel.__getitem__``
    in C, METH_FASTCALL; host_stub.ll says what it reads) and of the pointer to its words, which
    the caller sets. Loads as :func:`stub_address` does."""
    stub_address(object_cache)
    return _compiled[3], _compiled[4]


def cache_key_parts() -> tuple:
    """What the stub's object code depends on: its source, the optimization level, LLVM's
    version, the host triple."""
    from .ptx import _llvm, llvm_version
    return ("warpstage launch stub", "object code, O%d" % _SPEED, stub_source(), llvm_version(),
            _llvm().host_triple())


def compile_object() -> bytes:
    """The stub's object code for this host, compiled from its IR now (counted in ``COUNTS``)."""
    from .ptx import _llvm
    data = _llvm().host_object(stub_source(), _SPEED)
    COUNTS["compiled"] += 1
    return data


def _load(object_cache):
    from .llvm_c import ELF_MAGIC
    from .ptx import _llvm
    llvm = _llvm()                          # loaded (and its targets set up) under ptx's lock
    data = object_cache[0]() if object_cache is not None else None
    if not isinstance(data, bytes) or not data.startswith(ELF_MAGIC):
        data = compile_object()
        if object_cache is not None:
            object_cache[1](data)
    libc = ctypes.CDLL(None)
    symbols = {name: ctypes.cast(getattr(ctypes.pythonapi, name), ctypes.c_void_p).value
               for name in _PYTHON_API}
    symbols.update((name, ctypes.cast(getattr(libc, name), ctypes.c_void_p).value)
                   for name in ("memcpy", "memset", "memmove"))
    code = llvm.load_host_object(data, symbols)
    COUNTS["loaded"] += 1
    addresses = (code.function("ws_launch_stub"), code.function("ws_launch_call"),
                 code.function("ws_kernel_getitem"), code.global_value("ws_getitem_ctx"))
    if not all(addresses):
        raise RuntimeError("the stub's object code lacks one of its functions")
    return (code, *addresses)
