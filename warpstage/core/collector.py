"""The cyclic garbage collector paused while a compile stage builds its data.

Tracing, the passes and the lowering build graphs whose objects stay alive until the stage
ends: every IR ``Value`` points at its ``Operation`` and back, every llvmlite instruction at its
block. CPython's collector walks the young generation every ~700 net allocations, the middle one
every tenth of those and, now and then, the whole heap (warpstage, numpy and llvmlite included),
so a cold FlashAttention D=128 compile in a fresh process ran ~177 collections (161 young, 15
middle, 1-2 full) over objects that were nearly all still in use. A stage runs inside
``collection_paused()``: no automatic collection during it, then one young-generation walk of
what it made (docs/compile-time.md, "What was cut", 7.).
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
    first). Explicit ``gc.collect()`` calls still run. At the end, one young-generation
    collection: the objects the stage made are walked once, then belong to the older
    generations as usual (the next allocation would have started that collection anyway; run
    here, it is counted in the stage that made them)."""
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
                gc.collect(0)   # due anyway at the next allocation: charged to this stage
