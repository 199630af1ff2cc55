"""What changed between two specializations of a kernel, in a few words per parameter: the
reasons a ``RecompileWarning`` lists (jit/kernel.py).

``closest(specs, earlier)`` picks, among the specializations compiled before, the one whose
parameters differ from ``specs`` in the fewest places (the latest on a tie), and
``param_change(old, new)`` says what changed in one parameter, as its kind says it (the kind's
``change``, frontend/kinds/): a tensor's dtype, rank, unit strides, index width or base
alignment; a scalar's dtype; a static value old -> new; a TMA descriptor's box / swizzle / fill /
L2 promotion; a composite's changed parts by name.

A static object's fields are named when its key names them: a ``__static_key__()`` that returns
a tuple of ``(name, value)`` pairs (``("softmax_scale", 0.125), ...``: the FlashAttention
policies do) or the structural key of an object without one (its attributes) gives
"softmax_scale 0.125 -> 0.2" instead of "a static field of ... changed".
"""
from __future__ import annotations

from .kinds import param_change

__all__ = ["param_change", "closest", "describe_changes"]


def _key_distance(a, b) -> int:
    """How many leaves of two key parts differ (tuples of one length compared item by item)."""
    if a == b:
        return 0
    if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b):
        return sum(_key_distance(x, y) for x, y in zip(a, b))
    return 1


def _differing(a: list, b: list) -> tuple:
    return (sum(x.key != y.key for x, y in zip(a, b)),
            sum(_key_distance(x.key, y.key) for x, y in zip(a, b)))


def closest(specs: list, earlier: list) -> int:
    """Index in ``earlier`` (lists of specs) of the one differing from ``specs`` in the fewest
    parameters (then in the fewest parts of them: a tensor's alignment, a descriptor's box...);
    the latest one on a tie."""
    best, best_n = len(earlier) - 1, None
    for i in range(len(earlier) - 1, -1, -1):
        n = _differing(specs, earlier[i])
        if best_n is None or n < best_n:
            best, best_n = i, n
    return best


def describe_changes(names: list, old: list, new: list) -> str:
    """'steps: 1 -> 2; x: base alignment 16 -> 4 bytes' for the parameters that differ."""
    out = []
    for n, a, b in zip(names, old, new):
        c = param_change(a, b)
        if c is not None:
            out.append(f"{n}: {c}")
    return "; ".join(out)
