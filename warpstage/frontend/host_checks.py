"""Run-time halves of the rewrite's host-read checks (rewrite_reads.py): Python objects that exist
only while compiling, met by dynamic values. Each either does what plain Python would (a static
index, a print of static values) or raises an error naming the user's construct and line, with
the fix — never a raw ``KeyError`` or a placeholder printed once at compile time.
"""
from __future__ import annotations

import builtins
import sys

from ..errors import BindingTimeError
from ..core.trace import emit_location

__all__ = ["read_item", "call_print", "format_value", "is_dynamic_value"]

_DYNAMIC: tuple = ()


def is_dynamic_value(v) -> bool:
    """A traced GPU value (scalar, pointer, tensor)."""
    global _DYNAMIC
    if not _DYNAMIC:
        from ..lang.pointer import Pointer
        from ..lang.scalars import Scalar
        from ..lang.tensor import Tensor
        _DYNAMIC = (Scalar, Pointer, Tensor)
    return isinstance(v, _DYNAMIC)


def _has_dynamic(index) -> bool:
    if type(index) is tuple:
        return any(is_dynamic_value(i) for i in index)
    return is_dynamic_value(index)


def read_item(obj, index, text: str):
    """``obj[index]``; a dict or numpy array indexed by a dynamic value is an error. (A list or
    tuple needs no check: its ``__index__`` call raises BindingTimeError with the value's
    origin.)"""
    t = type(obj)
    if t is dict or t.__module__ == "numpy":
        if _has_dynamic(index):
            _dynamic_index(obj, text)
    return obj[index]


def _dynamic_index(obj, text: str):
    np = sys.modules.get("numpy")
    if type(obj) is dict:
        what, fix = (f"the dict `{text}`", "make the key static (a Python value, or a "
                     "ws.static_range loop variable), or store the values in a tensor passed to "
                     "the kernel and index that")
    elif np is not None and isinstance(obj, np.ndarray):
        what, fix = (f"the numpy array `{text}`", f"pass `{text}` to the kernel as an argument "
                     "(it becomes a GPU tensor, indexable by dynamic values)")
    else:
        what, fix = (f"the numpy {type(obj).__name__} `{text}`", "make the index static")
    raise BindingTimeError(
        f"{what} is indexed by a dynamic value\n{emit_location()}\nIt is a Python object: it "
        f"exists only while compiling, and a GPU value is known only at run time.\nFix: {fix}.")


def call_print(fn, *args, **kwargs):
    """``print(...)`` in traced code: static values print while compiling, as in Python; a
    dynamic value is an error (it would print a placeholder, once)."""
    if fn is builtins.print and any(is_dynamic_value(a) for a in args):
        raise BindingTimeError(
            f"print() of a dynamic value\n{emit_location()}\nprint() runs while compiling, once; "
            "it would print a placeholder, not the GPU value.\nFix: ws.printf(\"x = %d\\n\", x) "
            "prints from the GPU at run time (one line per thread that runs it).")
    return fn(*args, **kwargs)


def format_value(v):
    """An f-string field in traced code: a dynamic value is an error (see call_print)."""
    if is_dynamic_value(v):
        raise BindingTimeError(
            f"an f-string formats a dynamic value\n{emit_location()}\nf-strings are formatted "
            "while compiling, once; the text would hold a placeholder, not the GPU value.\n"
            "Fix: ws.printf(\"x = %d\\n\", x) prints from the GPU at run time.")
    return v
