"""Recording a candidate's launches without running them: the compile step of the autotuner.

``capture_launches(call)`` runs ``call()`` (the tuned function with one configuration) while
``warpstage.jit.launch.capture`` is set: every kernel launch specializes its kernel as usual (trace,
LLVM, ptxas; on the cuda target the result is stored in the disk cache) and, instead of
launching, is recorded with its resources (``resources.of_launch``). The host code around the
launches runs for real (argument checks, descriptors, output allocation), so what is recorded
is exactly what the call would launch.

Only launches through the full path are recorded. On the cuda target a kernel's generated call
path launches directly once the same call signature has launched before in this process, so the
autotuner captures in fresh worker processes there (warpstage/tune/workers.py); in-process
capture is for the simulator (whose launches always take the full path) and for functions a
worker cannot import.
"""
from __future__ import annotations

from typing import Callable

from ..jit import launch as _launch
from .resources import Resources, of_launch

__all__ = ["capture_launches"]


def capture_launches(call: Callable[[], object]) -> Resources:
    """The Resources of the launches ``call()`` makes (none of them runs). Raises what the call
    or its compiles raise."""
    recorded = []

    def record(ck, target, grid, block, smem):
        recorded.append(of_launch(ck, grid, block, smem))

    previous = _launch.capture
    _launch.capture = record
    try:
        call()
    finally:
        _launch.capture = previous
    return Resources(tuple(recorded))
