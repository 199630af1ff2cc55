"""The per-key lock of the disk cache (``cache.locked``): an exclusive ``fcntl.flock`` on a lock
file, polled until a timeout, re-entrant within a thread, removed on release.

Why a lock file and ``flock``: the kernel drops a ``flock`` lock when the file descriptor holding
it is closed, which happens when its process exits or is killed, so a lock is never stale (no
process ids or ages to judge). Why the inode check after locking: a releaser unlinks the file
before unlocking it, so a process that opened the old file and then got its lock would hold a
file nobody else can see; it sees that the path names another file (or none) and tries again.
Standard library only.
"""
from __future__ import annotations

import contextlib
import os
import threading
import time
import warnings
from typing import Optional

try:
    import fcntl
except ImportError:         # not POSIX (Windows): no lock, only the cache's atomic writes
    fcntl = None

__all__ = ["lock_file", "fcntl"]

_held: set = set()          # (lock file, thread id) of the locks this process holds


@contextlib.contextmanager
def lock_file(path: Optional[str], timeout: float):
    """Hold an exclusive ``flock`` on ``path`` (created, mode 0600) for the ``with`` body;
    yields True when held, False when not (``path`` None, no ``fcntl``, the folder cannot be
    written, or the lock stayed taken past ``timeout`` seconds: a ``RuntimeWarning`` says
    so). Re-entrant within a thread; another thread of the process waits as another process
    does. The file is removed on release."""
    mine = (path, threading.get_ident())
    if path is not None and mine in _held:
        yield True
        return
    fd = None
    if path is not None and fcntl is not None:
        fd = _acquire(path, timeout)
    if fd is not None:
        _held.add(mine)
    try:
        yield fd is not None
    finally:
        if fd is not None:
            _held.discard(mine)
            _release(path, fd)


def _acquire(lock_file: str, timeout: float) -> Optional[int]:
    deadline = time.monotonic() + timeout
    delay = 0.001
    while True:
        try:
            os.makedirs(os.path.dirname(lock_file), exist_ok=True)
            fd = os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError:
            return None                     # unwritable: build without the lock
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            if time.monotonic() >= deadline:
                warnings.warn(f"warpstage: waited {timeout:.0f} s for another process to build "
                              f"the disk cache entry locked by {lock_file}; building it here "
                              "too. Fix: if no warpstage process is compiling, remove that "
                              "file.", RuntimeWarning, stacklevel=4)
                return None
            time.sleep(delay)
            delay = min(2 * delay, 0.02)
            continue
        except OSError:                     # no locking on this file system
            os.close(fd)
            return None
        try:                                # the file locked must still be the lock file: a
            same = os.path.samestat(os.fstat(fd), os.stat(lock_file))   # releaser unlinks it
        except OSError:
            same = False
        if same:
            return fd
        os.close(fd)


def _release(lock_file: str, fd: int) -> None:
    try:
        os.unlink(lock_file)                # before unlocking: a waiter then sees a new file
    except OSError:
        pass
    os.close(fd)
