"""The machine's part of the disk-cache key (persist.spec_key): warpstage's version and a digest
of its source files, LLVM's and llvmlite's versions, and the version line of the ptxas that would
be used ('driver-jit' without one).

A fresh process computes none of these from scratch when nothing changed: each is a *fact*
(``cache.get_fact``) keyed by the stamps (real path, mtime in ns, size) of what it describes
(warpstage's ``.py`` files, llvmlite's shared library and ``_version.py``, the ptxas binary) and
recomputed when a stamp changes, the test Python uses for its ``.pyc`` files. So a disk hit
neither loads libLLVM, nor runs ``ptxas --version``, nor reads warpstage's sources.
"""
from __future__ import annotations

import functools
import hashlib
import os
import threading

from ...options import CompileOptions
from . import files as cache

__all__ = ["fingerprint", "toolchain", "fact", "stamp"]


@functools.lru_cache(maxsize=None)
def fingerprint() -> str:
    """warpstage's version and a digest of its source files, so that editing the compiler (a
    source checkout) never reuses a cubin built by the old code. Computed once per process;
    a fresh process stats the files and reuses the digest stored for identical (path, mtime,
    size) stamps (``cache.get_fact``) instead of reading and hashing them again."""
    from ... import __version__
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    files = _source_files(root)

    def digest():
        h = hashlib.sha256()
        for rel, _ in files:
            h.update(rel.encode())
            with open(os.path.join(root, rel), "rb") as f:
                h.update(f.read())
        return f"{__version__}+{h.hexdigest()[:16]}"
    stamps = "\n".join(f"{rel}:{st}" for rel, st in files)
    return fact("sources", (__version__, root, hashlib.sha256(stamps.encode()).hexdigest()),
                digest)


def _source_files(root: str) -> list:
    """[(path relative to root, 'mtime_ns:size')] of every .py file under ``root``, sorted
    (``__pycache__`` skipped): one scandir per folder and one stat per file."""
    out, folders = [], [""]
    while folders:
        rel = folders.pop()
        with os.scandir(os.path.join(root, rel)) as entries:
            for e in entries:
                if e.is_dir(follow_symlinks=False):
                    if e.name != "__pycache__":
                        folders.append(f"{rel}{e.name}/")
                elif e.name.endswith(".py"):
                    st = e.stat()
                    out.append((rel + e.name, f"{st.st_mtime_ns}:{st.st_size}"))
    out.sort()
    return out


def toolchain(options: CompileOptions) -> tuple:
    """(LLVM's and llvmlite's versions, the version of the ptxas that would be used, or
    'driver-jit').

    Both are stored as facts (``cache.get_fact``) keyed by the stamps (path, mtime, size) of the
    binaries they describe, llvmlite's shared library and ptxas, so a fresh process neither
    loads libLLVM (tens of ms; a disk hit never needs it) nor runs ``ptxas --version``."""
    from ...backend.ptxas_tool import find_ptxas
    path = find_ptxas(options)
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
    import importlib.util

    def ask_llvm():
        from ...backend import llvm_version
        return llvm_version()
    spec = importlib.util.find_spec("llvmlite")         # finds it without importing it
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    binding = os.path.join(folders[0], "binding") if folders else ""
    try:
        libs = sorted(os.path.join(binding, n) for n in os.listdir(binding)
                      if n.startswith(("libllvmlite", "llvmlite")) and not n.endswith(".py"))
    except OSError:
        libs = []
    if not libs:
        return ask_llvm()
    return fact("llvm", stamp(libs + [os.path.join(folders[0], "_version.py")]), ask_llvm)


@functools.lru_cache(maxsize=None)
def _ptxas_version(path: str) -> str:
    def ask_ptxas():
        from ...backend.ptxas_tool import ptxas_version
        return ptxas_version(path)
    return fact("ptxas", stamp([path]), ask_ptxas)
