"""The binding-time rules at a boundary (docs/binding-time.md): ``classify`` applies the ordered
table of parameter kinds (frontend/kinds/table.py, DESIGN §2's list) to one parameter, and
``ws.Static`` / ``ws.Constexpr`` (core/static.py) mark a parameter static.

``classify(value, annotation, name)`` returns the parameter's binding, an instance of its kind
(frontend/kinds/base.Kind): the rule that decided, the binding time (static / dynamic / mixed),
a type description, the cache-key part, the ABI slots, the host values of those slots
(``host_leaves``) and the traced value built from the kernel's IR arguments (``make``). The same
binding serves the cache key, the launch ABI, ``explain``, the disk form and tracing.
"""
from __future__ import annotations

from ..core.static import Constexpr, Static, StaticValue  # noqa: F401
from .kinds import RULES, Kind, classify

Spec = Kind          # the binding of one parameter (an instance of its kind)

__all__ = ["Static", "Constexpr", "Spec", "classify", "RULES"]
