"""Checks of the operands that device-operation wrappers take: static ints, dynamic scalars,
pointers. Every failure names the call (file:line with a caret excerpt), the value, what was
expected and the fix.
"""
from __future__ import annotations

from typing import Iterable, Optional

from ..errors import OperandError
from ..core.source import format_location, user_location
from .pointer import Pointer
from .scalars import Int32, Scalar, as_dynamic, needs_static_error

__all__ = ["operand_error", "static_int", "dynamic_i32", "pointer_operand"]


def operand_error(what: str, got, expected: str, fix: str) -> OperandError:
    """An OperandError: ``what`` got ``got``, expected ``expected``; ``fix``. A ``got`` that is
    a variable with no value on this path (core/unbound.Unbound) gives that variable's error."""
    from ..core.unbound import Unbound
    if isinstance(got, Unbound):
        return got.error()
    loc = user_location()
    where = format_location(loc)
    return OperandError(f"{what}: expected {expected}, got {got!r}.\n"
                        + (where + "\n" if where else "") + f"Fix: {fix}",
                        where=str(loc) if loc else None)


def static_int(x, what: str, allowed: Optional[Iterable[int]] = None, expected: str = "",
               fix: str = "") -> int:
    """``x`` as a static Python int. A dynamic value raises BindingTimeError (with its origin);
    a non-int or a value outside ``allowed`` raises OperandError."""
    if isinstance(x, Scalar):
        raise needs_static_error(x, what)
    if isinstance(x, bool) or not isinstance(x, int):
        raise operand_error(what, x, expected or "a static int", fix or "pass a Python int")
    if allowed is not None and x not in allowed:
        raise operand_error(what, x, expected, fix)
    return x


def dynamic_i32(x, what: str):
    """``x`` (a static int or a dynamic integer) as the ir.Value of an Int32."""
    if isinstance(x, Scalar):
        if not (x.ir_type.is_int or x.ir_type.is_bool):
            raise operand_error(what, f"a dynamic {type(x).__name__}", "an integer",
                                "convert it with ws.Int32(...)")
        return Int32(x).value
    if isinstance(x, bool) or not isinstance(x, int):
        raise operand_error(what, x, "an int or a dynamic integer", "pass an int")
    if not -2**31 <= x < 2**31:
        raise operand_error(what, x, "a value that fits in 32 bits", "use a smaller value")
    return as_dynamic(x, Int32).value


def pointer_operand(p, what: str, space: str) -> Pointer:
    """``p`` (a Pointer, or an object with a ``.ptr`` Pointer: an smem array) in ``space``."""
    ptr = p if isinstance(p, Pointer) else getattr(p, "ptr", None)
    if not isinstance(ptr, Pointer):
        raise operand_error(what, type(p).__name__, f"a {space} pointer (ws.Pointer)",
                            f"pass a pointer into {space} memory")
    if ptr.space != space:
        raise operand_error(what, f"a {ptr.space} pointer", f"a {space} pointer",
                            f"pass a pointer into {space} memory")
    return ptr
