"""The operands TMA reads for ``ws.ops.matmul``: each tensor as it is, its transposed view (the
four transposes are strides, not copies), or, for a layout TMA cannot address (or an fp8
operand that is not K-major), a zero-padded contiguous copy with a ``MatmulCopyWarning``; and
new tensors like an operand (torch or numpy)."""
from __future__ import annotations

import warnings

import numpy as np

from ..errors import ArgumentError
from ..lang.scalars import BFloat16, Float8E4M3FN, Float8E5M2, Float16, Float32, Int32
from ..runtime.target import default_target
from ..runtime.tensors import as_tensor_arg
from ..jit.tracebacks import _user_stacklevel
from .matmul_kernel import FP8_DTYPES

__all__ = ["MatmulCopyWarning", "tma_compatible", "check_target", "check_same_device"]


class MatmulCopyWarning(UserWarning):
    """An operand or the output had a layout TMA cannot address (a base not 16-byte aligned, no
    unit stride, or a stride that is not a multiple of 16 bytes), so ``matmul`` copied it."""


def tma_compatible(ta) -> bool:
    """Whether TMA can address the tensor ``ta`` (a TensorArg) as it is (cuTensorMapEncodeTiled's
    rules): 16-byte aligned base, innermost stride 1, every other stride of a dimension longer
    than 1 positive, a multiple of 16 bytes and below 2^40 bytes."""
    e = ta.dtype.nbytes
    if ta.data_ptr % 16 or (ta.shape[-1] != 1 and ta.strides[-1] != 1):
        return False
    return all(n == 1 or (s > 0 and (s * e) % 16 == 0 and s * e < 1 << 40)
               for n, s in zip(ta.shape[:-1], ta.strides[:-1]))


def _where(ta) -> str:
    return ta.device if ta.device_index is None or ta.device != "cuda" else \
        f"cuda:{ta.device_index}"


def check_target(op: str, ta) -> None:
    """ArgumentError from ``ws.ops.<op>`` when the operand ``a`` (a TensorArg; ``b`` is on its
    device, checked before) is in host memory and kernels run on the GPU (the 'cuda' target):
    the TMA descriptors and the launch need GPU memory, and the simulator is not chosen behind
    the user's back (a large GEMM there takes hours)."""
    if ta.device == "cuda" or default_target() != "cuda":
        return
    move = "a.cuda() and b.cuda()" if ta.kind == "torch" else \
        "torch.from_numpy(x).cuda() (or cupy.asarray(x)) for each of them"
    raise ArgumentError(f"ws.ops.{op}: a and b are {ta.kind} tensors in host memory "
                        f"({_where(ta)}) and the target is 'cuda'; expected tensors in GPU "
                        f"memory. Fix: {move}, or ws.set_target('sim') to run in the CPU "
                        "simulator (slow: small shapes only)")


def check_same_device(op: str, name: str, x, ta, fix: str) -> None:
    """ArgumentError from ``ws.ops.<op>`` when ``x`` (``name``: the output, an epilogue's
    operand) is a tensor on another device than the operand ``a`` (its TensorArg ``ta``); a
    non-tensor ``x`` is left to the caller's own check."""
    tx = as_tensor_arg(x)
    if tx is not None and (tx.device, tx.device_index) != (ta.device, ta.device_index):
        raise ArgumentError(f"ws.ops.{op}: {name} is on {_where(tx)}, a on {_where(ta)}; "
                            f"expected one device (the kernel reads and writes one device's "
                            f"memory). Fix: {fix}")


def _byte_range(ta) -> tuple:
    """(first, end) byte addresses of ``ta``'s elements ((ptr, ptr) when it is empty); a
    negative stride reaches below ``data_ptr``, element [0, ..., 0]."""
    if ta.numel == 0:
        return ta.data_ptr, ta.data_ptr
    n = ta.dtype.nbytes
    lo = sum(min(0, (k - 1) * st) for k, st in zip(ta.shape, ta.strides))
    hi = sum(max(0, (k - 1) * st) for k, st in zip(ta.shape, ta.strides))
    return ta.data_ptr + lo * n, ta.data_ptr + (hi + 1) * n


def shares_memory(tx, ty) -> bool:
    """Whether two tensors (TensorArgs) have an element in common: their byte ranges first,
    then, for ranges that meet, numpy's exact test on their addresses, shapes and strides (no
    memory is read; interleaved views such as the two halves of one buffer's columns do not
    share). A case too hard to decide counts as shared."""
    if (tx.device, tx.device_index) != (ty.device, ty.device_index):
        return False
    (x0, x1), (y0, y1) = _byte_range(tx), _byte_range(ty)
    if x0 == x1 or y0 == y1 or x1 <= y0 or y1 <= x0:
        return False
    try:
        return bool(np.shares_memory(_view(tx), _view(ty), max_work=100_000))
    except Exception:           # noqa: BLE001 - numpy's TooHardError: counted as shared
        return True


class _Layout:
    """``ta``'s addresses as numpy's array interface (bytes, read-only): what
    ``np.shares_memory`` needs. It reads the addresses, never the memory (which may be a GPU's)."""

    def __init__(self, ta):
        n = ta.dtype.nbytes
        self.__array_interface__ = {
            "version": 3, "typestr": "|u1", "data": (ta.data_ptr, True),
            "shape": tuple(ta.shape) + (n,), "strides": tuple(st * n for st in ta.strides) + (1,)}


def _view(ta):
    return np.asarray(_Layout(ta))


def check_no_overlap(op: str, to, reads, fix: str) -> None:
    """ArgumentError from ``ws.ops.<op>`` when the output ``to`` (a TensorArg) shares memory
    with a tensor the kernel reads: ``reads``, (name, TensorArg, in_place) triples; an
    ``in_place`` one (an epilogue operand read at the element being written, as
    ``Residual(out)``) may be ``out`` itself: the same address and the same last two strides.
    The persistent CTAs read A's and B's tiles while other tiles are being stored, so an output
    over an operand silently computes from a half-written result."""
    for name, tx, in_place in reads:
        if tx is None or not shares_memory(to, tx):
            continue
        if in_place and tx.data_ptr == to.data_ptr and tx.strides[-2:] == to.strides[-2:] \
                and tx.dtype.nbytes == to.dtype.nbytes:
            continue
        raise ArgumentError(f"ws.ops.{op}: out shares memory with {name} (out {tuple(to.shape)} "
                            f"at {to.data_ptr:#x}, {name} {tuple(tx.shape)} at "
                            f"{tx.data_ptr:#x}); expected an output apart from the tensors the "
                            "kernel reads: the CTAs read their tiles while other tiles are "
                            f"already stored, so the result would be wrong. Fix: {fix}")


def _framework(x):
    return "torch" if type(x).__module__.startswith("torch") else "numpy"


def _new(like, shape, dtype, zeros=False):
    """A new contiguous tensor of ``shape`` and ws ``dtype`` on ``like``'s device."""
    names = {Float16: "float16", BFloat16: "bfloat16", Float32: "float32",
             Float8E4M3FN: "float8_e4m3fn", Float8E5M2: "float8_e5m2", Int32: "int32"}
    if _framework(like) == "torch":
        import torch
        make = torch.zeros if zeros else torch.empty
        return make(shape, dtype=getattr(torch, names[dtype]), device=like.device)
    if dtype in (BFloat16, Float8E4M3FN, Float8E5M2):
        import ml_dtypes
        npd = getattr(ml_dtypes, names[dtype])
    else:
        npd = np.dtype(names[dtype])
    return (np.zeros if zeros else np.empty)(shape, dtype=npd)


def _swap(x):
    """x with its last two dimensions swapped (a view)."""
    if _framework(x) == "torch":
        return x.transpose(-1, -2)
    return np.swapaxes(x, -1, -2)


_TMA_RULE = ("it needs a 16-byte aligned base, one unit stride and the other strides multiples "
             "of 16 bytes, so it is copied. Fix: pass contiguous tensors whose rows are "
             "multiples of 16 bytes")
_FP8_RULE = ("FP8 wgmma reads A and B K-major only (A row-major, B column-major, as "
             "torch._scaled_mm wants them), so it is copied K-major. Fix: pass a as (M, K) "
             "row-major and b as w.T of an (N, K) row-major w")


def _padded_copy(name: str, x, ta, dtype, why: str = _TMA_RULE):
    """A zero-padded contiguous copy of ``x`` whose innermost extent is a multiple of 16 bytes
    (zeros add nothing to the products), with a MatmulCopyWarning saying ``why``."""
    warnings.warn(f"ws.ops.matmul: TMA cannot read {name} (shape {tuple(ta.shape)}, strides "
                  f"{tuple(ta.strides)}, address {ta.data_ptr:#x}) as it is: {why}",
                  MatmulCopyWarning, stacklevel=_user_stacklevel())
    per = 16 // dtype.ir_type.nbytes
    inner = -(-ta.shape[-1] // per) * per
    buf = _new(x, tuple(ta.shape[:-1]) + (inner,), dtype, zeros=True)
    buf[..., :ta.shape[-1]] = x
    return buf


def _operand(name: str, x, ta, dtype, k_inner: bool):
    """(tensor TMA reads, its TensorArg, its major) for A (``k_inner``: K is A's last dimension) or B (K is
    its second-to-last): the tensor itself when its last dimension is contiguous, its transposed
    view when the other one is, else a padded copy. FP8 operands must end up K-major: A itself
    or a copy, B's transposed view or a copy of it."""
    fp8 = dtype in FP8_DTYPES
    if tma_compatible(ta) and (k_inner or not fp8):
        return x, ta, ("K" if k_inner else "MN")
    view = _swap(x)
    tv = as_tensor_arg(view, name)
    if tma_compatible(tv) and not (k_inner and fp8):
        return view, tv, ("MN" if k_inner else "K")
    if fp8:                                    # K innermost: A as it is, B^T (N, K)
        src, sa = (x, ta) if k_inner else (view, tv)
        why = _FP8_RULE if tma_compatible(ta) or tma_compatible(tv) else _TMA_RULE
        copy = _padded_copy(name, src, sa, dtype, why)
        return copy, as_tensor_arg(copy), "K"
    copy = _padded_copy(name, x, ta, dtype)
    return copy, as_tensor_arg(copy), ("K" if k_inner else "MN")
