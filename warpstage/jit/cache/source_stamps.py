"""The stamps of warpstage's own ``.py`` files, which key the digest of its sources in the
disk-cache key (``key_facts.py``): one ``scandir`` per folder and one ``stat`` per file (~230
files; ~1 ms CPU on the CI host, 2-3 ms on a loaded one, all of it system calls).

``import warpstage`` starts the scan in a thread (``start``, the first line of
``warpstage/__init__.py``), where it runs while the rest of the package imports (the stats
release the GIL; the import's own file reads give it back), so that a fresh process's first
disk-cache key (``scan``) finds the stamps taken instead of taking them on its first call.
They are the stamps of the files as the process imported them: a file edited after that is
seen by the next process, as an edit of a module already imported always was.

Standard library only: it is imported before anything else of the package.
"""
from __future__ import annotations

import hashlib
import os
import threading

__all__ = ["ROOT", "start", "scan", "scan_folder"]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
"""warpstage's package folder."""

_taken: list = []               # [scan_folder(ROOT)] once taken (list.append is atomic)
_thread: list = []              # [the thread start() started]


def start() -> None:
    """Take ``ROOT``'s stamps in a daemon thread (once per process)."""
    if _thread or _taken:
        return
    thread = threading.Thread(target=_take, name="warpstage source stamps", daemon=True)
    _thread.append(thread)
    thread.start()


def _take() -> None:
    try:
        stamps = scan_folder(ROOT)
    except OSError:             # taken again, and raised, by scan() in the caller's thread
        return
    _taken.append(stamps)


def scan() -> tuple:
    """``scan_folder(ROOT)``: the stamps ``start``'s thread took (waited for if it is still
    running), else taken now (no thread started, it failed, or this process is a fork's child
    that the thread did not follow)."""
    if _thread and not _taken:
        _thread[0].join()
    if not _taken:
        _taken.append(scan_folder(ROOT))
    return _taken[0]


def scan_folder(root: str) -> tuple:
    """(files, digest): files = [(path relative to ``root``, 'mtime_ns:size')] of every
    ``.py`` file under ``root``, sorted (``__pycache__`` skipped), and the SHA-256 of those
    stamps. Raises OSError if a folder cannot be listed."""
    files, folders = [], [""]
    while folders:
        rel = folders.pop()
        with os.scandir(os.path.join(root, rel)) as entries:
            for e in entries:
                if e.is_dir(follow_symlinks=False):
                    if e.name != "__pycache__":
                        folders.append(f"{rel}{e.name}/")
                elif e.name.endswith(".py"):
                    st = e.stat()
                    files.append((rel + e.name, f"{st.st_mtime_ns}:{st.st_size}"))
    files.sort()
    stamps = "\n".join(f"{rel}:{st}" for rel, st in files)
    return files, hashlib.sha256(stamps.encode()).hexdigest()
