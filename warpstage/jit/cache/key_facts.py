"""The machine's part of the disk-cache key (persist.spec_key): warpstage's version and a digest
of its source files, LLVM's and llvmlite's versions, and the version line of the ptxas that would
be used ('driver-jit' without one).

A fresh process computes none of these from scratch when nothing changed: each is a *fact*
(``cache.get_fact``) keyed by the stamps (real path, mtime in ns, size) of what it describes
(warpstage's ``.py`` files, llvmlite's shared library and ``_version.py``, the ptxas binary) and
recomputed when a stamp changes, the test Python uses for its ``.pyc`` files. So a disk hit
neither loads libLLVM, nor runs ``ptxas --version``, nor reads warpstage's sources.

``machine`` reads the three as one fact keyed by all their stamps together (one file read, no
thread), so a disk hit pays the stats and one small read; the per-part facts below it are what
a changed stamp recomputes.
"""
from __future__ import annotations

import functools
import hashlib
import os
import threading

from ...options import CompileOptions
from . import files as cache
from . import source_stamps

__all__ = ["fingerprint", "toolchain", "machine", "fact", "stamp"]

_known: dict = {}
"""Per process: "sources" -> what ``fingerprint()`` returns, once computed or read."""


def machine(options: CompileOptions) -> tuple:
    """``(fingerprint(), toolchain(options))`` from one stored fact keyed by every stamp the
    two depend on (warpstage's sources, llvmlite's library and version file, the ptxas binary
    that ``options`` picks): any changed stamp is another key, whose miss computes the parts
    through their own facts and stores the whole. Cached per process and ptxas path."""
    from ...backend.ptxas_tool import find_ptxas
    return _machine(find_ptxas(options))


@functools.lru_cache(maxsize=None)
def _machine(ptxas: str | None) -> tuple:
    from ... import __version__
    llvm = _llvm_stamps()
    if llvm is None:                    # nothing to key LLVM's version by: asked each process
        return fingerprint(), _toolchain(ptxas)
    tools = llvm + (stamp([ptxas]) if ptxas else ())
    key = cache.disk_key(("machine", __version__, _source_stamps(), tools))
    stored = cache.get_fact(key)
    parts = ("sources", "llvm", "ptxas")
    if stored is not None and all(isinstance(stored.get(p), str) for p in parts):
        _known.setdefault("sources", stored["sources"])
        return stored["sources"], (stored["llvm"], stored["ptxas"])
    found = (fingerprint(),) + _toolchain(ptxas)
    cache.put_fact(key, dict(zip(parts, found)))
    return found[0], found[1:]


def fingerprint() -> str:
    """warpstage's version and a digest of its source files, so that editing the compiler (a
    source checkout) never reuses a cubin built by the old code. Computed once per process;
    a fresh process stats the files and reuses the digest stored for identical (path, mtime,
    size) stamps (``cache.get_fact``) instead of reading and hashing them again."""
    known = _known.get("sources")
    if known is not None:
        return known
    from ... import __version__
    root = _ROOT
    files = _source_scan()[0]

    def digest():
        h = hashlib.sha256()
        for rel, _ in files:
            h.update(rel.encode())
            with open(os.path.join(root, rel), "rb") as f:
                h.update(f.read())
        return f"{__version__}+{h.hexdigest()[:16]}"
    _known["sources"] = fact("sources", (__version__,) + _source_stamps(), digest)
    return _known["sources"]


_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _source_stamps() -> tuple:
    """(warpstage's folder, SHA-256 of its .py files' stamps): what the source digest is keyed
    by."""
    return _ROOT, _source_scan()[1]


@functools.lru_cache(maxsize=None)
def _source_scan() -> tuple:
    """(the .py files of warpstage's folder with their stamps, SHA-256 of those stamps): one
    scan per process, so the digest hashes the very files whose stamps key it. For the
    package's own folder, the scan that ``import warpstage`` started (source_stamps.py)."""
    if _ROOT == source_stamps.ROOT:
        return source_stamps.scan()
    return source_stamps.scan_folder(_ROOT)


def toolchain(options: CompileOptions) -> tuple:
    """(LLVM's and llvmlite's versions, the version of the ptxas that would be used, or
    'driver-jit').

    Both are stored as facts (``cache.get_fact``) keyed by the stamps (path, mtime, size) of the
    binaries they describe, llvmlite's shared library and ptxas, so a fresh process neither
    loads libLLVM (tens of ms; a disk hit never needs it) nor runs ``ptxas --version``."""
    from ...backend.ptxas_tool import find_ptxas
    return _toolchain(find_ptxas(options))


def _toolchain(path: str | None) -> tuple:
    if path is None:
        return _llvm_version(), "driver-jit"
    ptxas = None
    if _llvm_version.cache_info().currsize == 0:
        # the first key of the process: where the facts are not stored yet (an empty cache
        # folder), ``ptxas --version`` then runs while libLLVM loads instead of after it
        ptxas = threading.Thread(target=_quietly, args=(_ptxas_version, path), daemon=True)
        ptxas.start()
    llvm = _llvm_version()
    if ptxas is not None:
        ptxas.join()
    return llvm, _ptxas_version(path)          # cached by the thread; its error raises here


def _quietly(fn, *args) -> None:
    try:
        fn(*args)
    except Exception:       # raised again by the caller's own call, in the caller's thread
        pass


def stamp(paths) -> tuple:
    """((real path, mtime in ns, size), ...) of ``paths``; raises OSError for a missing one."""
    out = []
    for p in paths:
        st = os.stat(p)
        out.append((os.path.realpath(p), st.st_mtime_ns, st.st_size))
    return tuple(out)


def fact(what: str, stamps: tuple, compute) -> str:
    """The fact ``what`` stored for ``stamps`` (from ``stamp``), else ``compute()``, stored."""
    key = cache.disk_key((what, stamps))
    stored = cache.get_fact(key)
    if stored is not None and isinstance(stored.get(what), str):
        return stored[what]
    value = compute()
    cache.put_fact(key, {what: value})
    return value


@functools.lru_cache(maxsize=None)
def _llvm_version() -> str:
    def ask_llvm():
        from ...backend import llvm_version
        return llvm_version()
    stamps = _llvm_stamps()
    return ask_llvm() if stamps is None else fact("llvm", stamps, ask_llvm)


@functools.lru_cache(maxsize=None)
def _llvm_stamps():
    """The stamps of llvmlite's shared library and ``_version.py`` (found without loading the
    library: backend/llvm_paths.py), or None where they cannot be found."""
    from ...backend import llvm_paths
    lib, version_file = llvm_paths.library_path(), llvm_paths.version_file()
    if lib is None or version_file is None:
        return None
    try:
        return stamp([lib, version_file])
    except OSError:
        return None


@functools.lru_cache(maxsize=None)
def _ptxas_version(path: str) -> str:
    def ask_ptxas():
        from ...backend.ptxas_tool import ptxas_version
        return ptxas_version(path)
    return fact("ptxas", stamp([path]), ask_ptxas)
