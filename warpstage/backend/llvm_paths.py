"""Where llvmlite's files are, found without importing llvmlite or loading its library:
``library_path`` (``libllvmlite``), ``version_file`` (``_version.py``) and ``llvmlite_version``
(read from it as text). The disk-cache key stamps the first two (jit/cache/key_facts.py) in
every process, a disk hit included, which therefore imports this module and not
``backend/llvm_c.py`` (whose ctypes declarations cost ~1 ms CPU to import on the CI host).
Standard library only."""
from __future__ import annotations

import functools
import importlib.util
import os

__all__ = ["library_path", "version_file", "llvmlite_version"]


@functools.lru_cache(maxsize=None)
def _llvmlite_folder() -> str | None:
    spec = importlib.util.find_spec("llvmlite")          # finds, does not import
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    return folders[0] if folders else None


def version_file() -> str | None:
    """The path of llvmlite's ``_version.py`` (found, not imported), or None."""
    folder = _llvmlite_folder()
    return os.path.join(folder, "_version.py") if folder else None


@functools.lru_cache(maxsize=None)
def llvmlite_version() -> str | None:
    """llvmlite's version as its ``_version.py`` states it (``version_version = '0.50.0'``),
    read as text: neither llvmlite nor its library is loaded. None if not found."""
    try:
        with open(version_file() or "") as f:
            for line in f:
                if line.startswith("version_version"):
                    return line.split("=", 1)[1].strip().strip("'\"")
    except OSError:
        pass
    return None


@functools.lru_cache(maxsize=None)
def library_path() -> str | None:
    """The path of llvmlite's ``libllvmlite`` shared library, or None where it is not one file
    in ``llvmlite/binding`` (llvmlite then finds it itself)."""
    folder = _llvmlite_folder()
    binding = os.path.join(folder, "binding") if folder else ""
    try:
        libs = sorted(n for n in os.listdir(binding)
                      if n.startswith(("libllvmlite", "llvmlite")) and not n.endswith(".py"))
    except OSError:
        return None
    return os.path.join(binding, libs[0]) if len(libs) == 1 else None
