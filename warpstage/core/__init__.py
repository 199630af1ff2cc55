"""The core layer (DESIGN §3): facts every room below the public API shares. So far: the target
description (``core.target``). Imports nothing of the package but ``ir/``."""
from .target import TARGETS, Target, target_for

__all__ = ["Target", "TARGETS", "target_for"]
