"""A kernel's in-memory cache of specializations (``Kernel._cache``), beside the disk cache
(``persist.py``) of this package.

``Specializations`` maps a key ((parameter key parts), block, target) to its CompiledKernel and
keeps the history of keys in the order they were made, so that each new specialization can say
what changed compared with the closest earlier one (``frontend/spec_changes.py``), and the
kernel can warn once when it passes ``max_specializations``.
"""
from __future__ import annotations

from typing import Optional

__all__ = ["Specializations"]


class Specializations(dict):
    """key -> CompiledKernel (a dict: the launch paths read it directly), plus ``keys`` and
    ``key_specs`` (each specialization's key and parameter Specs, in order) and ``reasons``
    (what the 2nd, 3rd, ... changed)."""

    def __init__(self):
        super().__init__()
        self.keys: list = []
        self.key_specs: list = []
        self.reasons: list = []
        self.warned = False

    def note(self, key, specs, param_names) -> None:
        """Record a new specialization and why it differs from the closest earlier one (the
        one differing in the fewest parameters, the latest on a tie)."""
        if self.keys:
            from ...frontend.spec_changes import closest, describe_changes
            j = closest(specs, self.key_specs)
            prev = self.keys[j]
            what = describe_changes(param_names, self.key_specs[j], specs) or (
                f"block shape {prev[1]} -> {key[1]}" if prev[1] != key[1] else
                f"target {prev[2]} -> {key[2]}" if prev[2] != key[2] else
                "a global the kernel reads changed")
            self.reasons.append(f"vs #{j + 1}: {what}")
        self.keys.append(key)
        self.key_specs.append(specs)

    def over_limit(self, limit: int) -> Optional[str]:
        """The lines of the recompile warning, the first time there are more than ``limit``
        specializations; None otherwise (and every later time)."""
        if len(self.keys) <= limit or self.warned:
            return None
        self.warned = True
        return "\n".join(f"  #{i + 2} {r}" for i, r in enumerate(self.reasons))
