"""The disk cache of compiled kernels: one file per specialization, under ``path()``.

``path()`` is ``WARPSTAGE_CACHE_DIR`` or ``~/.cache/warpstage`` (read by ``options.env_cache_dir``
at each call). An entry is a dict of plain data (JSON: str, int, float, bool, None, lists, dicts)
whose top-level ``bytes`` values (the cubin) are stored raw, and so are its long ``str`` values
(IR, LLVM IR and PTX text, UTF-8), which JSON would escape and a reader would unescape. The file
format (``.wsc``):

    b"WSCACHE1" | header length (u64 LE) | blob length (u64 LE) | header (UTF-8 JSON)
                | blobs (raw bytes) | SHA-256 of header + blobs (32 bytes)

An entry written with ``deferred`` fields (``put(key, entry, deferred=...)``: a kernel's IR and
LLVM IR texts, which a disk hit never reads) keeps those after the checksum, with a checksum of
their own in the header, so that a reader reads and checks only the rest (``.wsc``, format 2):

    b"WSCACHE2" | header length | blob length | deferred length (u64 LE each) | header
                | blobs | SHA-256 of header + blobs | deferred blobs

``get(key, deferred=True)`` gives those fields as :class:`Deferred` values, read and checked
on first use (``Deferred.load``); every other reader gets them as text, checked at once.

Nothing is pickled, so loading an entry never runs code. Writers write a temporary file in the
same folder and ``os.replace`` it over the entry: readers see the old entry or the new one, never
half of one, also with several processes writing the same key. A truncated, corrupt or
unreadable entry is a miss (the caller rebuilds it and ``put`` overwrites it). A cache that
cannot be written warns once and is skipped: compiling never fails because of the cache.

Processes that miss the same key at once (the ranks of a job, ``warpstage compile`` workers)
serialize on a per-key lock, ``locked(key)``: the first builds the entry, the others wait, then
read it (docs/cache.md, "Several processes"). Correctness never depends on the lock (writes are
atomic either way); it only saves the duplicated compiles.

Standard library only (no CUDA, no LLVM).
"""
from __future__ import annotations

import hashlib
import json
import os
import stat
import struct
import tempfile
import time
import warnings
from typing import Optional


from ...options import env_cache_dir
from ...runtime.cache_lock import lock_file

__all__ = ["disk_key", "get", "put", "discard", "clear", "info", "path", "write_entry",
           "read_entry", "get_fact", "put_fact", "locked", "CacheFormatError", "Deferred", "SUFFIX",
           "FACT_SUFFIX", "LOCK_SUFFIX", "MAX_ENTRY_BYTES", "TEMP_MAX_AGE", "LOCK_TIMEOUT"]

MAGIC = b"WSCACHE1"
MAGIC_DEFERRED = b"WSCACHE2"    # with blobs after the checksum, checked when first read
SUFFIX = ".wsc"
FACT_SUFFIX = ".wsf"      # facts about this machine that the key needs (not kernels; see get_fact)
LOCK_SUFFIX = ".wsl"      # a key's lock file, present while a process builds that entry
_HEAD = struct.Struct("<QQ")
_HEAD_DEFERRED = struct.Struct("<QQQ")
_DIGEST = 32
MAX_ENTRY_BYTES = 256 << 20     # no entry is larger (a cubin is a few MB at most)
TEMP_MAX_AGE = 3600.0           # seconds after which a writer's temporary file is abandoned
LOCK_TIMEOUT = 600.0            # seconds a process waits for another's build before building too
_TEXT_BLOB = 1024               # str values at least this long are stored raw, as UTF-8
_warned_unwritable = False


class CacheFormatError(ValueError):
    """A file is not a complete warpstage cache entry (wrong magic, truncated, checksum)."""


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


def _blobs(entry: dict, names) -> tuple:
    """(the plain fields, [[name, offset, size(, 'text')]], the blobs' bytes) of the fields of
    ``entry`` named in ``names`` (None: all) that are stored raw: bytes, and long text."""
    plain, blobs, chunks, offset = {}, [], [], 0
    for name, value in entry.items():
        if names is not None and name not in names:
            continue
        if isinstance(value, (bytes, bytearray, memoryview)):
            data, kind = bytes(value), []
        elif isinstance(value, str) and len(value) >= _TEXT_BLOB:
            data, kind = value.encode(), ["text"]
        else:
            plain[name] = value
            continue
        blobs.append([name, offset, len(data)] + kind)
        chunks.append(data)
        offset += len(data)
    return plain, blobs, b"".join(chunks)


def _encode(entry: dict, deferred=()) -> bytes:
    later = [n for n in deferred if isinstance(entry.get(n), str) and
             len(entry[n]) >= _TEXT_BLOB]
    plain, blobs, data = _blobs(entry, None if not later else
                                [n for n in entry if n not in later])
    header = {"entry": plain, "blobs": blobs}
    if not later:
        body = json.dumps(header, sort_keys=True, separators=(",", ":")).encode() + data
        return MAGIC + _HEAD.pack(len(body) - len(data), len(data)) + body + \
            hashlib.sha256(body).digest()
    _, header["deferred"], tail = _blobs(entry, later)
    header["deferred_sha256"] = hashlib.sha256(tail).hexdigest()
    head = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    body = head + data
    return (MAGIC_DEFERRED + _HEAD_DEFERRED.pack(len(head), len(data), len(tail)) + body +
            hashlib.sha256(body).digest() + tail)


def _unpack(blobs: list, data, entry: dict) -> None:
    """Put the blobs ``blobs`` ([name, offset, size(, 'text')]) of ``data`` into ``entry``."""
    for name, offset, size, *kind in blobs:
        if not (isinstance(name, str) and type(offset) is int and type(size) is int and
                0 <= offset and 0 <= size and offset + size <= len(data)):
            raise ValueError(f"blob {name!r} at {offset}+{size} lies outside the "
                             f"{len(data)} bytes of data")
        if kind not in ([], ["text"]):
            raise ValueError(f"blob {name!r} has the unknown kind {kind!r}")
        blob = data[offset:offset + size]
        entry[name] = str(blob, "utf-8") if kind else bytes(blob)


def _decode(data: bytes, where: str, tail=None) -> dict:
    """The entry in ``data`` (a whole format-1 file, or a format-2 file up to its checksum).
    ``tail``: for format 2, the deferred blobs' bytes (checked and unpacked), or ``(file,
    offset, size)``: where they lie (they become :class:`Deferred` values)."""
    two = data[:len(MAGIC_DEFERRED)] == MAGIC_DEFERRED
    head = _HEAD_DEFERRED if two else _HEAD
    fixed = len(MAGIC) + head.size
    if len(data) < fixed + _DIGEST or not (two or data[:len(MAGIC)] == MAGIC):
        raise CacheFormatError(f"{where}: not a warpstage cache entry (expected the {MAGIC!r} "
                               f"header, got {data[:len(MAGIC)]!r} in {len(data)} bytes)")
    nhead, nblob = head.unpack_from(data, len(MAGIC))[:2]
    body = memoryview(data)[fixed:-_DIGEST]         # slices without copying
    if len(body) != nhead + nblob:
        raise CacheFormatError(f"{where}: truncated or padded entry (expected {nhead + nblob} "
                               f"bytes of header and data, got {len(body)})")
    if hashlib.sha256(body).digest() != data[-_DIGEST:]:
        raise CacheFormatError(f"{where}: checksum mismatch (the file is corrupt)")
    try:
        header = json.loads(str(body[:nhead], "utf-8"))
        entry = dict(header["entry"])
        _unpack(header["blobs"], body[nhead:], entry)
        if two:
            later = header["deferred"]
            if isinstance(tail, tuple):
                group = _DeferredBlobs(*tail, later, header["deferred_sha256"])
                for name, *_ in later:
                    entry[name] = Deferred(group, name)
            else:
                entry.update(_checked_tail(tail, later, header["deferred_sha256"], where))
    except (ValueError, KeyError, TypeError) as e:
        raise CacheFormatError(f"{where}: malformed header ({e})") from None
    return entry


def _checked_tail(tail: bytes, later: list, digest: str, where: str) -> dict:
    if not isinstance(digest, str) or hashlib.sha256(tail).hexdigest() != digest:
        raise CacheFormatError(f"{where}: checksum mismatch of the texts (the file is corrupt, "
                               "or was replaced since it was read)")
    out: dict = {}
    try:
        _unpack(later, memoryview(tail), out)
    except (ValueError, TypeError) as e:
        raise CacheFormatError(f"{where}: malformed header ({e})") from None
    return out


class Deferred:
    """A field of a disk-cache entry stored after the entry's checksum (``put(...,
    deferred=...)``) and read by ``get(..., deferred=True)`` as this placeholder: ``load()``
    reads the deferred blobs from the file (all of them, once), checks them against the
    checksum the entry's header holds, and returns the field's text. Raises OSError if the file
    is gone, CacheFormatError if it no longer holds those bytes (replaced by another entry for
    the same key, or damaged)."""

    __slots__ = ("_group", "name")

    def __init__(self, group: "_DeferredBlobs", name: str):
        self._group, self.name = group, name

    def load(self) -> str:
        return self._group.load()[self.name]

    def __repr__(self) -> str:
        return f"<Deferred {self.name} of {self._group.file}>"


class _DeferredBlobs:
    """The deferred blobs of one entry: where they start in ``file``, their table and checksum;
    read once."""

    def __init__(self, file: str, offset: int, size: int, blobs: list, digest: str):
        self.file, self.offset, self.size = file, offset, size
        self.blobs, self.digest = blobs, digest
        self._texts = None

    def load(self) -> dict:
        if self._texts is None:
            fd = os.open(self.file, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
            try:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    raise CacheFormatError(f"{self.file}: not a regular file")
                tail = os.pread(fd, self.size, self.offset)
            finally:
                os.close(fd)
            self._texts = _checked_tail(tail, self.blobs, self.digest, self.file)
        return self._texts


def write_entry(file: str, entry: dict, deferred=()) -> None:
    """Write ``entry`` to ``file`` atomically (temporary file in the same folder, then
    ``os.replace``). Raises OSError if the folder cannot be written, TypeError if a value is
    not plain data. ``deferred``: names of text fields stored after the checksum (format 2),
    read by ``read_entry(..., deferred=True)`` on first use only."""
    data = _encode(entry, deferred)
    folder = os.path.dirname(os.path.abspath(file))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=SUFFIX)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, file)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def read_entry(file: str, deferred: bool = False) -> dict:
    """The entry stored in ``file``. ``deferred``: the fields it stores after its checksum
    come as :class:`Deferred` values, not read now. Raises OSError if it cannot be read,
    CacheFormatError if it is not a complete entry."""
    fd = os.open(file, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))   # a FIFO must not block
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise CacheFormatError(f"{file}: not a regular file")
        if st.st_size > MAX_ENTRY_BYTES:
            raise CacheFormatError(f"{file}: {st.st_size} bytes, over the {MAX_ENTRY_BYTES}-byte "
                                   "bound of an entry")
        start = f.read(len(MAGIC_DEFERRED) + _HEAD_DEFERRED.size)
        if not start.startswith(MAGIC_DEFERRED) or len(start) < len(MAGIC) + _HEAD_DEFERRED.size:
            data = start + f.read(st.st_size + 1)   # not the bound: read(n) allocates n first
            if len(data) > MAX_ENTRY_BYTES:
                raise CacheFormatError(f"{file}: over the {MAX_ENTRY_BYTES}-byte bound of an "
                                       "entry")
            return _decode(data, file)
        nhead, nblob, ntail = _HEAD_DEFERRED.unpack_from(start, len(MAGIC_DEFERRED))
        end = len(start) + nhead + nblob + _DIGEST
        if end + ntail != st.st_size:
            raise CacheFormatError(f"{file}: truncated or padded entry (expected {end + ntail} "
                                   f"bytes, the file has {st.st_size})")
        data = start + f.read(end - len(start))
        if deferred:
            return _decode(data, file, (file, end, ntail))
        tail = f.read(ntail)
    return _decode(data, file, tail)


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
