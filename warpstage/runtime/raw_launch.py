"""``cuLaunchKernel`` called straight from libcuda through ctypes: the launch path's driver call.

cuda-bindings' ``cuLaunchKernel`` checks and converts each of its eleven arguments in Python
before calling the driver (CUfunction and CUstream wrappers, the ``kernelParams`` helper), which
costs 3.8–4.9 µs per call on the H200 host (benchmarks/RESULTS.md). The driver itself needs no
Python objects: a function handle, six ``unsigned int`` dims, the dynamic smem bytes, a stream
handle and the address of a ``void*[]`` of parameter pointers. This module calls the C entry
``cuLaunchKernel`` of ``libcuda.so.1`` (``ctypes.CDLL``, which releases the GIL during the call,
as cuda-bindings does) with arguments that are already C values: the function and stream as
cached ``ctypes.c_void_p`` objects, the dims and smem as small Python ints (no ``argtypes``: an
int becomes a C ``int``, which is how the System V x86-64 ABI passes an ``unsigned int`` below
2**31; larger dims are rejected by the launch checks first), ``kernelParams`` as a ``c_void_p``
made once per packing buffer.

The exported symbol ``cuLaunchKernel`` is the legacy-default-stream version, the one cuda-bindings
resolves by default (``cuGetProcAddress`` without ``CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM``)
and the one torch's launches use; stream 0 means the same stream on both paths. Both paths call
into the one ``libcuda`` of the process and launch in the calling thread's current context; when
that is not the function's (another device's), the Launcher pushes its device's primary context
and launches again (``Launcher._call_on_device``, docs/distributed.md).

Which path :class:`~warpstage.runtime.launcher.Launcher` uses: this one when libcuda loads and
``WARPSTAGE_LAUNCH`` is not ``bindings`` (``options.env_launch_path``), else cuda-bindings; tests
and benchmarks choose per Launcher (``Launcher(..., path=...)``). See docs/launch.md.
"""
from __future__ import annotations

import ctypes
from typing import Optional

from .streams import cached_handle

__all__ = ["launch_function", "unavailable_reason", "set_launch_function", "c_pointer", "LIBCUDA"]

LIBCUDA = "libcuda.so.1"

_fn = None          # the ctypes function, False once loading it failed; None: not tried yet
_reason = ""        # why it could not be loaded


def _load():
    global _fn, _reason
    try:
        lib = ctypes.CDLL(LIBCUDA)
        fn = lib.cuLaunchKernel
    except (OSError, AttributeError) as e:
        _fn, _reason = False, f"{LIBCUDA} has no usable cuLaunchKernel ({e})"
        return None
    fn.restype = ctypes.c_int          # CUresult
    _fn = fn
    return fn


def launch_function():
    """libcuda's ``CUresult cuLaunchKernel(CUfunction f, unsigned gridDimX, gridDimY, gridDimZ,
    unsigned blockDimX, blockDimY, blockDimZ, unsigned sharedMemBytes, CUstream hStream,
    void **kernelParams, void **extra)`` (CUDA Driver API, Execution Control) as a ctypes
    function, or None when libcuda cannot be loaded (see :func:`unavailable_reason`)."""
    if _fn is None:
        return _load()
    return _fn or None


def unavailable_reason() -> str:
    """Why :func:`launch_function` returned None ('' when it did not)."""
    return _reason


def set_launch_function(fn) -> None:
    """Replace the driver entry (tests: a Python callable with the same arguments that returns a
    CUresult int; None: load libcuda again on the next launch)."""
    global _fn, _reason
    _fn, _reason = fn, ""


_POINTERS: dict = {}


def c_pointer(address: int) -> Optional[ctypes.c_void_p]:
    """A cached ``ctypes.c_void_p`` for a handle or address (a stream, a CUfunction), so the hot
    path passes a ready C value instead of building one per launch. 0 gives None (NULL).
    Raises ``LaunchError`` for a handle that is not an int."""
    return cached_handle(_POINTERS, address, ctypes.c_void_p) if address else None
