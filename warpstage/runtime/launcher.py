"""The launch hot path: pack kernel parameters and call ``cuLaunchKernel``.

Kernel parameters are packed with one precompiled ``struct.Struct.pack_into`` call into a
per-thread ctypes buffer; a ``void*[]`` array pointing at each parameter's slot in that buffer is
built once per thread, and its address (an int) is what ``cuLaunchKernel`` receives as
``kernelParams``. The driver copies the parameters before ``cuLaunchKernel`` returns, so the buffer
is reused by the next launch on the same thread; cuda-bindings releases the GIL during the call,
which is why the buffer is per thread.

Each parameter gets its own 8-byte-aligned slot (larger for by-value blobs such as a 128-byte TMA
descriptor), zero-padded, so a kernel that reads a slightly wider integer than was packed still
sees the right value.

ABI — for each ``param_ctypes[i]``, what ``values[i]`` must be and how it is packed:

- pointer (``ctypes.c_void_p`` or ``ir.types.PointerType``): an int address
  (``TensorArg.data_ptr``) -> 8 bytes (PTX ``.param .u64``);
- ``c_int8/16/32/64``, ``c_uint8/16/32/64`` or ``ir.types.i8 .. u64``: an int -> its width,
  range-checked (``.s32``, ``.u64``, ...);
- ``c_float`` / ``ir.types.f32``, ``c_double`` / ``f64``: a float -> IEEE binary32 / binary64;
- ``ir.types.f16``: a float -> IEEE binary16 (``.b16``); ``ir.types.bf16``: a float -> bfloat16
  bits, rounded to nearest even (``.b16``); (``c_uint16`` takes raw bits instead);
- ``c_bool`` / ``ir.types.i1``: a bool (any truthy value) -> 1 byte, 0 or 1 (``.u8``);
- a ctypes Structure or Array type: bytes of exactly its size -> copied as is (e.g. a 128-byte
  TMA descriptor, ``.param .align 64 .b8 desc[128]``).

A value the type cannot hold raises ``ArgumentError`` naming the parameter; nothing is launched.

Grid and block are checked against the device limits before launching (:func:`check_launch_dims`,
a pure function in runtime/launch_dims.py); the check runs only when grid, block or shared memory differ from the previous
launch, so a repeated launch costs three comparisons.
"""
from __future__ import annotations

import ctypes
import struct
import threading
from typing import Optional, Sequence, Tuple

from ..errors import ArgumentError, LaunchError
from . import driver, raw_launch
from .launch_dims import (Dim3, LaunchLimits, check_cluster_dims, check_launch_dims, launch_limits,
                          normalize_dims)
from .params import _param_layout, float_to_bf16_bits
from .raw_launch import _POINTERS as _C_POINTERS
from .streams import _STREAMS, bindings_stream, current_stream, torch_stream_reader

__all__ = ["Launcher", "BoundLaunch", "LaunchLimits", "LAUNCH_PATHS", "normalize_dims", "check_launch_dims", "check_cluster_dims",
           "current_stream", "torch_stream_reader", "launch_limits", "float_to_bf16_bits"]

LAUNCH_PATHS = ("ctypes", "bindings")
# cuLaunchKernel's answers when the calling thread's current context is not the function's
# (another device's, or none): the launch is made again with the right one pushed (Launcher._call)
_WRONG_CONTEXT = frozenset({201, 400})   # CUDA_ERROR_INVALID_CONTEXT, CUDA_ERROR_INVALID_HANDLE


class Launcher:
    """Launches one kernel ``function`` (a ``driver.Function`` or a raw ``CUfunction``) whose
    parameters have the types ``param_ctypes``, in order: ctypes simple types, ``ir.types``
    ``ScalarType``/``PointerType``, or ctypes Structure/Array types for by-value blobs (see the
    ABI table in the module docstring). ``limits`` overrides the device/kernel limits (tests);
    ``param_names`` name parameters in errors. ``device``: the ordinal of the GPU whose primary
    context holds ``function`` (its module was loaded there); the launch runs there whichever
    context is current (docs/distributed.md, "Devices"). Cheap to call repeatedly, from any
    thread.

    ``path`` picks the driver call (docs/launch.md): 'ctypes' calls libcuda's ``cuLaunchKernel``
    directly (runtime/raw_launch.py), 'bindings' calls it through cuda-bindings; None takes
    ``WARPSTAGE_LAUNCH`` (default 'ctypes'). 'ctypes' falls back to 'bindings' when libcuda has
    no usable entry; ``path_used`` says which one launches (None before the first launch).
    """

    def __init__(self, function, param_ctypes: Sequence, limits: Optional[LaunchLimits] = None,
                 param_names: Optional[Sequence[str]] = None, path: Optional[str] = None,
                 device: int = 0):
        self.device = device
        if path is None:
            from ..options import env_launch_path
            path = env_launch_path()
        if path not in LAUNCH_PATHS:
            raise LaunchError(f"launch path must be one of {LAUNCH_PATHS}; got {path!r}")
        self.path = path
        self.path_used: Optional[str] = None
        self._raw = self._raw_function = None      # the ctypes entry and the CUfunction as c_void_p
        self.function = function
        self.handle = driver.function_handle(function)
        self.param_types = tuple(param_ctypes)
        self.param_names = tuple(param_names) if param_names else tuple(
            f"#{i}" for i in range(len(self.param_types)))
        fmt, offsets, offset, converters = ["="], [], 0, []
        for i, t in enumerate(self.param_types):
            code, size, convert = _param_layout(t)
            aligned = (offset + 7) & ~7
            fmt.append("x" * (aligned - offset) + code)
            offsets.append(aligned)
            offset = aligned + size
            if convert is not None:
                converters.append((i, convert))
        fmt.append("x" * (((offset + 7) & ~7) - offset))
        self._struct = struct.Struct("".join(fmt))
        self._pack_into = self._struct.pack_into
        self._offsets = tuple(offsets)
        self._converters = tuple(converters)
        self._tls = threading.local()
        self._limits = limits
        self._grid = self._block = self._smem = None   # the last launch shape that passed checks
        self._dims: Tuple[int, ...] = ()
        self._smem_allowed = driver.DEFAULT_DYNAMIC_SMEM_LIMIT
        self._cu = self._cuLaunchKernel = None
        self._ex_key = self._ex_config = None

    def _new_slot(self):
        """A packing buffer, the address of its ``void*[]`` (0 without params) as an int and as
        a ``c_void_p`` (None without params), and the ``void*[]`` itself (keep it alive)."""
        buf = ctypes.create_string_buffer(max(self._struct.size, 8))
        base = ctypes.addressof(buf)
        n = len(self._offsets)
        ptrs = (ctypes.c_void_p * max(n, 1))(*[base + off for off in self._offsets])
        address = ctypes.addressof(ptrs) if n else 0
        return buf, address, ctypes.c_void_p(address) if n else None, ptrs

    def _thread_slot(self):
        """This thread's packing buffer and its ``void*[]`` (see :meth:`_new_slot`)."""
        driver.ensure_context(self.device)  # a thread's first launch: a context if it has none
        self._tls.slot = self._new_slot()
        return self._tls.slot

    def _prepare(self, grid, block, smem_bytes: int) -> None:
        """The slow path of a new (grid, block, smem): normalize, check, opt into large smem."""
        g, b = normalize_dims(grid, "grid"), normalize_dims(block, "block")
        if not isinstance(smem_bytes, int):
            raise LaunchError(f"dynamic shared memory must be an int number of bytes; got "
                              f"{smem_bytes!r}")
        if self._limits is None:
            with driver.on_device(self.device):
                self._limits = launch_limits(self.function, self.device)
        check_launch_dims(g, b, self._limits, smem_bytes)
        if self._cu is None:
            self._cu = driver.cuda()
            driver.ensure_context(self.device)
            self._cuLaunchKernel = self._cu.cuLaunchKernel
            self._choose_path()
        if smem_bytes > self._smem_allowed:
            with driver.on_device(self.device):
                driver.set_max_dynamic_smem(self.function, smem_bytes, self.device)
            self._smem_allowed = smem_bytes
        self._dims = g + b
        # Lists are stored as tuples: they never compare equal again, so a list the caller
        # mutates later is re-checked.
        self._grid = tuple(grid) if isinstance(grid, list) else grid
        self._block = tuple(block) if isinstance(block, list) else block
        self._smem = smem_bytes

    def set_path(self, path: str) -> None:
        """Switch the driver call ('ctypes' or 'bindings'; benchmarks measure both in one
        process). Takes effect at once when the Launcher has launched, else at its first launch."""
        if path not in LAUNCH_PATHS:
            raise LaunchError(f"launch path must be one of {LAUNCH_PATHS}; got {path!r}")
        self.path = path
        self._raw = self._raw_function = None
        if self._cu is not None:
            self._choose_path()

    def _choose_path(self) -> None:
        raw = raw_launch.launch_function() if self.path == "ctypes" else None
        address = _handle_address(self.handle) if raw is not None else None
        if address is None:
            self.path_used = "bindings"
            return
        self._raw, self._raw_function, self.path_used = raw, ctypes.c_void_p(address), "ctypes"

    def _pack(self, values, slot=None):
        """Pack ``values`` into ``slot`` (default: this thread's); return the slot."""
        if slot is None:
            try:
                slot = self._tls.slot
            except AttributeError:
                slot = self._thread_slot()
        try:
            self._pack_into(slot[0], 0, *self._convert(values))
        except (struct.error, OverflowError, TypeError, ArgumentError) as e:
            raise self._explain_pack_error(values, e) from None
        return slot

    def _convert(self, values) -> Sequence:
        if not self._converters:
            return values
        values = list(values)
        for i, convert in self._converters:
            values[i] = convert(values[i])
        return values

    @property
    def param_offsets(self) -> Tuple[int, ...]:
        """Byte offset of each parameter's slot in the packed buffer."""
        return self._offsets

    def pack(self, values: Sequence) -> bytes:
        """The packed parameter buffer for ``values`` (what the ``void*[]`` entries point into),
        for tests and debugging. Raises ``ArgumentError`` like :meth:`launch`."""
        try:
            return self._struct.pack(*self._convert(values))
        except (struct.error, OverflowError, TypeError, ArgumentError) as e:
            raise self._explain_pack_error(values, e) from None

    def _explain_pack_error(self, values, error: Exception) -> ArgumentError:
        if len(values) != len(self.param_types):
            return ArgumentError(f"the kernel takes {len(self.param_types)} parameters; the launch "
                                 f"passed {len(values)}")
        for name, t, v in zip(self.param_names, self.param_types, values):
            code, _, convert = _param_layout(t)
            try:
                struct.pack("=" + code, convert(v) if convert else v)
            except Exception as e:
                return ArgumentError(f"kernel parameter {name} of type "
                                     f"{getattr(t, '__name__', t)} cannot hold {v!r}: {e}")
        return ArgumentError(f"kernel parameters could not be packed: {error}")

    def launch(self, grid, block, smem_bytes: int, stream_handle: int, values: Sequence) -> None:
        """Launch on ``grid`` CTAs of ``block`` threads (each an int or a 1-3 tuple) with
        ``smem_bytes`` bytes of dynamic shared memory on stream ``stream_handle`` (an int
        ``CUstream``; 0 = the legacy default stream), via ``cuLaunchKernel``. ``values``: one
        Python value per parameter.

        Raises ``LaunchError`` for dims over the device/kernel limits or a driver error,
        ``ArgumentError`` for a value its parameter type cannot hold. The launch is asynchronous:
        a fault inside the kernel shows at the next synchronizing call.
        """
        if grid != self._grid or block != self._block or smem_bytes != self._smem:
            self._prepare(grid, block, smem_bytes)
        if self._converters:                    # bf16 or by-value blobs: convert first
            slot = self._pack(values)
        else:                                   # _pack(), inlined: this is the hot path
            try:
                slot = self._tls.slot
                self._pack_into(slot[0], 0, *values)
            except (AttributeError, struct.error, OverflowError, TypeError):
                slot = self._pack(values)       # first launch on this thread, or a bad value
        raw = self._raw                         # _call's ctypes branch, inlined
        stream = _C_POINTERS.get(stream_handle) if stream_handle else None
        if raw is None or (stream is None and stream_handle):
            return self._call(self._dims, smem_bytes, stream_handle, slot)
        gx, gy, gz, bx, by, bz = self._dims
        if raw(self._raw_function, gx, gy, gz, bx, by, bz, smem_bytes, stream, slot[2], None):
            # refused, so nothing was launched: _call tries again (another device's context)
            # and explains an error that stays
            self._call(self._dims, smem_bytes, stream_handle, slot)

    def _call(self, dims, smem_bytes: int, stream_handle: int, slot) -> None:
        """The driver call for checked ``dims`` (grid + block) with a packed ``slot``."""
        gx, gy, gz, bx, by, bz = dims
        raw = self._raw
        if raw is not None:
            stream = None
            if stream_handle:
                stream = _C_POINTERS.get(stream_handle) or raw_launch.c_pointer(stream_handle)
            err = raw(self._raw_function, gx, gy, gz, bx, by, bz, smem_bytes, stream, slot[2],
                      None)
        else:
            stream = _STREAMS.get(stream_handle)
            if stream is None:
                stream = bindings_stream(self._cu, stream_handle)
            err, = self._cuLaunchKernel(self.handle, gx, gy, gz, bx, by, bz, smem_bytes, stream,
                                        slot[1], 0)
        if err in _WRONG_CONTEXT and self._cu is not None:
            err = self._call_on_device(dims, smem_bytes, stream, slot)
        if err:
            driver.check(err, f"launching a kernel on grid {dims[:3]}, block "
                              f"{dims[3:]} (cuLaunchKernel)", LaunchError)

    def _call_on_device(self, dims, smem_bytes: int, stream, slot) -> int:
        """The driver call again with this Launcher's device's primary context pushed: the
        calling thread had another device's context current (or none). ``stream`` is the value
        the first call passed. Returns the CUresult."""
        gx, gy, gz, bx, by, bz = dims
        with driver.on_device(self.device):
            if self._raw is not None:
                return self._raw(self._raw_function, gx, gy, gz, bx, by, bz, smem_bytes, stream,
                                 slot[2], None)
            return self._cuLaunchKernel(self.handle, gx, gy, gz, bx, by, bz, smem_bytes, stream,
                                        slot[1], 0)[0]

    def bind(self, grid, block, smem_bytes: int, values: Sequence) -> "BoundLaunch":
        """A :class:`BoundLaunch` of this kernel with ``values`` packed once into a buffer of its
        own (not this thread's, which other launches reuse): ``bound.launch(stream)`` launches
        without packing. Checks grid, block, smem and values as :meth:`launch` does."""
        if grid != self._grid or block != self._block or smem_bytes != self._smem:
            self._prepare(grid, block, smem_bytes)
        slot = self._pack(values, self._new_slot())
        return BoundLaunch(self, self._dims, smem_bytes, slot)

    def launch_cluster(self, grid, block, cluster, smem_bytes: int, stream_handle: int,
                       values: Sequence) -> None:
        """Like :meth:`launch`, in thread-block clusters of ``cluster`` CTAs (``cuLaunchKernelEx``
        with CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION). ``grid`` counts CTAs, not clusters.

        Kernels whose PTX fixes the cluster shape (``.reqnctapercluster``) launch with
        :meth:`launch` as well.
        """
        if grid != self._grid or block != self._block or smem_bytes != self._smem:
            self._prepare(grid, block, smem_bytes)
        key = (self._dims, cluster, smem_bytes, stream_handle)
        if key != self._ex_key:
            c = normalize_dims(cluster, "cluster")
            check_cluster_dims(self._dims[:3], c)
            self._ex_config = self._cluster_config(c, smem_bytes, stream_handle)
            self._ex_key = key
        params = self._pack(values)[1]
        err, = self._cu.cuLaunchKernelEx(self._ex_config, self.handle, params, 0)
        if err in _WRONG_CONTEXT:
            with driver.on_device(self.device):
                err, = self._cu.cuLaunchKernelEx(self._ex_config, self.handle, params, 0)
        if err:
            driver.check(err, f"launching a kernel on grid {self._dims[:3]}, block "
                              f"{self._dims[3:]}, cluster {cluster} (cuLaunchKernelEx)",
                         LaunchError)

    def _cluster_config(self, cluster: Dim3, smem_bytes: int, stream_handle: int):
        cu = self._cu
        attr = cu.CUlaunchAttribute()
        attr.id = cu.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
        attr.value.clusterDim.x, attr.value.clusterDim.y, attr.value.clusterDim.z = cluster
        config = cu.CUlaunchConfig()
        (config.gridDimX, config.gridDimY, config.gridDimZ,
         config.blockDimX, config.blockDimY, config.blockDimZ) = self._dims
        config.sharedMemBytes = smem_bytes
        config.hStream = bindings_stream(cu, stream_handle)
        config.attrs = [attr]
        config.numAttrs = 1
        return config


class BoundLaunch:
    """One kernel with its parameter values packed once (``Launcher.bind``): what a prepared
    launch (``kern[grid, block].prepare(...)``) and a captured CUDA graph replay. ``launch(stream)``
    costs the driver call only; ``rebind(values)`` repacks in place (the ``void*[]`` and its
    address stay the same)."""

    __slots__ = ("launcher", "dims", "smem", "slot")

    def __init__(self, launcher: Launcher, dims, smem: int, slot):
        self.launcher, self.dims, self.smem, self.slot = launcher, dims, smem, slot

    def rebind(self, values: Sequence) -> None:
        """Pack ``values`` into this launch's buffer. Raises ``ArgumentError`` like ``launch``."""
        self.launcher._pack(values, self.slot)

    def launch(self, stream_handle: int) -> None:
        """Launch on the int ``CUstream`` ``stream_handle`` (0 = the legacy default stream).
        The dims were checked, and large shared memory opted into, when it was bound."""
        self.launcher._call(self.dims, self.smem, stream_handle, self.slot)


def _handle_address(handle) -> Optional[int]:
    """The address of a ``CUfunction`` (a cuda-bindings object or an int), or None."""
    if isinstance(handle, int):
        return handle
    try:
        return int(handle)
    except (TypeError, ValueError):
        get = getattr(handle, "getPtr", None)
        return int(get()) if get is not None else None
