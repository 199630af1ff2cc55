"""The pass pipeline: its order lives here and nowhere else. The verifier runs at both ends."""
from __future__ import annotations

from ..ir import Module, verify
from .dce import dead_code_elimination

__all__ = ["run_passes", "PIPELINE"]

PIPELINE = (dead_code_elimination,)


def run_passes(module: Module) -> Module:
    """Verify, run each pass of PIPELINE in order, verify again."""
    verify(module)
    for p in PIPELINE:
        p(module)
    verify(module)
    return module
