"""Test helper: host data of the kernels' element types as numpy arrays, without torch.

numpy has float16 but no bfloat16; ``ml_dtypes.bfloat16`` (pypi ``ml_dtypes``, in the ``test``
extras) is the numpy dtype that warpstage reads as BFloat16. Names are numpy's ('float16',
'bfloat16', 'float32', 'int8', ...) or the PTX ones the mma tests use ('f16', 'bf16', 'f32',
's8', 'u8', 's32'). Conversions round to nearest even, like torch's ``.to(dtype)`` and the
hardware's cvt.rn.

Without ml_dtypes (e.g. the GPU machine, which has torch), asking for bf16 skips the test; the
GPU tests that share the simulator tests' input makers get torch tensors instead and never come
here for bf16. (tests/ is on sys.path through tests/conftest.py: ``from dtypes_helper import
...``.)"""
import numpy as np
import pytest

try:
    import ml_dtypes
except ImportError:            # only bfloat16 needs it
    ml_dtypes = None

__all__ = ["ml_dtypes", "numpy_dtype", "cast", "to_float64", "randn", "is_torch", "empty_like"]

_PTX_NAMES = {"f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64",
              "s8": "int8", "u8": "uint8", "s16": "int16", "u16": "uint16", "s32": "int32",
              "u32": "uint32", "s64": "int64", "u64": "uint64"}


def numpy_dtype(name) -> np.dtype:
    """The numpy dtype called ``name`` ('bfloat16'/'bf16': ``ml_dtypes.bfloat16``; skips the
    calling test where ml_dtypes is not installed)."""
    name = _PTX_NAMES.get(name, name)
    if name == "bfloat16":
        if ml_dtypes is None:
            pytest.skip("bfloat16 numpy arrays need ml_dtypes (pip install ml_dtypes)")
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def cast(x, name) -> np.ndarray:
    """``x`` (array-like of numbers) as a numpy array of dtype ``name``, rounded to nearest
    even. Float data goes through float32 first, as torch's ``randn(...).to(dtype)`` does."""
    x = np.asarray(x)
    if x.dtype == np.float64:
        x = x.astype(np.float32)
    return x.astype(numpy_dtype(name))


def is_torch(x) -> bool:
    return type(x).__module__.startswith("torch")


def empty_like(x):
    """An uninitialised array like ``x``: a torch tensor (same device) for a torch tensor."""
    if is_torch(x):
        import torch
        return torch.empty_like(x)
    return np.empty_like(x)


def to_float64(x) -> np.ndarray:
    """A float64 numpy copy of a numpy array (any dtype, bfloat16 included) or a torch tensor
    (any device and dtype)."""
    if is_torch(x):
        return x.detach().cpu().double().numpy()
    return np.asarray(x).astype(np.float64)


def randn(shape, name, seed=0) -> np.ndarray:
    """Standard-normal entries of dtype ``name`` (drawn in float32, then rounded)."""
    rng = np.random.default_rng(seed)
    return cast(rng.standard_normal(shape, dtype=np.float32), name)
