"""The rewritten code of kernel functions, kept in the disk cache (frontend/rewrite.py's code
store): a fresh process that traces a kernel whose source, loaded bytecode, Python and warpstage
are unchanged reads the rewritten code object instead of parsing, rewriting and compiling the
function again (~80 ms CPU for the five functions of the FlashAttention kernel). The generated
call path of each kernel (jit/fast_call.compiled: its key begins "fast call ") is kept the same
way, so a fresh process does not compile its source again (15-38 ms for the wgmma FlashAttention
kernel on the CI machine).

An entry is a fact (``files.get_fact``, suffix ``.wsf``) under ``disk_key(("rewrite", fingerprint,
rewrite_key))`` holding one blob: ``marshal`` of the inner code object and the sites. Loading it
runs no code; the code runs when the kernel is traced, so the cache folder is trusted as a
``__pycache__`` folder is (its SHA-256 checksum only guards against corruption). ``ws.cache.clear()``
leaves these entries, as it leaves the other facts; they are keyed by content and never stale.
"""
from __future__ import annotations

from . import files
from .key_facts import fingerprint

__all__ = ["install", "get", "put"]


def _key(key: str):
    if files.path() is None:
        return None
    return files.disk_key(("rewrite", fingerprint(), key))


def get(key: str):
    """The stored rewrite under ``key`` (a rewrite_key), or None."""
    k = _key(key)
    fact = files.get_fact(k) if k is not None else None
    data = fact.get("code") if fact else None
    return data if isinstance(data, bytes) else None


def put(key: str, data: bytes) -> None:
    k = _key(key)
    if k is not None:
        files.put_fact(k, {"code": data})


def install() -> None:
    """Make frontend/rewrite.py keep its code objects here."""
    from ...frontend.rewrite_store import set_code_store
    set_code_store(get, put)
