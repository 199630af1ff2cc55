"""Simulated memory: the global address space (host numpy arrays at fake device addresses) and
a CTA's shared memory (a byte array).

Global memory. ``Memory.register(array)`` maps the numpy buffer that owns ``array`` (the root of
its ``.base`` chain, so strided and offset views work) at a fake device address and returns the
address of ``array``'s first element (index ``[0, 0, ...]``). Loads and stores read and write the
host array itself, so results are read back from the arrays that were registered. Buffers start
256-byte aligned (preserving the host address modulo 256, so alignment facts carry over) with a
4 KiB unmapped gap between buffers, so running off the end of one buffer faults instead of
landing in the next one.

Accesses take an int64 vector of byte addresses (one per active lane) and must be naturally
aligned (as PTX ld/st require). Faults raise ``AccessFault`` carrying the position of the first bad
address in the vector; the memory-op handlers turn it into an ``OutOfBoundsError`` naming the op's
source line, the lane and the thread.
"""
from __future__ import annotations

import bisect
import ctypes
from typing import Optional

import numpy as np

from .dtypes import LANES

__all__ = ["Memory", "SharedMemory", "Buffer", "AccessFault", "GLOBAL_BASE"]

GLOBAL_BASE = 0x10000000
_ALIGN = 256
_GAP = 4096


class AccessFault(Exception):
    """Internal: address ``addrs[position]`` faulted; ``reason`` says why (no location yet)."""

    def __init__(self, position: int, address: int, reason: str, out_of_bounds: bool = True,
                 fix: str = ""):
        super().__init__(reason)
        self.position = position
        self.address = address
        self.reason = reason
        self.out_of_bounds = out_of_bounds
        self.fix = fix


class Buffer:
    """One mapped allocation: ``size`` bytes at device address ``start``, backed by ``data``
    (a 1-D uint8 numpy array aliasing the host memory)."""

    def __init__(self, start: int, data: np.ndarray, label: str, readonly: bool = False,
                 owner=None):
        self.start = start
        self.size = int(data.size)
        self.end = start + self.size
        self.data = data
        self.label = label
        self.readonly = readonly
        self.owner = owner
        self._views: dict = {}

    def typed(self, dtype: np.dtype) -> "TypedView":
        """``data`` read as ``dtype`` from the first address aligned to the item size."""
        tv = self._views.get(dtype)
        if tv is None:
            tv = self._views[dtype] = TypedView(self, dtype)
        return tv

    def describe(self) -> str:
        return f"{self.label} at [{self.start:#x}, {self.end:#x})"


class TypedView:
    """A buffer seen as an array of ``dtype``: element i lives at address ``base + i * k``.
    Holds 32-lane constants for the vectorized address checks."""

    def __init__(self, buf: Buffer, dtype: np.dtype):
        k = dtype.itemsize
        phase = (-buf.start) % k
        n = max(0, (buf.size - phase) // k)
        self.base = buf.start + phase
        self.view = buf.data[phase:phase + n * k].view(dtype)
        self.k = k
        self.base32 = np.full(LANES, self.base, np.int64)
        self.limit32 = np.full(LANES, n, np.uint64)
        self.align32 = np.full(LANES, k - 1, np.int64)
        self.shift32 = np.full(LANES, k.bit_length() - 1, np.int64)

    def index(self, addrs: np.ndarray):
        """Element indices of ``addrs``, or None if one is misaligned or outside the view."""
        n = addrs.shape[0]
        if n == LANES:
            base, limit, align, shift = self.base32, self.limit32, self.align32, self.shift32
        else:
            base, limit, align, shift = (self.base32[:n], self.limit32[:n], self.align32[:n],
                                         self.shift32[:n])
        rel = addrs - base
        if self.k > 1:
            if np.count_nonzero(rel & align):
                return None
            rel = rel >> shift
        if np.count_nonzero(rel.view(np.uint64) >= limit):
            return None
        return rel


class _Space:
    """Address translation shared by global and shared memory."""

    name = "memory"

    def __init__(self):
        self.buffers: list[Buffer] = []   # sorted by start address
        self._starts: list[int] = []
        self._by_start: dict[int, Buffer] = {}

    def _add(self, buf: Buffer) -> None:
        i = bisect.bisect(self._starts, buf.start)
        self._starts.insert(i, buf.start)
        self.buffers.insert(i, buf)
        self._by_start[buf.start] = buf

    def find(self, address: int) -> Optional[Buffer]:
        """The buffer containing byte ``address``, or None."""
        i = bisect.bisect(self._starts, address) - 1
        if i >= 0 and address < self.buffers[i].end:
            return self.buffers[i]
        return None

    def nearest(self, address: int) -> str:
        """Where ``address`` lies relative to the closest buffer, for error messages."""
        if not self.buffers:
            return f"no {self.name} is mapped"
        best = None
        for b in self.buffers:
            if address < b.start:
                d, text = b.start - address, f"{b.start - address} bytes before the start of"
            elif address >= b.end:
                d, text = address - b.end, f"{address - b.end} bytes past the end of"
            else:
                d, text = 0, "inside"
            if best is None or d < best[0]:
                best = (d, f"{text} {b.describe()}")
        return best[1]

    def _fast(self, addrs: np.ndarray, dtype: np.dtype, hint: list):
        """(buffer, view, index) when every address is an aligned element of one buffer.

        ``hint`` is a per-op cache: ``hint[0]`` the start address of the buffer this op hit
        last time, tried first (one op almost always accesses one buffer)."""
        b = self._by_start.get(hint[0])
        if b is not None:
            idx = b.typed(dtype).index(addrs)
            if idx is not None:
                return b, b.typed(dtype).view, idx
        b2 = self.find(int(addrs[0]))
        if b2 is None or b2 is b:
            return None
        hint[0] = b2.start
        tv = b2.typed(dtype)
        idx = tv.index(addrs)
        return None if idx is None else (b2, tv.view, idx)

    def _slow(self, addrs: np.ndarray, dtype: np.dtype, store: bool):
        """Per-lane translation; returns a list of (buffer, view, positions, indices) groups or
        raises AccessFault for the first bad lane."""
        k = dtype.itemsize
        groups: dict[int, list] = {}
        for pos, a in enumerate(addrs.tolist()):
            if a % k:
                raise AccessFault(pos, a, f"misaligned {k}-byte access (the address is not a "
                                          f"multiple of {k})", out_of_bounds=False,
                                  fix="keep an element's byte offset a multiple of its size "
                                      "(a view's offset, or a pointer cast to a wider type)")
            b = self.find(a)
            if b is None or a + k > b.end:
                raise AccessFault(pos, a, self.nearest(a))
            groups.setdefault(id(b), [b, [], []])
            groups[id(b)][1].append(pos)
            groups[id(b)][2].append((a - b.typed(dtype).base) // k)
        out = []
        for b, positions, idx in groups.values():
            if store and b.readonly:
                raise AccessFault(positions[0], int(addrs[positions[0]]),
                                  f"store into read-only {b.describe()}",
                                  out_of_bounds=False,
                                  fix="pass a writable array for a tensor the kernel stores "
                                      "into (np.array(a) copies a read-only one)")
            out.append((b, b.typed(dtype).view, np.array(positions), np.array(idx, np.int64)))
        return out

    def rmw_view(self, addrs: np.ndarray, dtype: np.dtype, hint: list):
        """(view, indices) for a read-modify-write of one ``dtype`` element at each byte address
        of ``addrs`` (int64 vector, at least one): ``view[indices[i]]`` is the element at
        ``addrs[i]``. None where the per-lane ``load``/``store`` path must run instead: an
        address misaligned, outside one writable buffer, or (subclasses) accesses that are
        observed one by one. ``hint`` as for ``load``."""
        hit = self._fast(addrs, dtype, hint)
        if hit is None or hit[0].readonly:
            return None
        return hit[1], hit[2]

    def load(self, addrs: np.ndarray, dtype: np.dtype, hint: Optional[list] = None) -> np.ndarray:
        """Read one ``dtype`` element at each byte address of ``addrs`` (int64 vector).
        ``hint``: a per-call-site ``[None]`` list the translation caches its last buffer in."""
        hit = self._fast(addrs, dtype, hint or [None])
        if hit is not None:
            return hit[1][hit[2]]
        out = np.empty(addrs.size, dtype)
        for _, view, positions, idx in self._slow(addrs, dtype, False):
            out[positions] = view[idx]
        return out

    def store(self, addrs: np.ndarray, values: np.ndarray, hint: Optional[list] = None) -> None:
        """Write ``values[i]`` (numpy vector of the memory dtype) at byte address ``addrs[i]``.
        Lanes writing one address: the highest lane wins. ``hint`` as for ``load``."""
        hit = self._fast(addrs, values.dtype, hint or [None])
        if hit is not None and not hit[0].readonly:
            hit[1][hit[2]] = values
            return
        for _, view, positions, idx in self._slow(addrs, values.dtype, True):
            view[idx] = values[positions]




def _root(array: np.ndarray) -> np.ndarray:
    root = array
    while isinstance(root.base, np.ndarray):
        root = root.base
    return root


def _bytes_of(root: np.ndarray, low: int, high: int) -> np.ndarray:
    """A writable-as-the-root uint8 view of the host bytes [low, high) owned by ``root``."""
    if root.flags.c_contiguous or root.flags.f_contiguous:
        flat = root.ravel(order="K")
        if flat.size == 0:
            return np.zeros(0, np.uint8)
        return flat.view(np.uint8)
    raw = (ctypes.c_uint8 * (high - low)).from_address(low)
    data = np.frombuffer(raw, np.uint8)
    if not root.flags.writeable:
        data.flags.writeable = False
    return data


class Memory(_Space):
    """The global address space of a simulated launch (or several: addresses stay valid for the
    life of this object).

    ``register(array)`` -> address of ``array[0, ...]``; registering a view of an already mapped
    buffer (or the same array again) reuses that mapping. Kernels then reach any byte of the
    owning buffer, so a view's strides are the caller's business, as on a GPU.
    """

    name = "global memory"

    def __init__(self):
        super().__init__()
        self._next = GLOBAL_BASE

    def register(self, array: np.ndarray, label: Optional[str] = None) -> int:
        """Map ``array``'s owning buffer (once) and return the device address of ``array[0,...]``.

        Raises TypeError for anything but a numpy ndarray (a copy would not be visible to the
        caller afterwards)."""
        if not isinstance(array, np.ndarray):
            raise TypeError(f"Memory.register needs a numpy ndarray, got {type(array).__name__}")
        root = _root(array)
        low, high = np.lib.array_utils.byte_bounds(root)
        for b in self.buffers:
            host_low = b.owner[1]
            if host_low <= low and high <= host_low + b.size and b.size:
                return b.start + (array.ctypes.data - host_low)
        start = -(-self._next // _ALIGN) * _ALIGN + low % _ALIGN
        data = _bytes_of(root, low, high)
        if label is None:
            label = f"buffer #{len(self.buffers)} ({root.dtype}{list(root.shape)})"
        buf = Buffer(start, data, label, readonly=not root.flags.writeable, owner=(root, low))
        self._add(buf)
        self._next = buf.end + _GAP
        return start + (array.ctypes.data - low)

    def allocate(self, shape, dtype, label: Optional[str] = None):
        """A zeroed device buffer: returns (address, host array aliasing it)."""
        array = np.zeros(shape, dtype)
        return self.register(array, label), array


class SharedMemory(_Space):
    """One CTA's shared memory: ``size`` bytes addressed from 0 (PTX shared-window offsets)."""

    name = "shared memory"

    def __init__(self, size: int, fill: int = 0):
        super().__init__()
        self.bytes = np.full(size, fill, np.uint8)
        self._add(Buffer(0, self.bytes, f"the CTA's {size}-byte shared memory"))

    def nearest(self, address: int) -> str:
        return f"outside the CTA's {self.bytes.size}-byte shared memory [0, {self.bytes.size:#x})"
