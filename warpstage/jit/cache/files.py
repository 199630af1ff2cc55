"""The disk cache of compiled kernels: one file per specialization, under ``path()``.

``path()`` is ``WARPSTAGE_CACHE_DIR`` or ``~/.cache/warpstage`` (read by ``options.env_cache_dir``
at each call). An entry is a dict of plain data (JSON: str, int, float, bool, None, lists, dicts)
with raw ``bytes`` and long text fields, in the file format of ``entry_format.py`` (``.wsc``;
``read_entry``, ``write_entry``, ``Deferred`` and ``CacheFormatError`` are re-exported here).

Writers write a temporary file in the same folder and ``os.replace`` it over the entry: readers
see the old entry or the new one, never half of one, also with several processes writing the
same key. A truncated, corrupt or unreadable entry is a miss (the caller rebuilds it and ``put``
overwrites it). A cache that cannot be written warns once and is skipped: compiling never fails
because of the cache.

Processes that miss the same key at once (the ranks of a job, ``warpstage compile`` workers)
serialize on a per-key lock, ``locked(key)``: the first builds the entry, the others wait, then
read it (docs/cache.md, "Several processes"). Correctness never depends on the lock (writes are
atomic either way); it only saves the duplicated compiles.

Standard library only (no CUDA, no LLVM).
"""
from __future__ import annotations

import hashlib
import os
import stat
import time
import warnings
from typing import Optional


from ...options import env_cache_dir
from ...runtime.cache_lock import lock_file
from .entry_format import (MAGIC, MAX_ENTRY_BYTES, SUFFIX, CacheFormatError,  # noqa: F401
                           Deferred, read_entry, write_entry)

__all__ = ["disk_key", "get", "put", "discard", "clear", "info", "path", "write_entry",
           "read_entry", "get_fact", "put_fact", "locked", "CacheFormatError", "Deferred", "SUFFIX",
           "FACT_SUFFIX", "LOCK_SUFFIX", "MAX_ENTRY_BYTES", "TEMP_MAX_AGE", "LOCK_TIMEOUT"]

FACT_SUFFIX = ".wsf"      # facts about this machine that the key needs (not kernels; see get_fact)
LOCK_SUFFIX = ".wsl"      # a key's lock file, present while a process builds that entry
TEMP_MAX_AGE = 3600.0           # seconds after which a writer's temporary file is abandoned
LOCK_TIMEOUT = 600.0            # seconds a process waits for another's build before building too
_warned_unwritable = False


def path() -> Optional[str]:
    """The cache folder (it may not exist yet): WARPSTAGE_CACHE_DIR or ~/.cache/warpstage;
    None when WARPSTAGE_CACHE_DIR is set but empty (the disk cache is off)."""
    return env_cache_dir()


def _canon(x) -> str:
    """A repr that is the same in every process: dicts sorted, tuples and lists kept apart."""
    t = type(x)
    if t is tuple:
        return "(" + ",".join(_canon(v) for v in x) + ",)"
    if t is list:
        return "[" + ",".join(_canon(v) for v in x) + "]"
    if t is dict:
        return "{" + ",".join(sorted(f"{_canon(k)}:{_canon(v)}" for k, v in x.items())) + "}"
    if t in (frozenset, set):
        return t.__name__ + "{" + ",".join(sorted(_canon(v) for v in x)) + "}"
    if t in (str, bytes, int, float, bool, type(None), complex):
        return f"{t.__name__}:{x!r}"
    return f"{t.__module__}.{t.__qualname__}:{x!r}"


def disk_key(parts) -> str:
    """SHA-256 (64 hex digits) of a canonical repr of ``parts`` (a tuple of plain data).

    Values that are not plain data are keyed by class and ``repr``, which must not contain an
    address (``<Foo object at 0x...>`` gives a key no other process reproduces).
    """
    return hashlib.sha256(_canon(parts).encode()).hexdigest()


def _file(key: str) -> Optional[str]:
    if len(key) != 64 or any(c not in "0123456789abcdef" for c in key):
        raise ValueError(f"cache key must be 64 lowercase hex digits (from disk_key), got {key!r}")
    folder = path()
    return None if folder is None else os.path.join(folder, key + SUFFIX)


def get(key: str, deferred: bool = False) -> Optional[dict]:
    """The entry stored under ``key``, or None (absent, unreadable, truncated or corrupt; a bad
    entry is removed, with a warning). ``deferred``: as for ``read_entry``."""
    file = _file(key)
    if file is None:
        return None
    try:
        return read_entry(file, deferred)
    except CacheFormatError as e:
        discard(key, str(e))
        return None
    except OSError:
        return None


def discard(key: str, why: str) -> None:
    """Remove the entry under ``key`` (it is bad: ``why``), warning once for it."""
    file = _file(key)
    if file is None:
        return
    try:
        if stat.S_ISREG(os.lstat(file).st_mode):
            os.unlink(file)
        removed = "removed it"
    except OSError as e:
        removed = f"could not remove it ({e})"
    warnings.warn(f"warpstage: the disk cache entry {file} is damaged ({why}); {removed}, and "
                  "the kernel is compiled again.", RuntimeWarning, stacklevel=3)


def put(key: str, entry: dict, deferred=()) -> bool:
    """Store ``entry`` under ``key``, replacing any entry there (``deferred``: as for
    ``write_entry``). Returns False (and warns once per process) when the cache folder cannot
    be written."""
    global _warned_unwritable
    file = _file(key)
    if file is None:
        return False
    try:
        write_entry(file, entry, deferred)
        _remove_old_temps()
        return True
    except OSError as e:
        if not _warned_unwritable:
            _warned_unwritable = True
            warnings.warn(f"warpstage: the disk cache at {path()} cannot be written ({e}); "
                          "compiled kernels are not being saved. Fix: make it writable or set "
                          "WARPSTAGE_CACHE_DIR to a writable folder.", RuntimeWarning,
                          stacklevel=2)
        return False


def locked(key: str, timeout: Optional[float] = None):
    """Hold the lock of ``key`` (an exclusive ``fcntl.flock`` on ``<key>.wsl`` in the cache
    folder) for the ``with`` body; yields True when it is held, False when it is not (the disk
    cache is off, the folder cannot be written, the platform has no ``flock``, or another
    process held it past ``timeout`` seconds, default ``LOCK_TIMEOUT``: a ``RuntimeWarning``
    names the lock file and the body runs anyway).

    Meant for build-then-``put``: a process that misses ``get(key)`` takes the lock, calls
    ``get(key)`` again (a process it waited for may have stored the entry) and builds only if
    that misses. A holder that dies releases the lock with its file descriptor (the kernel
    drops ``flock`` locks of closed files), so a lock is never stale; the file is removed on
    release. Local file systems only: ``flock`` over NFS is not relied on.

    Re-entrant within a thread (a nested ``locked(key)`` of the holder yields True at once:
    ``flock`` would make it wait for itself); another thread of the same process waits like
    another process."""
    file = _file(key)
    return lock_file(None if file is None else file[:-len(SUFFIX)] + LOCK_SUFFIX,
                     LOCK_TIMEOUT if timeout is None else timeout)


def get_fact(key: str) -> Optional[dict]:
    """A small fact stored under ``key`` (same format as an entry, suffix ``.wsf``): what a
    fresh process would otherwise recompute for the disk key (the digest of warpstage's sources
    for unchanged file stamps, ptxas' version for an unchanged ptxas binary). None when absent
    or unreadable, and with the disk cache off. ``clear()`` and ``info()`` leave facts out."""
    if path() is None:
        return None
    try:
        return read_entry(_file(key)[:-len(SUFFIX)] + FACT_SUFFIX)
    except (OSError, CacheFormatError):
        return None


def put_fact(key: str, fact: dict) -> None:
    """Store ``fact`` under ``key``; silently nothing when the folder cannot be written or the
    disk cache is off."""
    if path() is None:
        return
    try:
        write_entry(_file(key)[:-len(SUFFIX)] + FACT_SUFFIX, fact)
    except OSError:
        pass


def _files():
    folder = path()
    if folder is None:
        return []
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    return [os.path.join(folder, n) for n in names if n.endswith(SUFFIX)]


def _is_temp(f: str) -> bool:
    return os.path.basename(f).startswith(".tmp-")


def _remove_old_temps() -> int:
    """Remove temporary files older than TEMP_MAX_AGE (left by writers that were killed)."""
    n, now = 0, time.time()
    for f in _files():
        try:
            if _is_temp(f) and now - os.lstat(f).st_mtime > TEMP_MAX_AGE:
                os.unlink(f)
                n += 1
        except OSError:
            continue
    return n


def clear() -> int:
    """Remove every entry (and leftover temporary files); returns the number of entries removed.
    Other files in the folder are left alone. Raises PermissionError (an OSError) naming the
    folder if some entries could not be removed."""
    removed, failed, first = 0, 0, None
    for f in _files():
        try:
            os.unlink(f)
        except FileNotFoundError:
            continue
        except OSError as e:
            failed += 1
            first = first or e
            continue
        if not _is_temp(f):
            removed += 1
    if failed:
        raise PermissionError(f"could not remove {failed} file(s) from the disk cache at "
                              f"{path()} ({first}); removed {removed} entries")
    return removed


def info() -> dict:
    """{'path': folder (None: the disk cache is off), 'entries': number of entries, 'bytes':
    their total size in bytes, 'temp_files': temporary files of writers (old ones were left by
    killed processes and are removed by the next store)}."""
    entries = size = temps = 0
    for f in _files():
        if _is_temp(f):
            temps += 1
            continue
        try:
            size += os.path.getsize(f)
        except OSError:
            continue
        entries += 1
    return {"path": path(), "entries": entries, "bytes": size, "temp_files": temps}
