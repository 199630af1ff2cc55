"""Host-side helpers of ``ws.ops.flash_attention`` (``attention.py``): its argument checks
(``describe``, ``flag``, ``count``, ``finite_scale``: ArgumentError with the fix), the copy
rules of the two kernels (``tma_compatible``, ``cp_async_ok``) and the tensor helpers of its
fallbacks (``empty_like``, ``pad_last``, ``fresh_copy``), for torch tensors and numpy arrays
alike. Only host code: no kernel, no trace.
"""
from __future__ import annotations

import math
import operator

from ..errors import ArgumentError
from ..runtime.tensors import as_tensor_arg

__all__ = ["describe", "cp_async_ok", "tma_compatible", "flag", "count", "finite_scale",
           "empty_like", "pad_last", "fresh_copy"]


def describe(name: str, x):
    ta = as_tensor_arg(x, name)
    if ta is None:
        raise ArgumentError(f"flash_attention: {name} is a {type(x).__name__}; expected a tensor "
                            "(torch, numpy) of shape (B, H, S, D). Fix: pass torch tensors or "
                            "numpy arrays (as to torch.nn.functional."
                            "scaled_dot_product_attention)")
    if ta.ndim != 4:
        raise ArgumentError(f"flash_attention: {name} has shape {tuple(ta.shape)}; expected 4 "
                            "dimensions (B, H, S, D). Fix: add the batch/head dimensions "
                            "(x[None, None]) or reshape")
    return ta


def cp_async_ok(ta) -> bool:
    """16-byte cp.async copies need a 16-byte aligned base, D contiguous and every other stride
    a multiple of 8 elements (16 bytes)."""
    return (ta.data_ptr % 16 == 0 and ta.strides[3] == 1
            and all(s % 8 == 0 for s in ta.strides[:3]))


def tma_compatible(ta) -> bool:
    """Whether TMA can read the (B, H, S, D) tensor ``ta`` (cuTensorMapEncodeTiled's rules): a
    16-byte aligned base, D contiguous, every other stride a non-negative multiple of 16 bytes
    (8 elements) below 2^40 (size-1 dimensions excepted)."""
    return (ta.data_ptr % 16 == 0 and (ta.strides[3] == 1 or ta.shape[3] == 1)
            and all(n == 1 or (s >= 0 and s % 8 == 0 and 2 * s < 1 << 40)
                    for n, s in zip(ta.shape[:3], ta.strides[:3])))



def flag(name: str, x) -> bool:
    """``x`` as a bool: a Python or numpy bool, else ArgumentError (torch's
    scaled_dot_product_attention raises TypeError for a non-bool ``is_causal`` too)."""
    import numpy as np
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    raise ArgumentError(f"flash_attention: {name}={x!r} ({type(x).__name__}); expected a bool. "
                        f"Fix: {name}=True or {name}=False")


def count(name: str, x, expected: str, fix: str):
    """None (the kernel's default) or ``x`` as an int (Python or numpy integer; not bool):
    ArgumentError for another type. The range is the policy's to check (ValueError)."""
    if x is None:
        return None
    if not isinstance(x, bool):
        try:
            return operator.index(x)
        except TypeError:
            pass
    raise ArgumentError(f"flash_attention: {name}={x!r} ({type(x).__name__}); expected None "
                        f"or an int: {expected}. Fix: {fix}")


def check_grid(grid) -> None:
    """ArgumentError when a launch grid has more CTAs along y than CUDA allows (B * H of the
    one-CTA-per-tile grids)."""
    if grid[1] > 65535:
        raise ArgumentError(f"flash_attention: B * H = {grid[1]} CTAs along grid y; at most 65535 "
                            "(CUDA's grid.y limit). Fix: split the batch into several calls")


_FLOAT32_MAX = 3.4028234663852886e38


def finite_scale(x) -> float:
    """``x`` as a finite float (a Python or numpy real number, or a 0-d tensor) whose product
    with log2(e) is finite in float32 (the kernels fold the scale into the exponent's base-2
    factor), else ArgumentError. Scores whose scaled value overflows float32 give NaN rows, as
    SDPA's float32 softmax does."""
    if not isinstance(x, (bool, str, bytes)):
        try:
            f = float(x)
        except (TypeError, ValueError):
            f = None
        if f is not None and math.isfinite(f) and abs(f) * math.log2(math.e) <= _FLOAT32_MAX:
            return f
    raise ArgumentError(f"flash_attention: scale={x!r} ({type(x).__name__}); expected None "
                        "(1/sqrt(D)) or a finite real number whose product with log2(e) fits "
                        f"in float32 (|scale| <= {_FLOAT32_MAX / math.log2(math.e):.3g}). Fix: "
                        "scale=1 / math.sqrt(D), or leave it out")


def empty_like(x, shape, float32: bool = False):
    """A new contiguous tensor of ``shape`` with x's dtype (or float32) and device (torch), or a
    numpy array."""
    if type(x).__module__.startswith("torch"):
        import torch
        return torch.empty(shape, dtype=torch.float32 if float32 else x.dtype, device=x.device)
    import numpy as np
    return np.empty(shape, dtype=np.float32 if float32 else x.dtype)


def pad_last(x, n: int):
    """``x`` with its last dimension zero-padded to ``n`` (a new contiguous tensor)."""
    if type(x).__module__.startswith("torch"):
        import torch
        return torch.nn.functional.pad(x, (0, n - x.shape[-1]))
    import numpy as np
    return np.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, n - x.shape[-1])])


def fresh_copy(x):
    """A new contiguous copy of ``x`` (torch or numpy) in a fresh allocation (16-byte aligned,
    which a contiguous view of misaligned memory is not)."""
    if type(x).__module__.startswith("torch"):
        import torch
        return x.clone(memory_format=torch.contiguous_format)
    import numpy as np
    return np.array(x, order="C", copy=True)
