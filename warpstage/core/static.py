"""``ws.Static`` / ``ws.Constexpr``: the annotation and the wrapper that make a parameter static
(binding-time rule 2 of docs/binding-time.md). Here, in the core layer, because both the
classification (``frontend/``) and library code in ``lang/`` (``ws.Static[...]`` fields of
``ws.struct``, pipelines, schedules) use them."""
from __future__ import annotations

import sys
import typing
from typing import Any

from ..errors import ArgumentError

__all__ = ["Static", "Constexpr", "StaticValue"]


def _short(v, n=60) -> str:
    r = repr(v)
    return r if len(r) <= n else r[:n - 3] + "..."


REJECTED = object()
"""What ``_StaticAnnotation.accept`` returns for a value its ``T`` does not take."""


class _StaticAnnotation:
    """``ws.Static[T]``: the parameter is static; its value is checked against ``T``."""

    def __init__(self, tp):
        self.tp = tp

    def __repr__(self) -> str:
        return f"ws.Static[{getattr(self.tp, '__name__', self.tp)}]"

    def accept(self, value):
        """The rule-1 check of ``value`` against ``T``, written once for the full path
        (:meth:`check`) and the hot-path binders (frontend/kinds/static.py): the value to key
        and trace, or ``REJECTED``. A numpy scalar where ``T`` is the Python type its ``item()``
        gives (``np.int64(3)`` for ``ws.Static[int]``, ``np.float32`` for ``float``, ``np.bool_``
        for ``bool``) is accepted as that Python value, so it keys and traces exactly as the
        plain number does; a numpy array is not a scalar, whatever its size. Whether a value is
        accepted follows from its type and its static key (a numpy scalar's holds its dtype):
        the generated call path's signature holds both (jit/fast_call.py)."""
        tp = self.tp
        if tp is Any or tp is None:
            return value
        origin = typing.get_origin(tp) or tp
        if isinstance(origin, type) and not isinstance(value, origin):
            plain = _numpy_item(value)
            return plain if plain is not None and isinstance(plain, origin) else REJECTED
        return value

    def check(self, value, name: str):
        """``value`` checked against ``T`` (:meth:`accept`), and returned as accepted. Raises
        ArgumentError naming the parameter ``name`` otherwise."""
        got = self.accept(value)
        if got is REJECTED:
            tp = self.tp
            raise ArgumentError(
                f"parameter '{name}' is annotated ws.Static[{getattr(tp, '__name__', tp)}] but got "
                f"{_got_text(value)}.\nFix: pass {_a(getattr(tp, '__name__', str(tp)))}, or "
                "change the annotation.")
        return got


def _a(noun: str) -> str:
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


def _numpy_item(v):
    """The Python number a numpy scalar holds (``v.item()``), else None."""
    np = sys.modules.get("numpy")
    if np is None or not isinstance(v, np.generic):
        return None
    item = v.item()
    return item if type(item) in (bool, int, float, complex) else None


def _got_text(v) -> str:
    """What the error says it got; a ws.compile placeholder (type attribute 'placeholder_of')
    is named by the type it stands for, never by its stand-in value (frontend/kinds/base.got_text
    says the same for the other binders)."""
    if getattr(type(v), "placeholder_of", None) is not None:
        return f"the type {v.placeholder_of}"
    return f"a {type(v).__name__} ({_short(v)})"


class _StaticFactory:
    def __getitem__(self, tp):
        return _StaticAnnotation(tp)

    def __call__(self, value):
        """``ws.Static(value)`` in ws.compile: this argument is static with this value."""
        return StaticValue(value)

    def __repr__(self):
        return "ws.Static"


class StaticValue:
    """A value wrapped by ``ws.Static(value)``: static whatever its type."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


Static = _StaticFactory()
Constexpr = Static
