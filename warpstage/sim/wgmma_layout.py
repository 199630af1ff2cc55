"""wgmma's register-fragment and shared-memory operand layouts (PTX ISA 8.0 "Asynchronous
Warpgroup Level Matrix Multiply-Accumulate Instructions": "Register Fragments", "Matrix
Descriptor Format", "Shared Memory Matrix Layout"), as ``sim/ops_wgmma.py`` documents them."""
from __future__ import annotations

import numpy as np

from ..ir.ops_wgmma import accumulator_tv, decode_descriptor
from ..ir.swizzle import swizzle_offset
from .dtypes import LANES

__all__ = ["FRAGMENT", "fragment_coords", "decode_descriptor", "operand_addresses"]

_THREADS = 4 * LANES                     # a warpgroup


def _layout_index(x, shape: tuple, stride: tuple):
    """``crd2idx`` of the 1-D coordinates ``x`` (an int array) in the flat layout
    ``shape:stride``: ``x`` split column-major over ``shape``, dotted with ``stride``."""
    idx = np.zeros_like(x)
    for s, d in zip(shape, stride):
        idx = idx + (x % s) * d
        x = x // s
    return idx


def fragment_coords(n: int) -> tuple:
    """(rows, cols): int arrays of shape (4 warps, n/2 elements, 32 lanes) giving the D-matrix
    position of each register of an m64nN accumulator fragment: the thread-value layout
    ``ir.ops_wgmma.accumulator_tv(n)`` evaluated at every (thread, register)."""
    (t_shape, v_shape), (t_stride, v_stride) = accumulator_tv(n)
    idx = (_layout_index(np.arange(_THREADS)[:, None], t_shape, t_stride)
           + _layout_index(np.arange(n // 2)[None, :], v_shape, v_stride))    # (thread, reg)
    idx = np.ascontiguousarray(idx.reshape(4, LANES, n // 2).transpose(0, 2, 1))  # (warp, reg, lane)
    return idx % 64, idx // 64


FRAGMENT = {n: fragment_coords(n) for n in range(8, 257, 8)}


def operand_addresses(desc: int, rows: int, mn_major: bool, eb: int = 2) -> np.ndarray:
    """Shared-memory byte addresses (rows x K) of an operand tile's elements (mn, k), for
    ``eb``-byte elements: K = 32 / eb per instruction (16 of f16/bf16, 32 of e4m3/e5m2; one
    32-byte slice of each row); the core matrices are 8 rows of 16 bytes (16 / eb elements).
    MN-major tiles are 16-bit only (the fp8 forms read K-major tiles)."""
    f = decode_descriptor(desc)
    start, lbo, sbo, span = f["start"], f["lbo"], f["sbo"], f["swizzle"]
    per = 16 // eb                                   # elements of one core-matrix row
    mn = np.arange(rows, dtype=np.int64)[:, None]
    k = np.arange(32 // eb, dtype=np.int64)[None, :]
    if not mn_major:
        if span:
            addr = start + (mn % 8) * span + (mn // 8) * sbo + k * eb
        else:
            addr = start + (mn % 8) * 16 + (mn // 8) * sbo + (k // per) * lbo + (k % per) * eb
    elif span:
        per = span // 2
        addr = start + (mn % per) * 2 + (mn // per) * lbo + (k % 8) * span + (k // 8) * sbo
    else:
        addr = start + (mn % 8) * 2 + (mn // 8) * sbo + (k % 8) * 16 + (k // 8) * lbo
    return swizzle_offset(addr, span)
