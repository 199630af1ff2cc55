"""The file format of a disk-cache entry (``.wsc``), a fact (``.wsf``) and a ``ws.save`` file:
a dict of plain data (JSON: str, int, float, bool, None, lists, dicts) whose top-level ``bytes``
values (the cubin) are stored raw, and so are its long ``str`` values (IR, LLVM IR and PTX text,
UTF-8), which JSON would escape and a reader would unescape:

    b"WSCACHE1" | header length (u64 LE) | blob length (u64 LE) | header (UTF-8 JSON)
                | blobs (raw bytes) | SHA-256 of header + blobs (32 bytes)

An entry written with ``deferred`` fields (``write_entry(file, entry, deferred=...)``: a kernel's
IR and LLVM IR texts, which a disk hit never reads) keeps those after the checksum, with a
checksum of their own in the header, so that a reader reads and checks only the rest (format 2):

    b"WSCACHE2" | header length | blob length | deferred length (u64 LE each) | header
                | blobs | SHA-256 of header + blobs | deferred blobs

``read_entry(file, deferred=True)`` gives those fields as :class:`Deferred` values, read and
checked on first use (``Deferred.load``); every other reader gets them as text, checked at
once. Nothing is pickled, so reading an entry never runs code. ``write_entry`` writes a
temporary file beside the target and renames it over it (atomic). Standard library only.
"""
from __future__ import annotations

import hashlib
import json
import os
import stat
import struct
import tempfile

__all__ = ["read_entry", "write_entry", "Deferred", "CacheFormatError", "MAGIC",
           "MAGIC_DEFERRED", "SUFFIX", "MAX_ENTRY_BYTES"]

MAGIC = b"WSCACHE1"
MAGIC_DEFERRED = b"WSCACHE2"    # with blobs after the checksum, checked when first read
SUFFIX = ".wsc"
_HEAD = struct.Struct("<QQ")
_HEAD_DEFERRED = struct.Struct("<QQQ")
_DIGEST = 32
MAX_ENTRY_BYTES = 256 << 20     # no entry is larger (a cubin is a few MB at most)
_TEXT_BLOB = 1024               # str values at least this long are stored raw, as UTF-8


class CacheFormatError(ValueError):
    """A file is not a complete warpstage cache entry (wrong magic, truncated, checksum)."""


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
    except CacheFormatError:        # the texts' own checksum: its message as it is
        raise
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
