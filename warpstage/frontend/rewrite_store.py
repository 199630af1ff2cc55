"""Rewritten code kept between processes: frontend/rewrite.py's steps 1-4 (parse, passes,
``compile()``) cost ~10-30 ms per kernel-sized function in every fresh process, so with a store
installed (``set_code_store``; ``jit/cache/code_store.py`` keeps them in the disk cache) the
inner code object and the sites of each rewritten function are kept and read back.

The key (``rewrite_key``) is what the rewrite depends on besides warpstage's own code, which the
store adds (its fingerprint): the text of the function's source file, its file name, first line
and qualname, the loaded code object (its bytecode, names, constants and line table, nested
code included) and the Python version. Text and loaded code together keep issue 11's rule (the
source traced must be the source of the code that runs, docs/cache.md): an entry is written
only after ``check_source`` accepted that pair, and a file edited after import changes the key,
so the miss runs ``check_source`` again, which reports the edit.
"""
from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import linecache
import marshal
import sys
import types

from .regions import Site

__all__ = ["set_code_store", "rewrite_key", "key_for", "load", "keep"]

_STORE = None       # (get, put) of rewritten code by rewrite_key; None: always rebuilt


def set_code_store(get, put) -> None:
    """Keep rewritten code: ``get(key) -> bytes | None`` and ``put(key, bytes)``, ``key`` a
    64-hex-digit ``rewrite_key``. ``set_code_store(None, None)`` turns it off."""
    global _STORE
    _STORE = (get, put) if get is not None else None


def rewrite_key(fn) -> str:
    """SHA-256 (hex) of what the rewrite of ``fn`` depends on besides warpstage's own code (see
    the module docstring)."""
    code = fn.__code__
    linecache.checkcache(code.co_filename)          # the text now, not as first read
    lines = linecache.getlines(code.co_filename, fn.__globals__)
    loader = getattr(sys.modules.get(fn.__module__), "__loader__", None)
    h = hashlib.sha256()
    for part in (sys.version, importlib.util.MAGIC_NUMBER.hex(), code.co_filename,
                 str(code.co_firstlineno), fn.__qualname__, type(loader).__name__):
        h.update(part.encode() + b"\0")
    h.update(hashlib.sha256("".join(lines).encode()).digest())
    _digest_code(code, h)
    return h.hexdigest()


def _digest_code(code, h) -> None:
    """Feed what identifies ``code`` (its bytecode, names, flags, line table and constants,
    nested code included) to ``h``; unlike ``marshal.dumps``, the same in every process."""
    for part in (code.co_code, code.co_linetable, code.co_exceptiontable
                 if hasattr(code, "co_exceptiontable") else b""):
        h.update(len(part).to_bytes(8, "little") + part)
    h.update(repr((code.co_name, code.co_names, code.co_varnames, code.co_freevars,
                   code.co_cellvars, code.co_flags, code.co_argcount, code.co_posonlyargcount,
                   code.co_kwonlyargcount, code.co_firstlineno)).encode())
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            _digest_code(c, h)
        else:
            h.update(_const_text(c).encode() + b"\0")


def _const_text(c) -> str:
    if isinstance(c, frozenset):            # its order follows the (randomized) str hashes
        return "frozenset{" + ",".join(sorted(_const_text(x) for x in c)) + "}"
    if type(c) is tuple:
        return "(" + ",".join(_const_text(x) for x in c) + ")"
    return f"{type(c).__name__}:{c!r}"


def key_for(fn):
    """``rewrite_key(fn)`` where a store is installed, else None."""
    return None if _STORE is None else rewrite_key(fn)


def load(key):
    """(inner code, sites) stored under ``key``, or None (no key, a miss, a bad entry)."""
    if key is None or _STORE is None:
        return None
    data = _STORE[0](key)
    if data is None:
        return None
    try:
        fields, inner, sites = marshal.loads(data)
    except (EOFError, ValueError, TypeError):
        return None
    if fields != _SITE_FIELDS or not isinstance(inner, types.CodeType):
        return None
    return inner, tuple(Site(*s) for s in sites)


def keep(key, inner, sites) -> None:
    """Store a rewrite under ``key`` (a site field marshal cannot write: not kept)."""
    if key is None or _STORE is None:
        return
    try:
        data = marshal.dumps((_SITE_FIELDS, inner,
                              tuple(tuple(getattr(s, f) for f in _SITE_FIELDS) for s in sites)))
    except ValueError:
        return
    _STORE[1](key, data)


_SITE_FIELDS = tuple(f.name for f in dataclasses.fields(Site))
