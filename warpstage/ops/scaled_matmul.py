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

import numbers
import sys

import warpstage as ws

from ..errors import ArgumentError, WarpstageError
from ..ir.fp8 import is_fp8
from ..lang.scalars import DTYPES, BFloat16
from ..runtime.tensors import as_tensor_arg
from ..jit.tracebacks import _user_error
from .matmul_epilogues import Epilogue, _bias_check
from . import op_plans
from .host_fixes import check_no_grad, check_tune, framework, kind_of
from .matmul_host import _matmul, _out_dtype, _shapes, _typed
from .torch_dispatch import torch_op

__all__ = ["scaled_matmul", "scaled_matmul_eager", "Scales"]


class Scales(Epilogue):
    """The epilogue of ``scaled_matmul``: ``x * scale_a * scale_b (+ bias[col])``.

    ``scale_a``: a 1-element f32 tensor (per-tensor) or one element per output row (row-wise:
    torch._scaled_mm's (M, 1); batched, (B, M, 1): rows counted over the batches, as the
    epilogue's ``row``); ``scale_b``: 1 element or N (column-wise, its (1, N), shared by the
    batches); both given flattened to 1-d (``row_a`` / ``col_b``: whether each has more than
    one element, when the caller knows; None: looked up). ``bias``: None or an (N,) tensor of
    any float dtype. The product of two per-tensor scales is computed once per thread
    (``prologue``); row/column scales are read per element (from L1). The static key is
    (row_a, col_b, has_bias): what ``apply`` specializes on."""

    def __init__(self, scale_a, scale_b, bias=None, row_a=None, col_b=None):
        self.scale_a, self.scale_b, self.bias = scale_a, scale_b, bias
        self.row_a = as_tensor_arg(scale_a).numel > 1 if row_a is None else row_a
        self.col_b = as_tensor_arg(scale_b).numel > 1 if col_b is None else col_b
        self.has_bias = bias is not None

    def __static_key__(self):
        return ("Scales", self.row_a, self.col_b, self.has_bias)     # what apply specializes on

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
    if ta is None or ta.ndim not in (2, 3) or not is_fp8(ta.dtype):
        got = kind_of(x) if ta is None else f"shape {tuple(ta.shape)} of {ta.dtype}"
        raise ArgumentError(f"ws.ops.scaled_matmul: {name} is {got}; expected a 2-d or 3-d "
                            "(batched) tensor of float8_e4m3fn or float8_e5m2 ((M, K) or (B, M, "
                            "K) for a, (K, N) or (B, K, N) for b). Fix: "
                            f"{name}.to(torch.float8_e4m3fn) after scaling it into range "
                            "(|x| <= 448), as for torch._scaled_mm")
    return ta


def _scale_arg(name, s, want: tuple, ta):
    """(the scale as a 1-d view, whether it has more than one element), checked: 1 element
    (per-tensor), or of shape ``want``: (M, 1) / (B, M, 1) for scale_a (row-wise: one per output
    row, over the batches), (1, N) for scale_b (column-wise, shared by the batches)."""
    t = as_tensor_arg(s, name)
    if t is None or str(t.dtype) != "f32" or not (t.numel == 1 or tuple(t.shape) == want):
        got = ("missing (None): scale_a and scale_b are required, as for torch._scaled_mm"
               if s is None else kind_of(s) if t is None else
               f"shape {tuple(t.shape)} of {t.dtype}")
        number = t is None and isinstance(s, numbers.Real) and not isinstance(s, bool)
        one = ("torch.ones((), device=a.device)" if framework(ta) == "torch"
               else "np.ones((), np.float32)")
        if number:                      # a scale given as a number: that number as a tensor
            one = (f"torch.tensor({float(s)!r}, device=a.device)" if framework(ta) == "torch"
                   else f"np.asarray({float(s)!r}, np.float32)")
        raise ArgumentError(f"ws.ops.scaled_matmul: {name} is {got}; expected a float32 tensor "
                            f"of one element (per-tensor) or of shape {want} "
                            f"({'row' if name == 'scale_a' else 'column'}-wise"
                            + (", one per row of every batch" if len(want) == 3 else "")
                            + f"). Fix: {name}={one} (the inputs' scale, 1.0 when a and b are "
                            f"unscaled), or a {want} float32 tensor")
    if (t.device, t.device_index) != (ta.device, ta.device_index):
        raise ArgumentError(f"ws.ops.scaled_matmul: {name} is on {t.device}, a on {ta.device}; "
                            f"expected one device. Fix: {name}.to(a.device)")
    return (s if t.ndim == 1 else s.reshape(-1)), t.numel > 1


def scaled_matmul(a, b, scale_a=None, scale_b=None, *, out_dtype=None, out=None, bias=None,
                  tile_n=None, num_stages=None, raster="M", group=None, schedule="cooperative",
                  splits=None, tile_m=None, tune=False):
    """``(a @ b) * scale_a * scale_b + bias`` for 8-bit float operands, like
    ``torch._scaled_mm(a, b, scale_a, scale_b, bias, out_dtype=out_dtype)``, and batched.

    ``a``: (M, K) or (B, M, K), ``b``: (K, N) or (B, K, N), each float8_e4m3fn or float8_e5m2
    (torch CUDA tensors on the GPU; numpy arrays of ``ml_dtypes.float8_*`` or CPU tensors in
    the simulator); a 2-D operand with a 3-D one is broadcast over the batch (as
    ``ws.ops.matmul``; (B, M, K) @ (K, N) is one (B * M, K) @ (K, N) GEMM, no copy). ``b`` is
    read K-major: pass it column-major (``w.T`` of an (N, K) weight, ``w.mT`` of a (B, N, K)
    one: no copy); any other layout, and an ``a`` that is not row-major, is copied with a
    ``ws.ops.MatmulCopyWarning``. Any M, N, K (tails are TMA's zero fill and clipping).
    ``scale_a`` / ``scale_b``: float32 tensors of one element (per-tensor; 0-d or (1,) or
    (1, 1)), or row-wise (M, 1) (batched: (B, M, 1)) / column-wise (1, N), in any
    combination; required (None, or left out, is an ArgumentError naming the fix).
    ``bias``: None or (N,) of any float dtype. f32 accumulation on the tensor cores (K-steps
    of 32 per wgmma), the scales and bias applied in f32, one rounding to ``out_dtype``
    (default bfloat16; float16 or float32 as a torch, numpy or ws dtype).
    ``out``: an (M, N) / (B, M, N) tensor of that dtype to write. ``tile_n`` ... ``tile_m``:
    the kernel policy, as for ``ws.ops.matmul`` (None: chosen per shape). ``tune``: True
    chooses the policy per shape class with ``ws.autotune`` over
    ``tune_spaces.scaled_matmul_space`` (as ``ws.ops.matmul(tune=True)``, docs/autotune.md);
    not with the policy arguments.

    Returns ``out`` or a new tensor. Raises ArgumentError for other dtypes, ranks, scale
    shapes, devices, a mismatched ``out`` or ``tune`` with policy arguments. With torch tensors
    and no ``out``, it goes through ``torch.ops.warpstage.scaled_matmul`` under torch.compile
    (no backward). A torch tensor that requires grad while grad mode is on is an
    ArgumentError (no backward is registered)."""
    check_no_grad("scaled_matmul", "a b scale_a scale_b bias out", a, b, scale_a, scale_b, bias,
                  out)
    if tune is not False:
        check_tune("scaled_matmul", tune, dict(
            tile_n=tile_n, num_stages=num_stages, group=group, splits=splits, tile_m=tile_m,
            raster=raster != "M", schedule=schedule != "cooperative"))
        try:
            _checked(a, b, scale_a, scale_b, bias)      # before tuning, not as its failure
        except WarpstageError as e:
            raise _user_error(e) from None
        from .tune_spaces import tuner
        return tuner("scaled_matmul")(a, b, scale_a, scale_b, out, out_dtype, bias)
    torch = sys.modules.get("torch")
    ok = out is None and torch is not None and (out_dtype is None or isinstance(
        out_dtype, torch.dtype)) and all(n is None or type(n) is int
                                         for n in (tile_n, num_stages, group, splits, tile_m))
    tensors = (a, b, scale_a, scale_b) + (() if bias is None else (bias,))
    op = torch_op("scaled_matmul", tensors, ok and type(raster) is str and type(schedule) is str)
    if op is not None:
        return op(a, b, scale_a, scale_b, bias, out_dtype, tile_n, num_stages, raster, group,
                  schedule, splits, tile_m)
    return scaled_matmul_eager(a, b, scale_a, scale_b, out_dtype=out_dtype, out=out, bias=bias,
                               tile_n=tile_n, num_stages=num_stages, raster=raster, group=group,
                               schedule=schedule, splits=splits, tile_m=tile_m)


def scaled_matmul_eager(a, b, scale_a, scale_b, *, out_dtype=None, out=None, bias=None,
                        tile_n=None, num_stages=None, raster="M", group=None,
                        schedule="cooperative", splits=None, tile_m=None):
    """:func:`scaled_matmul` without the torch op (what the op runs). A repeated call with
    the same facts launches its kept plan (``op_plans.py``), new scales and bias included."""
    def eager():
        ta, tb, epi = _checked(a, b, scale_a, scale_b, bias)
        odt = _out_dtype(out_dtype, BFloat16, (ta, tb), "scaled_matmul")
        return _matmul(a, b, out, odt, epi, tile_n, num_stages, raster, group, schedule, splits,
                       (DTYPES[ta.dtype], DTYPES[tb.dtype]), tile_m, op="scaled_matmul")
    try:
        return op_plans.run("scaled_matmul", (a, b, scale_a, scale_b, bias, out), _typed(
            out_dtype, tile_n, num_stages, raster, group, schedule, splits, tile_m), eager)
    except (WarpstageError, ValueError) as e:
        raise _user_error(e) from None


def _checked(a, b, scale_a, scale_b, bias):
    """(a's and b's TensorArgs, the ``Scales`` epilogue), the arguments checked (ArgumentError
    for dtypes, ranks, shapes, scales, devices, the bias)."""
    ta, tb = _fp8_arg("a", a), _fp8_arg("b", b)
    batches, m, n, k, a3, b3 = _shapes(ta, tb, "scaled_matmul")
    rows = (batches, m, 1) if a3 or b3 else (m, 1)
    (sa, row_a), (sb, col_b) = (_scale_arg("scale_a", scale_a, rows, ta),
                                _scale_arg("scale_b", scale_b, (1, n), ta))
    epi = Scales(sa, sb, bias, row_a, col_b)
    epi.check(m, n, batches)
    return ta, tb, epi

