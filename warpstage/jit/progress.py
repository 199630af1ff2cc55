"""A progress line on a terminal for compiles that take longer than about a second.

Each compile stage (trace, llvm_load, lower, ptx, ptxas, load) runs inside :func:`stage`;
consecutive stages of one kernel form one compile. Once a compile has run for ``DELAY``
seconds, a line on stderr says which kernel and stage, and the time so far, updated a few times
a second by a daemon thread::

    [warpstage] compiling flash_attention_kernel: ptxas (1.4 s)

It is erased when the compile ends (nothing is left in the scrollback). Silent when stderr is not
a terminal (CI logs, pipes, notebooks), when ``WARPSTAGE_PROGRESS=0`` (``options.env_progress``),
or after ``set_enabled(False)``; ``WARPSTAGE_PROGRESS=1`` shows it on any stream. No thread
starts until a stage runs with the line enabled.
"""
from __future__ import annotations

import sys
import threading
import time
from contextlib import contextmanager
from typing import Optional

__all__ = ["stage", "enabled", "set_enabled", "DELAY"]

DELAY = 1.0          # seconds a compile runs before the line appears
_TICK = 0.1
_GAP = 0.3           # a stage starting this soon after the last one ended continues its compile

_lock = threading.Lock()
_forced: Optional[bool] = None
_current = None      # [kernel, stage, compile start, running?, last change]
_thread: Optional[threading.Thread] = None
_shown = False


def set_enabled(on: Optional[bool]) -> None:
    """Force the progress line on (True) or off (False) in this process; None: automatic."""
    global _forced
    _forced = on


def enabled() -> bool:
    """Whether compiles show the line: ``set_enabled``, else ``WARPSTAGE_PROGRESS``, else
    whether stderr is a terminal."""
    if _forced is not None:
        return _forced
    from ..options import env_progress
    env = env_progress()
    if env is not None:
        return env
    isatty = getattr(sys.stderr, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:                      # a closed stream
        return False


@contextmanager
def stage(kernel: str, name: str):
    """Run one compile stage ``name`` of ``kernel`` (a name for the line) under the progress
    line."""
    if not enabled():
        yield
        return
    _begin(kernel, name)
    try:
        yield
    finally:
        _end()


def _begin(kernel: str, name: str) -> None:
    global _current, _thread
    now = time.perf_counter()
    with _lock:
        cur = _current
        if cur is not None and cur[0] == kernel and (cur[3] or now - cur[4] < _GAP):
            cur[1], cur[3], cur[4] = name, True, now
        else:
            _current = [kernel, name, now, True, now]
        if _thread is None:
            _thread = threading.Thread(target=_tick, name="warpstage-progress", daemon=True)
            _thread.start()


def _end() -> None:
    with _lock:
        if _current is not None:
            _current[3], _current[4] = False, time.perf_counter()


def _write(text: str) -> None:
    try:
        sys.stderr.write(text)
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _tick() -> None:
    global _shown, _thread, _current
    while True:
        time.sleep(_TICK)
        now = time.perf_counter()
        with _lock:
            cur = _current
            if cur is not None and cur[3]:
                if now - cur[2] >= DELAY:
                    _write(f"\r\x1b[K[warpstage] compiling {cur[0]}: {cur[1]} "
                           f"({now - cur[2]:.1f} s)")
                    _shown = True
                continue
            if cur is not None and now - cur[4] < _GAP:
                continue
            if _shown:
                _write("\r\x1b[K")
                _shown = False
            _current = None
            if cur is None or now - cur[4] > 5.0:
                _thread = None               # idle: the next compile starts a new one
                return
