"""Tuning winners on disk: one ``.wst`` file per (device, warpstage version, tuned function,
tuning key, configuration space) in the disk cache's folder (``runtime/cache.path()``,
``WARPSTAGE_CACHE_DIR``), in the cache's file format (``cache.write_entry``: JSON header,
SHA-256, written to a temporary file and renamed, so readers never see half a record).

The record key (``record_key``) is a digest of: the device name ('sim' for the simulator) and
compute capability, ``warpstage.__version__``, the tuned function's module, qualified name and
code digest, the tuning key's canonical text, and the digest of every candidate's static key
in order (``space_digest``): a changed space is tuned again. The record holds the winner's
index and static-key digest (checked against the current space before use), its text, its
time, and every candidate's outcome (for ``warpstage tune show``).

Kernel code is not in the key (a launch function's kernels are known only by running it):
after editing a tuned kernel, ``warpstage tune clear`` (or ``clear()``) makes the next call tune
again. ``cache.clear()`` (``warpstage cache clear``) leaves records alone.
"""
from __future__ import annotations

import os
import time
from typing import List, Optional

from ..jit.cache import files as cache

__all__ = ["SUFFIX", "record_key", "space_digest", "config_digest", "load", "store", "all_records",
           "clear"]

SUFFIX = ".wst"
FORMAT = 1


def config_digest(config) -> str:
    """A digest of ``config``'s static key (the same in every process)."""
    from ..core.static_key import static_key
    return cache.disk_key(("tune-config", repr(static_key(config))))


def space_digest(digests: List[str]) -> str:
    return cache.disk_key(("tune-space", tuple(digests)))


def record_key(device: str, fn_id: tuple, key_text: str, space: str) -> str:
    from .. import __version__
    return cache.disk_key(("tune", FORMAT, device, __version__, fn_id, key_text, space))


def _file(key: str) -> Optional[str]:
    folder = cache.path()
    return None if folder is None else os.path.join(folder, key + SUFFIX)


def load(key: str) -> Optional[dict]:
    """The record stored under ``key``, or None (absent, unreadable, or the cache is off)."""
    f = _file(key)
    if f is None:
        return None
    try:
        return cache.read_entry(f)
    except (OSError, cache.CacheFormatError):
        return None


def store(key: str, record: dict) -> bool:
    """Write ``record`` under ``key``; False when the cache is off or cannot be written."""
    f = _file(key)
    if f is None:
        return False
    try:
        os.makedirs(os.path.dirname(f), exist_ok=True)
        cache.write_entry(f, dict(record, stored=time.time()))
        return True
    except OSError:
        return False


def _files() -> List[str]:
    folder = cache.path()
    if folder is None or not os.path.isdir(folder):
        return []
    return sorted(os.path.join(folder, n) for n in os.listdir(folder) if n.endswith(SUFFIX)
                  and not n.startswith(".tmp-"))


def all_records() -> List[dict]:
    """Every readable record, oldest first."""
    out = []
    for f in _files():
        try:
            out.append(cache.read_entry(f))
        except (OSError, cache.CacheFormatError):
            continue
    return sorted(out, key=lambda r: r.get("stored", 0))


def clear() -> int:
    """Remove every record; returns how many were removed."""
    n = 0
    for f in _files():
        try:
            os.unlink(f)
            n += 1
        except OSError:
            continue
    return n
