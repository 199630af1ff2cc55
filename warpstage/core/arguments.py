"""The error for a call whose arguments do not fit the parameters: a missing one, one too many,
an unknown or repeated keyword. One diagnosis for a kernel's launch (``Kernel._bind``), a stored
kernel's (``loaded.bind_host_args``) and a ``@ws.jit`` device function's call inside a kernel
(``frontend/specialize.call_device_function``), in the house form: what, the expected and the
given argument lists, and the call to write instead. The caller's line is added by the public
entry or the trace (jit/tracebacks.py)."""
from __future__ import annotations

import difflib

from ..errors import ArgumentError

__all__ = ["argument_mismatch", "signature_text"]


def argument_mismatch(name: str, params: list, args: tuple, kwargs: dict,
                      signature: str = "", optional=(), what: str = "kernel",
                      call: str = "", fix: str = "") -> ArgumentError:
    """The ArgumentError for calling ``what`` ``name`` (parameters named ``params``, in order; a
    ``*args`` or ``**kwargs`` parameter is not supported) with ``args`` / ``kwargs``.
    ``signature``: its signature as text (with annotations), else the names alone;
    ``optional``: the names of parameters with a default; ``call``: how it is called in the
    Fix (default ``name[grid, block]``, a kernel's launch); ``fix``: the whole Fix instead."""
    shown = signature or f"({', '.join(params)})"
    given = list(params[:len(args)])
    problems = []
    if len(args) > len(params):
        problems.append(f"{len(args) - len(params)} positional argument(s) too many")
    for k in kwargs:
        if k not in params:
            near = difflib.get_close_matches(k, params, n=1)
            problems.append(f"an unexpected keyword argument {k!r}" +
                            (f" (did you mean {near[0]!r}?)" if near else ""))
        elif k in given:
            problems.append(f"two values for {k!r} (positional and keyword)")
        else:
            given.append(k)
    missing = [p for p in params if p not in given and p not in optional]
    if missing:
        problems.append("no value for " + ", ".join(repr(p) for p in missing))
    n = len(args) + len(kwargs)
    return ArgumentError(
        f"{what} {name}{shown} was called with {'; '.join(problems) or 'arguments that do not bind'}"
        f".\nExpected: {len(params)} argument(s) ({', '.join(params)}); got {n}"
        f"{' (' + ', '.join(_given(params, args, kwargs)) + ')' if n else ''}.\n"
        "Fix: " + (fix or f"{call or name + '[grid, block]'}({', '.join(params)}), one value per "
                   "parameter, by position or by name."))


def signature_text(signature) -> str:
    """``(x: ws.Tensor, n: ws.Int32, tile=64)``: an ``inspect.Signature`` as the user wrote it
    (warpstage's classes as ``ws.Name``, not by their module path)."""
    parts = []
    for p in signature.parameters.values():
        text = p.name
        if p.annotation is not p.empty:
            text += ": " + _annotation_text(p.annotation)
        if p.default is not p.empty:
            text += f"={p.default!r}"
        parts.append(text)
    return f"({', '.join(parts)})"


def _annotation_text(ann) -> str:
    if isinstance(ann, str):
        return ann
    if isinstance(ann, type):
        return (f"ws.{ann.__name__}" if ann.__module__.startswith("warpstage") else
                ann.__qualname__)
    return repr(ann)


def _given(params: list, args: tuple, kwargs: dict) -> list:
    """What each given argument binds to: a parameter's name, an extra position, a keyword."""
    return ([params[i] if i < len(params) else f"extra #{i + 1}" for i in range(len(args))] +
            [f"{k}=" for k in kwargs])
