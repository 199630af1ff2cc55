"""Epilogues of ``ws.ops.matmul``: static objects compiled into the GEMM kernel.

An epilogue is a plain Python object with a ``@ws.jit`` method ``apply(self, x, row, col,
operands)`` (and optionally ``prologue(operands)``, run once per thread before its tiles, whose
result ``apply`` gets as ``operands``) that maps one f32 accumulator element ``x`` of output element (row, col) to the value
stored (before the conversion to the output dtype). The object is static (binding-time rule 7):
its class and fields specialize the kernel, like a C++ functor template argument; no string
templates. Tensors it needs (a bias, a residual) are not compiled in: ``operands()`` returns them
on the host, the kernel receives them as a tuple of dynamic tensors, and ``apply`` reads them
(``operands[0][col]``). ``row`` is the output row counted over the whole (batch * M, N) output,
``col`` the column; both are clamped into the output (for a tile's clipped edge), so loads at
(row, col) stay in bounds. A user epilogue in five lines::

    class Scale(ws.ops.Epilogue):
        def __init__(self, s):
            self.s = s
        @ws.jit
        def apply(self, x, row, col, operands):
            return x * self.s
"""
from __future__ import annotations

import math

import warpstage as ws

from ..errors import ArgumentError
from ..runtime.tensors import as_tensor_arg

__all__ = ["Epilogue", "BiasGelu", "BiasSilu", "Bias", "Residual"]

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def _is_tensor(x) -> bool:
    return hasattr(x, "__dlpack__") or hasattr(x, "__cuda_array_interface__") or \
        hasattr(x, "__array_interface__")


class Epilogue:
    """Base of matmul epilogues: the identity. A subclass overrides ``apply`` (a ``@ws.jit``
    method, f32 in and out) and, if it reads tensors, keeps them in attributes: ``operands()``
    returns every tensor attribute in attribute order, and the static key leaves tensors out
    (their dtype and rank are keyed as kernel arguments). ``check(m, n, batches)`` validates
    the operands' shapes on the host (override it; raise ArgumentError)."""

    def operands(self) -> tuple:
        """The tensors the kernel gets as its ``operands`` tuple."""
        return tuple(v for v in vars(self).values() if _is_tensor(v))

    def check(self, m: int, n: int, batches: int) -> None:
        """Host-side validation of the operands for an (batches x) M x N output."""

    def prologue(self, operands):
        """Device code run once per consumer thread before its tiles (a plain method, traced
        inline, or ``@ws.jit``): returns what ``apply`` receives as ``operands`` (default: the
        operand tensors). An epilogue that reads the same values for every element (a
        per-tensor scale) loads them here once instead of per element."""
        return operands

    def __static_key__(self):
        return tuple((k, v) for k, v in sorted(vars(self).items()) if not _is_tensor(v))

    @ws.jit
    def apply(self, x, row, col, operands):
        return x


def _bias_check(name: str, bias, n: int) -> None:
    ta = as_tensor_arg(bias, f"{name}'s bias")
    if ta is None or ta.ndim != 1 or ta.shape[0] != n:
        got = "not a tensor" if ta is None else f"shape {tuple(ta.shape)}"
        raise ArgumentError(f"ws.ops.{name}: the bias is {got}; expected a 1-d tensor of N = {n} "
                            "elements (one per output column), on the operands' device. Fix: "
                            "pass bias of shape (N,)")


class Bias(Epilogue):
    """``x + bias[col]``: ``bias`` a 1-d (N,) tensor of any float dtype."""

    def __init__(self, bias):
        self.bias = bias

    def check(self, m, n, batches):
        _bias_check(type(self).__name__, self.bias, n)

    @ws.jit
    def apply(self, x, row, col, operands):
        return x + ws.Float32(operands[0][col])


class BiasGelu(Bias):
    """``gelu(x + bias[col])`` with GELU's tanh form, ``0.5 y (1 + tanh(sqrt(2/pi) (y + 0.044715
    y^3)))`` (``torch.nn.functional.gelu(y, approximate='tanh')``); ``bias`` (N,) or None."""

    def __init__(self, bias=None):
        self.bias = bias
        self.has_bias = bias is not None

    def check(self, m, n, batches):
        if self.has_bias:
            _bias_check("BiasGelu", self.bias, n)

    @ws.jit
    def apply(self, x, row, col, operands):
        y = x
        if ws.static(self.has_bias):
            y = x + ws.Float32(operands[0][col])
        inner = _SQRT_2_OVER_PI * (y + 0.044715 * y * y * y)
        return 0.5 * y * (1.0 + ws.math.tanh(inner))


class BiasSilu(BiasGelu):
    """``silu(x + bias[col])`` = ``y / (1 + exp(-y))`` (``torch.nn.functional.silu``); ``bias``
    (N,) or None."""

    @ws.jit
    def apply(self, x, row, col, operands):
        y = x
        if ws.static(self.has_bias):
            y = x + ws.Float32(operands[0][col])
        return y / (1.0 + ws.math.exp(-y))


class Residual(Epilogue):
    """``x * scale + residual[row, col]``: ``residual`` an (M, N) tensor (batched: (batch * M,
    N), e.g. a (B, M, N) tensor's ``reshape(-1, N)``) of any float dtype; ``scale`` a static
    float."""

    def __init__(self, residual, scale=1.0):
        self.residual, self.scale = residual, float(scale)

    def check(self, m, n, batches):
        ta = as_tensor_arg(self.residual, "Residual's tensor")
        if ta is None or tuple(ta.shape) != (batches * m, n):
            got = "not a tensor" if ta is None else f"shape {tuple(ta.shape)}"
            raise ArgumentError(f"ws.ops.Residual: the residual is {got}; expected "
                                f"({batches * m}, {n}) (batch * M, N). Fix: pass "
                                "residual.reshape(-1, N)")

    @ws.jit
    def apply(self, x, row, col, operands):
        return x * self.scale + ws.Float32(operands[0][row, col])
