"""Values of variables that have none: ``Unbound`` (using it is an error that says why) and
``UNDEF`` (the return-value slot before any ``return`` ran)."""
from __future__ import annotations

from typing import Optional

from ..errors import UnboundVariableError  # noqa: F401 (re-exported)
from .source import format_location, user_location

__all__ = ["Unbound", "UnboundVariableError", "UNDEF"]


class Unbound:
    """The value of a variable that has none here. Every use raises ``UnboundVariableError``
    saying why; only ``repr`` and identity checks are safe."""

    __slots__ = ("name", "reason", "fix")

    def __init__(self, name: str, reason: Optional[str] = None, fix: Optional[str] = None):
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "reason", reason)
        object.__setattr__(self, "fix", fix)

    def __repr__(self) -> str:
        return f"<unbound {self.name}>"

    def error(self) -> UnboundVariableError:
        loc = user_location(2)
        why = self.reason or "it is used before it is assigned"
        fix = self.fix or (f"assign `{self.name}` a value before this point on every path (for "
                           "example before the `if` or loop), or only use it inside the region "
                           "that assigns it")
        msg = (f"variable `{self.name}` has no value here: {why}.\n{format_location(loc)}\n"
               f"Fix: {fix}.")
        return UnboundVariableError(msg, where=str(loc) if loc else None)

    def _fail(self, *args, **kwargs):
        raise self.error()

    def __getattr__(self, attr):
        raise self.error()

    def __setattr__(self, attr, value):
        raise self.error()


for _dunder in ("bool", "call", "iter", "len", "getitem", "setitem", "delitem", "contains",
                "index", "int", "float", "complex", "hash", "eq", "ne", "lt", "le", "gt", "ge",
                "neg", "pos", "abs", "invert", "add", "radd", "sub", "rsub", "mul", "rmul",
                "truediv", "rtruediv", "floordiv", "rfloordiv", "mod", "rmod", "pow", "rpow",
                "and", "rand", "or", "ror", "xor", "rxor", "lshift", "rlshift", "rshift",
                "rrshift", "matmul", "rmatmul", "enter", "exit", "format", "str"):
    setattr(Unbound, f"__{_dunder}__", Unbound._fail)


class _Undef:
    """The return-value slot before any ``return`` ran: merges with anything as that thing."""

    def __repr__(self) -> str:
        return "<no return value yet>"


UNDEF = _Undef()
