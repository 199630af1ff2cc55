"""A thin, lazy wrapper over the CUDA driver API (``cuda.bindings.driver``).

This module and its siblings in ``runtime/`` are the only places that import ``cuda.bindings``,
and only when a function here is first called. Every cuda-bindings call returns a tuple
``(CUresult, *outputs)``; :func:`check` turns a failed ``CUresult`` into ``DeviceError``.

Context policy: warpstage uses the **primary context** of each device (``cuDevicePrimaryCtxRetain``),
the context the CUDA runtime, torch and cupy use, so their device pointers are valid in our
kernels and ours in theirs. A module is loaded into the primary context of the device it runs on
(:func:`load_module`), which is pushed for the load and popped after it (:func:`on_device`), so
the calling thread's current context, which torch's current device is, never changes under the
user. A thread with no current context at all gets device ``ordinal``'s primary context, as the
CUDA runtime does lazily (:func:`ensure_context`). See docs/distributed.md ("Devices").

Modules are never unloaded implicitly: a ``Function`` keeps its ``Module`` alive, and the kernel
cache keeps functions for the life of the process.
"""
from __future__ import annotations

import ctypes
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Optional

from ..errors import DeviceError, LaunchError

__all__ = [
    "cuda", "check", "device_count", "device", "context", "primary_context", "ensure_context",
    "on_device",
    "Module", "Function", "load_module", "get_function",
    "function_handle",
    "set_max_dynamic_smem", "FuncAttributes", "func_attributes", "mem_alloc", "mem_free",
    "memcpy_htod", "memcpy_dtoh", "synchronize", "DEFAULT_DYNAMIC_SMEM_LIMIT",
]

DEFAULT_DYNAMIC_SMEM_LIMIT = 48 * 1024
"""Bytes of dynamic shared memory a kernel may use without opting in via cuFuncSetAttribute."""

_JIT_LOG_BYTES = 64 * 1024

_driver = None
_lock = threading.Lock()
_primary: dict = {}    # device ordinal -> its retained primary context (a CUcontext)
_tls = threading.local()


def cuda():
    """The ``cuda.bindings.driver`` module, imported on first use.

    Raises ``DeviceError`` (via ``target.require_cuda``) when no usable GPU is present, so a
    caller never sees a raw ImportError or a cuda-bindings loader exception.
    """
    global _driver
    if _driver is None:
        from .target import require_cuda
        require_cuda()
        from cuda.bindings import driver
        _driver = driver
    return _driver


def _error_text(result) -> str:
    d = _driver
    name, text = getattr(result, "name", str(result)), ""
    if d is not None:
        try:
            err, raw = d.cuGetErrorName(result)
            if not err and raw:
                name = raw.decode(errors="replace")
            err, raw = d.cuGetErrorString(result)
            if not err and raw:
                text = raw.decode(errors="replace")
        except Exception:  # the error path must not raise a different error
            pass
    return f"{name} ({text})" if text else name


def check(result, what: str, error=DeviceError) -> None:
    """Raise ``error`` (default ``DeviceError``) when ``result`` (a ``CUresult``) is not
    CUDA_SUCCESS. The message names the CUDA error (``cuGetErrorName``), its description
    (``cuGetErrorString``) and ``what`` was being done, e.g. "loading a PTX module"."""
    if result:
        raise error(f"CUDA driver error while {what}: {_error_text(result)}")


def device_count() -> int:
    """The number of CUDA devices this process sees (``cuDeviceGetCount``). Raises
    ``DeviceError`` without a usable GPU."""
    err, count = cuda().cuDeviceGetCount()
    check(err, "counting CUDA devices")
    return count


def device(ordinal: int = 0):
    """The ``CUdevice`` for ``ordinal`` (``cuDeviceGet``). Raises ``DeviceError``."""
    d = cuda()
    err, count = d.cuDeviceGetCount()
    check(err, "counting CUDA devices")
    if not 0 <= ordinal < count:
        raise DeviceError(f"CUDA device {ordinal} does not exist; this machine has {count} "
                          f"device(s), numbered 0..{count - 1}")
    err, dev = d.cuDeviceGet(ordinal)
    check(err, f"getting CUDA device {ordinal}")
    return dev


def primary_context(ordinal: int = 0):
    """The primary context of device ``ordinal``, retained on first use
    (``cuDevicePrimaryCtxRetain``, never released: the process keeps it until exit, as the CUDA
    runtime does). Raises ``DeviceError`` without a usable GPU or for a device that does not
    exist."""
    ctx = _primary.get(ordinal)
    if ctx is None:
        d = cuda()
        with _lock:
            ctx = _primary.get(ordinal)
            if ctx is None:
                dev = device(ordinal)
                err, ctx = d.cuDevicePrimaryCtxRetain(dev)
                check(err, f"retaining the primary context of device {ordinal}")
                _primary[ordinal] = ctx
    return ctx


def context():
    """Make the primary context of device 0 current on the calling thread and return it (the
    memory helpers below and tests; launches use :func:`ensure_context` and :func:`on_device`).

    The first call on each thread makes it current (``cuCtxSetCurrent``); later calls cost one
    attribute read. Raises ``DeviceError`` without a usable GPU.
    """
    ctx = getattr(_tls, "ctx", None)
    if ctx is not None:
        return ctx
    d = cuda()
    primary = primary_context(0)
    err, = d.cuCtxSetCurrent(primary)
    check(err, "making the primary context of device 0 current")
    _tls.ctx = primary
    return primary


def _current_context():
    err, ctx = cuda().cuCtxGetCurrent()
    check(err, "reading the current context (cuCtxGetCurrent)")
    return ctx if ctx is not None and int(ctx) else None


def ensure_context(ordinal: int = 0) -> None:
    """Give the calling thread a current context if it has none: the primary context of device
    ``ordinal`` (``cuCtxSetCurrent``), as the CUDA runtime does on a thread's first call. A
    thread that has one (torch's current device, say) keeps it. Raises ``DeviceError``."""
    if _current_context() is None:
        err, = cuda().cuCtxSetCurrent(primary_context(ordinal))
        check(err, f"making the primary context of device {ordinal} current")


@contextmanager
def on_device(ordinal: int):
    """Run the body with device ``ordinal``'s primary context current on this thread: pushed
    (``cuCtxPushCurrent``) when another context is current, popped (``cuCtxPopCurrent``) after,
    so the thread's current context is what it was. Raises ``DeviceError``."""
    d = cuda()
    primary = primary_context(ordinal)
    current = _current_context()
    if current is not None and int(current) == int(primary):
        yield primary
        return
    err, = d.cuCtxPushCurrent(primary)
    check(err, f"making the primary context of device {ordinal} current (cuCtxPushCurrent)")
    try:
        yield primary
    finally:
        err, _ = d.cuCtxPopCurrent()
        check(err, f"restoring the context current before device {ordinal}'s (cuCtxPopCurrent)")


@dataclass(frozen=True, eq=False)
class Module:
    """A loaded CUDA module. ``handle`` is the ``CUmodule``; ``kind`` 'cubin' or 'ptx';
    ``jit_log`` the driver's PTX JIT info log (empty for cubin)."""

    handle: Any
    kind: str
    jit_log: str = ""


@dataclass(frozen=True, eq=False)
class Function:
    """A kernel entry of a loaded module. ``handle`` is the ``CUfunction`` passed to
    ``cuLaunchKernel``; it holds ``module`` so the module outlives every function taken from it."""

    handle: Any
    name: str
    module: Module


def load_module(image: bytes, is_ptx: bool, device: int = 0) -> Module:
    """Load a cubin (``cuModuleLoadData``) or PTX (``cuModuleLoadDataEx``, the driver's PTX JIT —
    the fallback when no ptxas is installed) into the primary context of ``device`` (made
    current for the load only: :func:`on_device`).

    ``image``: the cubin bytes, or the PTX text (bytes or str; a NUL terminator is appended when
    missing — the driver reads PTX as a C string). Raises ``DeviceError`` carrying the driver's
    JIT error log when the PTX does not compile.
    """
    with on_device(device):
        return _load_module(image, is_ptx)


def _load_module(image, is_ptx: bool) -> Module:
    d = cuda()
    if not is_ptx:
        err, mod = d.cuModuleLoadData(bytes(image))
        check(err, "loading a cubin module (cuModuleLoadData)")
        return Module(mod, "cubin")
    ptx = image.encode() if isinstance(image, str) else bytes(image)
    if not ptx.endswith(b"\0"):
        ptx += b"\0"
    J = d.CUjit_option
    info_log, error_log = bytearray(_JIT_LOG_BYTES), bytearray(_JIT_LOG_BYTES)
    options = [J.CU_JIT_INFO_LOG_BUFFER, J.CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
               J.CU_JIT_ERROR_LOG_BUFFER, J.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES]
    values = [info_log, _JIT_LOG_BYTES, error_log, _JIT_LOG_BYTES]
    try:
        err, mod = d.cuModuleLoadDataEx(ptx, len(options), options, values)
    except TypeError:  # a cuda-bindings version that cannot pass log buffers: load without logs
        err, mod = d.cuModuleLoadDataEx(ptx, 0, [], [])
    if err:
        log = _c_string(error_log) or _c_string(info_log)
        detail = f"\nJIT log:\n{log}" if log else ""
        raise DeviceError(f"CUDA driver error while JIT-compiling PTX (cuModuleLoadDataEx): "
                          f"{_error_text(err)}{detail}")
    return Module(mod, "ptx", _c_string(info_log))


def _c_string(buf: bytearray) -> str:
    return bytes(buf).split(b"\0", 1)[0].decode(errors="replace").strip()


def get_function(module: Module, name: str) -> Function:
    """The kernel entry ``name`` of ``module`` (``cuModuleGetFunction``). Raises ``DeviceError``
    when the module has no entry of that name (CUDA_ERROR_NOT_FOUND)."""
    d = cuda()
    err, fn = d.cuModuleGetFunction(module.handle, name.encode())
    check(err, f"looking up kernel {name!r} in its module (cuModuleGetFunction)")
    return Function(fn, name, module)


def function_handle(function):
    """The raw ``CUfunction`` of a :class:`Function` (or ``function`` itself when it is raw)."""
    return function.handle if isinstance(function, Function) else function


def set_max_dynamic_smem(function, nbytes: int, device: int = 0) -> None:
    """Allow ``function`` to launch with ``nbytes`` bytes of dynamic shared memory.

    Only needed above 48 KiB (``DEFAULT_DYNAMIC_SMEM_LIMIT``); calls ``cuFuncSetAttribute(
    CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)`` then, and does nothing below. Raises
    ``LaunchError`` when static + dynamic shared memory exceeds the device's opt-in limit.
    """
    if nbytes <= DEFAULT_DYNAMIC_SMEM_LIMIT:
        return
    from .target import device_properties

    d = cuda()
    optin = device_properties(device).max_smem_per_block_optin
    static = func_attributes(function).static_smem_bytes
    if static + nbytes > optin:
        raise LaunchError(
            f"the kernel asks for {nbytes} bytes ({nbytes / 1024:.1f} KiB) of dynamic shared "
            f"memory plus {static} bytes static; the device allows at most {optin} bytes "
            f"({optin / 1024:.1f} KiB) per CTA. Fix: use fewer pipeline stages or smaller tiles.")
    attribute = d.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    err, = d.cuFuncSetAttribute(function_handle(function), attribute, int(nbytes))
    check(err, f"allowing {nbytes} bytes of dynamic shared memory (cuFuncSetAttribute)",
          LaunchError)


@dataclass(frozen=True)
class FuncAttributes:
    """Resource usage of a loaded kernel, from ``cuFuncGetAttribute``. Sizes in bytes;
    ``local_bytes`` is per thread (non-zero means register spills or local arrays)."""

    num_regs: int                  # registers per thread
    static_smem_bytes: int         # per CTA
    local_bytes: int               # per thread
    const_bytes: int
    max_threads_per_block: int     # for this kernel, given its register use
    max_dynamic_smem_bytes: int    # current opt-in value
    ptx_version: int               # e.g. 80 for PTX ISA 8.0
    binary_version: int            # e.g. 90 for sm_90


def func_attributes(function) -> FuncAttributes:
    """Registers, shared/local/constant memory and thread limit of ``function``. Raises
    ``DeviceError``."""
    d = cuda()
    F = d.CUfunction_attribute
    handle = function_handle(function)

    def get(name: str) -> int:
        err, value = d.cuFuncGetAttribute(getattr(F, "CU_FUNC_ATTRIBUTE_" + name), handle)
        check(err, f"reading kernel attribute {name} (cuFuncGetAttribute)")
        return int(value)

    return FuncAttributes(
        num_regs=get("NUM_REGS"), static_smem_bytes=get("SHARED_SIZE_BYTES"),
        local_bytes=get("LOCAL_SIZE_BYTES"), const_bytes=get("CONST_SIZE_BYTES"),
        max_threads_per_block=get("MAX_THREADS_PER_BLOCK"),
        max_dynamic_smem_bytes=get("MAX_DYNAMIC_SHARED_SIZE_BYTES"),
        ptx_version=get("PTX_VERSION"), binary_version=get("BINARY_VERSION"))


# -- memory helpers (tests, benchmarks); kernels normally get torch/cupy tensors ----------------

def mem_alloc(nbytes: int) -> int:
    """Allocate ``nbytes`` bytes of device memory (``cuMemAlloc``); returns the device address."""
    d = cuda()
    context()
    err, ptr = d.cuMemAlloc(max(1, int(nbytes)))
    check(err, f"allocating {nbytes} bytes of device memory (cuMemAlloc)")
    return int(ptr)


def mem_free(ptr: int) -> None:
    """Free memory from :func:`mem_alloc` (``cuMemFree``)."""
    d = cuda()
    context()
    err, = d.cuMemFree(int(ptr))
    check(err, f"freeing device memory at {int(ptr):#x} (cuMemFree)")


def _host_buffer(obj, writable: bool):
    """(address, nbytes, keepalive) of a C-contiguous host buffer: a numpy array, bytearray,
    bytes (read-only) or any object with the buffer protocol."""
    iface = getattr(obj, "__array_interface__", None)
    if iface is not None and hasattr(obj, "ctypes"):   # numpy array
        if not obj.flags["C_CONTIGUOUS"]:
            raise ValueError("host array must be C-contiguous; use numpy.ascontiguousarray(a)")
        if writable and not obj.flags["WRITEABLE"]:
            raise ValueError("destination host array is read-only")
        return obj.ctypes.data, obj.nbytes, obj
    view = memoryview(obj).cast("B")
    if view.readonly:
        if writable:
            raise ValueError("destination host buffer is read-only")
        buf = ctypes.create_string_buffer(view.tobytes(), len(view))
    else:
        buf = (ctypes.c_char * len(view)).from_buffer(view)
    return ctypes.addressof(buf), len(view), buf


def memcpy_htod(dst: int, src, nbytes: Optional[int] = None) -> None:
    """Copy ``nbytes`` bytes (default: all of ``src``) from host buffer ``src`` to device address
    ``dst`` (``cuMemcpyHtoD``, synchronous)."""
    d = cuda()
    context()
    addr, size, keep = _host_buffer(src, writable=False)
    n = size if nbytes is None else int(nbytes)
    if n > size:
        raise ValueError(f"copy of {n} bytes from a host buffer of {size} bytes")
    err, = d.cuMemcpyHtoD(int(dst), addr, n)
    check(err, f"copying {n} bytes host -> device (cuMemcpyHtoD)")
    del keep


def memcpy_dtoh(dst, src: int, nbytes: Optional[int] = None) -> None:
    """Copy ``nbytes`` bytes (default: the size of ``dst``) from device address ``src`` into the
    writable host buffer ``dst`` (``cuMemcpyDtoH``, synchronous)."""
    d = cuda()
    context()
    addr, size, keep = _host_buffer(dst, writable=True)
    n = size if nbytes is None else int(nbytes)
    if n > size:
        raise ValueError(f"copy of {n} bytes into a host buffer of {size} bytes")
    err, = d.cuMemcpyDtoH(addr, int(src), n)
    check(err, f"copying {n} bytes device -> host (cuMemcpyDtoH)")
    del keep


def synchronize() -> None:
    """Wait for all work in the primary context (``cuCtxSynchronize``). A kernel fault shows
    here (e.g. CUDA_ERROR_ILLEGAL_ADDRESS) as ``DeviceError``."""
    d = cuda()
    context()
    err, = d.cuCtxSynchronize()
    check(err, "waiting for the GPU (cuCtxSynchronize)")
