"""The cyclic garbage collector paused while a compile stage builds its data.

Tracing, the passes and the lowering build graphs whose objects all stay alive until the stage
ends: every IR ``Value`` points at its ``Operation`` and back, every llvmlite instruction at its
block. CPython's collector runs a young-generation walk each ~700 net allocations and an
older-generation walk every tenth of those, so building FlashAttention's 6,500 ops (and their
values, locations, wrappers and LLVM objects) ran ~180 collections that found almost nothing to
free, about 10-15% of a cold compile's CPU time (docs/compile-time.md). A stage runs inside
``collection_paused()``; the collector runs as usual between stages and after the compile, and
what a stage dropped (a loop trace thrown away, say) is collected then.
"""
from __future__ import annotations

import contextlib
import gc
import threading

__all__ = ["collection_paused"]

_lock = threading.Lock()
_depth = 0
_paused_here = False


@contextlib.contextmanager
def collection_paused():
    """Automatic garbage collection off for the duration (nested and concurrent uses count:
    the collector comes back on when the last one ends, and only if it was on before the
    first). Explicit ``gc.collect()`` calls still run."""
    global _depth, _paused_here
    with _lock:
        if _depth == 0:
            _paused_here = gc.isenabled()
            if _paused_here:
                gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _paused_here:
                _paused_here = False
                gc.enable()
