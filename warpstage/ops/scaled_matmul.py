"""``ws.ops.scaled_matmul``: the FP8 GEMM, ``out = (A @ B) * scale_a * scale_b + bias``, like
``torch._scaled_mm``, on the kernel of ``ws.ops.matmul`` (``matmul_kernel.py``).

A and B are e4m3 or e5m2 (each; ``torch.float8_e4m3fn`` / ``float8_e5m2``, or numpy arrays of
``ml_dtypes.float8_*`` in the simulator). The kernel is the bf16 one with ``tile_k`` 128 (one
128-byte swizzle span of fp8, the same stage bytes as 64 of bf16, so the same ring depth) and
``wgmma.m64nNk32.f32.<a>.<b>``; fp8 wgmma reads both operands K-major, so B must be
column-major (``w.T`` of an (N, K) weight, what torch._scaled_mm requires), else it is copied.
The scales are applied in the epilogue (``Scales``): per-tensor scales are loaded once per
thread (``Epilogue.prologue``) and multiplied into each f32 accumulator element with the bias
added, before the one rounding to ``out_dtype``.
"""
from __future__ import annotations

import sys

import warpstage as ws

from ..errors import ArgumentError, WarpstageError
from ..ir.fp8 import is_fp8
from ..lang.scalars import DTYPES, BFloat16
from ..runtime.tensors import as_tensor_arg
from ..jit.tracebacks import _user_error
from .matmul_epilogues import Epilogue, _bias_check
from .matmul_host import _matmul, _out_dtype
from .torch_dispatch import torch_op

__all__ = ["scaled_matmul", "scaled_matmul_eager", "Scales"]


class Scales(Epilogue):
    """The epilogue of ``scaled_matmul``: ``x * scale_a * scale_b (+ bias[col])``.

    ``scale_a``: a 1-element f32 tensor (per-tensor) or M elements (row-wise, one per row of
    A: torch._scaled_mm's (M, 1)); ``scale_b``: 1 element or N (column-wise, its (1, N)); both
    given flattened to 1-d. ``bias``: None or an (N,) tensor of any float dtype. The product of
    two per-tensor scales is computed once per thread (``prologue``); row/column scales are
    read per element (from L1)."""

    def __init__(self, scale_a, scale_b, bias=None):
        self.scale_a, self.scale_b, self.bias = scale_a, scale_b, bias
        self.row_a = as_tensor_arg(scale_a).numel > 1
        self.col_b = as_tensor_arg(scale_b).numel > 1
        self.has_bias = bias is not None

    def operands(self) -> tuple:
        return (self.scale_a, self.scale_b) + ((self.bias,) if self.has_bias else ())

    def check(self, m, n, batches):
        if self.has_bias:
            _bias_check("scaled_matmul", self.bias, n)

    def prologue(self, operands):
        """(the per-tensor factor: a dynamic Float32, or 1.0, then the operand tensors)."""
        factor = 1.0
        if ws.static(not self.row_a):
            factor = ws.Float32(operands[0][0])
        if ws.static(not self.col_b):
            factor = factor * ws.Float32(operands[1][0])
        return (factor,) + tuple(operands)

    @ws.jit
    def apply(self, x, row, col, operands):
        y = x * operands[0]
        if ws.static(self.row_a):
            y = y * ws.Float32(operands[1][row])
        if ws.static(self.col_b):
            y = y * ws.Float32(operands[2][col])
        if ws.static(self.has_bias):
            y = y + ws.Float32(operands[3][col])
        return y


def _fp8_arg(name, x):
    ta = as_tensor_arg(x, name)
    if ta is None or ta.ndim != 2 or not is_fp8(ta.dtype):
        got = (f"a {type(x).__name__}" if ta is None else
               f"shape {tuple(ta.shape)} of {ta.dtype}")
        raise ArgumentError(f"ws.ops.scaled_matmul: {name} is {got}; expected a 2-d tensor of "
                            "float8_e4m3fn or float8_e5m2 ((M, K) for a, (K, N) for b). Fix: "
                            f"{name}.to(torch.float8_e4m3fn) after scaling it into range "
                            "(|x| <= 448), as for torch._scaled_mm")
    return ta


def _scale_arg(name, s, rows: int, axis: int, ta):
    """The scale as a 1-d view, checked: 1 element (per-tensor), or ``rows`` elements laid out
    as (M, 1) for scale_a / (1, N) for scale_b (row- / column-wise)."""
    t = as_tensor_arg(s, name)
    want = (rows, 1) if axis == 0 else (1, rows)
    if t is None or str(t.dtype) != "f32" or not (t.numel == 1 or tuple(t.shape) == want):
        got = (f"a {type(s).__name__}" if t is None else
               f"shape {tuple(t.shape)} of {t.dtype}")
        raise ArgumentError(f"ws.ops.scaled_matmul: {name} is {got}; expected a float32 tensor "
                            f"of one element (per-tensor) or of shape {want} "
                            f"({'row' if axis == 0 else 'column'}-wise). Fix: "
                            f"{name} = torch.tensor(1.0, device=a.device) or a {want} float32 "
                            "tensor")
    if (t.device, t.device_index) != (ta.device, ta.device_index):
        raise ArgumentError(f"ws.ops.scaled_matmul: {name} is on {t.device}, a on {ta.device}; "
                            f"expected one device. Fix: {name}.to(a.device)")
    return s.reshape(-1)


def scaled_matmul(a, b, scale_a, scale_b, *, out_dtype=None, out=None, bias=None, tile_n=None,
                  num_stages=None, raster="M", group=None, schedule="cooperative", splits=None):
    """``(a @ b) * scale_a * scale_b + bias`` for 8-bit float operands, like
    ``torch._scaled_mm(a, b, scale_a, scale_b, bias, out_dtype=out_dtype)``.

    ``a``: (M, K), ``b``: (K, N), each float8_e4m3fn or float8_e5m2 (torch CUDA tensors on the
    GPU; numpy arrays of ``ml_dtypes.float8_*`` or CPU tensors in the simulator). ``b`` is read
    K-major: pass it column-major (``w.T`` of an (N, K) weight, no copy); any other layout, and
    an ``a`` that is not row-major, is copied with a ``ws.ops.MatmulCopyWarning``. Any M, N, K
    (tails are TMA's zero fill and clipping). ``scale_a`` / ``scale_b``: float32 tensors of one
    element (per-tensor; 0-d or (1,) or (1, 1)), or row-wise (M, 1) / column-wise (1, N), in
    any combination. ``bias``: None or (N,) of any float dtype. f32 accumulation on the tensor
    cores (K-steps of 32 per wgmma), the scales and bias applied in f32, one rounding to
    ``out_dtype`` (default bfloat16; float16 or float32 as a torch, numpy or ws dtype).
    ``out``: an (M, N) tensor of that dtype to write. ``tile_n`` ... ``splits``: the kernel
    policy, as for ``ws.ops.matmul`` (None: chosen per shape).

    Returns ``out`` or a new tensor. Raises ArgumentError for other dtypes, ranks, scale
    shapes, devices or a mismatched ``out``. With torch tensors and no ``out``, it goes through
    ``torch.ops.warpstage.scaled_matmul`` under torch.compile (no backward)."""
    torch = sys.modules.get("torch")
    ok = out is None and torch is not None and (out_dtype is None or isinstance(
        out_dtype, torch.dtype)) and all(n is None or type(n) is int
                                         for n in (tile_n, num_stages, group, splits))
    tensors = (a, b, scale_a, scale_b) + (() if bias is None else (bias,))
    op = torch_op("scaled_matmul", tensors, ok and type(raster) is str and type(schedule) is str)
    if op is not None:
        return op(a, b, scale_a, scale_b, bias, out_dtype, tile_n, num_stages, raster, group,
                  schedule, splits)
    return scaled_matmul_eager(a, b, scale_a, scale_b, out_dtype=out_dtype, out=out, bias=bias,
                               tile_n=tile_n, num_stages=num_stages, raster=raster, group=group,
                               schedule=schedule, splits=splits)


def scaled_matmul_eager(a, b, scale_a, scale_b, *, out_dtype=None, out=None, bias=None,
                        tile_n=None, num_stages=None, raster="M", group=None,
                        schedule="cooperative", splits=None):
    """:func:`scaled_matmul` without the torch op (what the op runs)."""
    try:
        ta, tb = _fp8_arg("a", a), _fp8_arg("b", b)
        m, k = ta.shape
        if tb.shape[0] != k:
            raise ArgumentError(f"ws.ops.scaled_matmul: shapes {tuple(ta.shape)} and "
                                f"{tuple(tb.shape)} do not chain; expected (M, K) @ (K, N). "
                                "Fix: pass b as w.T of an (N, K) weight")
        n = tb.shape[1]
        epi = Scales(_scale_arg("scale_a", scale_a, m, 0, ta),
                     _scale_arg("scale_b", scale_b, n, 1, ta), bias)
        epi.check(m, n, 1)
        odt = _out_dtype(out_dtype, BFloat16)
        return _matmul(a, b, out, odt, epi, tile_n, num_stages, raster, group, schedule, splits,
                       (DTYPES[ta.dtype], DTYPES[tb.dtype]))
    except (WarpstageError, ValueError) as e:
        raise _user_error(e) from None

