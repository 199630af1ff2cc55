"""The "Fix:" texts of the ops' host argument errors (``ws.ops.matmul``, ``flash_attention``),
written in the framework of the tensors the user passed: torch code for torch tensors, numpy
code for numpy arrays (bfloat16 through ``ml_dtypes``, numpy's own has none), cupy for cupy. A
user who passed numpy is never told to call ``.to(torch.bfloat16)``.

Each function takes the user's tensors (the raw objects, or ``TensorArg``s from
runtime/tensors.py) and returns the code of the fix, without the leading "Fix: ".
"""
from __future__ import annotations

import sys

from ..errors import ArgumentError
from ..jit.tracebacks import _user_error
from ..runtime.tensors import TensorArg

__all__ = ["framework", "cast_code", "empty_code", "contiguous_code", "is_read_only",
           "check_no_grad", "check_tune", "kind_of"]


def framework(*tensors) -> str:
    """'torch', 'cupy' or 'numpy': the framework of the first tensor that has one (numpy when
    none does, e.g. every argument was wrong)."""
    for x in tensors:
        kind = x.kind if isinstance(x, TensorArg) else None
        module = type(x.owner if isinstance(x, TensorArg) else x).__module__.split(".")[0]
        if kind == "torch" or module == "torch":
            return "torch"
        if kind == "cupy" or module == "cupy":
            return "cupy"
        if kind == "numpy" or module == "numpy":
            return "numpy"
    return "numpy"


def kind_of(x) -> str:
    """What a value that is not a tensor is, for an error that wanted one: "None", "a numpy
    scalar np.float32(1.0) (a number, not an array)", "a Python float (1.0)", "a list". A
    numpy scalar's dtype alone ("a float32") reads like a tensor's dtype, so it is named as the
    scalar it is."""
    if x is None:
        return "None"
    np = sys.modules.get("numpy")
    if np is not None and isinstance(x, np.generic):
        name = type(x).__name__
        prefix = "np." if type(x).__module__ == "numpy" else ""
        return f"a numpy scalar {prefix}{name}({x.item()!r}) (a number, not an array)"
    if type(x) in (bool, int, float, complex):
        return f"a Python {type(x).__name__} ({x!r})"
    return f"a {type(x).__name__}"


def _dtype_code(fw: str, name: str) -> str:
    if fw == "torch":
        return f"torch.{name}"
    if name == "bfloat16":
        return "ml_dtypes.bfloat16"
    return f"{'cupy' if fw == 'cupy' else 'np'}.{name}"


def cast_code(tensors, name: str, var: str = "x") -> str:
    """``var`` converted to dtype ``name`` ('float16', 'bfloat16', 'float32')."""
    fw = framework(*tensors)
    if fw == "torch":
        return f"{var}.to(torch.{name})"
    return f"{var}.astype({_dtype_code(fw, name)})"


def empty_code(tensors, shape: tuple, name: str) -> str:
    """A new uninitialized tensor of ``shape`` and dtype ``name`` beside ``tensors``."""
    fw = framework(*tensors)
    if fw == "torch":
        return f"torch.empty({shape}, dtype=torch.{name}, device=a.device)"
    return f"{'cupy' if fw == 'cupy' else 'np'}.empty({shape}, dtype={_dtype_code(fw, name)})"


def contiguous_code(tensors, var: str = "x") -> str:
    """``var`` as a contiguous (row-major) copy."""
    fw = framework(*tensors)
    if fw == "torch":
        return f"{var}.contiguous()"
    return f"{'cupy' if fw == 'cupy' else 'np'}.ascontiguousarray({var})"


def fresh_copy_code(tensors, var: str = "x") -> str:
    """``var`` as a new contiguous allocation (aligned as the framework allocates, which a
    contiguous view at an odd offset is not: ``contiguous_code`` would return the view)."""
    fw = framework(*tensors)
    if fw == "torch":
        return f"{var}.contiguous().clone()"
    return f"{'cupy' if fw == 'cupy' else 'np'}.array({var}, copy=True, order='C')"


def is_read_only(x) -> bool:
    """Whether ``x`` is an array that may not be written: numpy's ``flags.writeable`` off, or
    the read-only flag of its ``__array_interface__`` / ``__cuda_array_interface__`` data."""
    flags = getattr(x, "flags", None)
    if flags is not None and getattr(flags, "writeable", True) is False:
        return True
    for attr in ("__array_interface__", "__cuda_array_interface__"):
        try:
            data = getattr(x, attr, None)
        except Exception:               # noqa: BLE001 - a producer that refuses: not read-only
            continue
        if isinstance(data, dict) and isinstance(data.get("data"), tuple) \
                and len(data["data"]) == 2 and data["data"][1]:
            return True
    return False


def check_no_grad(op: str, names, *tensors) -> None:
    """ArgumentError (from the user's frame) when grad mode is on and one of the torch
    ``tensors`` (named by the words of ``names``, or by the items of a list) requires grad:
    ``ws.ops.<op>`` registers no backward, so its result would silently leave the autograd
    graph (an ``nn.Linear`` weight passed outside ``torch.no_grad()`` is the usual case; a bias,
    an ``out=`` or an epilogue's tensor no less)."""
    for t in tensors:                   # the hot path: one attribute read per tensor
        if getattr(t, "requires_grad", False) is True:
            break
    else:
        return
    torch = sys.modules.get("torch")
    if torch is None or not torch.is_grad_enabled():
        return
    T = torch.Tensor
    for name, t in zip(names.split() if isinstance(names, str) else names, tensors):
        if isinstance(t, T) and t.requires_grad:
            raise _user_error(ArgumentError(
                f"ws.ops.{op}: {name} (shape {tuple(t.shape)}) requires grad, but ws.ops.{op} "
                "has no backward (no autograd formula is registered), so its result would not "
                "be part of the autograd graph; expected tensors that do not require grad, or "
                "grad mode off. Fix: call it under torch.no_grad() / torch.inference_mode(), "
                f"pass {_detach_code(name)}, or use torch's op where gradients are needed"))


def check_tune(op: str, tune, given: dict) -> None:
    """ArgumentError (from the user's frame) unless ``tune`` is True and none of the policy
    arguments ``given`` (name -> value; None or False: not given) is set; each case its own
    message: a ``tune`` that is not a bool, or the policy arguments that were given."""
    if tune is not True:
        raise _user_error(ArgumentError(
            f"ws.ops.{op}: tune={tune!r} ({type(tune).__name__}); expected True (choose the "
            "policy per shape class with ws.autotune) or False. Fix: tune=True, or leave it "
            "out"))
    names = [name for name, x in given.items() if x is not None and x is not False]
    if names:
        raise _user_error(ArgumentError(
            f"ws.ops.{op}: tune=True with {', '.join(names)}; expected tune=True alone (the "
            "tuner chooses the policy itself). Fix: drop those arguments, or tune=False"))


def _detach_code(name: str) -> str:
    """``name.detach()``, or for a tensor named in words (an epilogue's operand) the words."""
    return f"{name}.detach()" if name.isidentifier() else f"{name} detached (x.detach())"
