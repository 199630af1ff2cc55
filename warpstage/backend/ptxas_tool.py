"""Finding NVIDIA's CUDA tools and describing ptxas' results, without running the assembler.

``find_ptxas`` searches, in order: ``options.ptxas`` (set from WARPSTAGE_PTXAS by options.py),
the ``nvidia-cuda-nvcc`` wheel (``nvidia/cu13/bin/ptxas``; ``nvidia/cuda_nvcc/bin/ptxas`` for
CUDA 12 wheels), ``$CUDA_HOME/bin``, ``$CUDA_PATH/bin``, then ``PATH``. ``Resources`` and
``CubinResult`` are what ``ptxas.assemble`` returns.

Kept apart from ``ptxas.py`` (the assembler and its log parsing) so that a disk-cache hit, which
needs ptxas' path for the key and these result types for the entry, imports nothing else:
standard library only.
"""
from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import subprocess
from typing import Optional

from ..errors import CompilationError, PtxasError
from ..options import CompileOptions

__all__ = ["find_cuda_tool", "find_ptxas", "ptxas_version", "Resources", "CubinResult"]


class Resources:
    """Per-function resource usage reported by ``ptxas -v``.

    ``registers`` per thread; ``shared_bytes`` static shared memory per CTA (dynamic smem is a
    launch parameter and not included); ``spill_stores``/``spill_loads``/``stack_frame`` bytes
    per thread; ``barriers`` named barriers used; ``const_bytes`` bytes of constant bank 0
    (kernel parameters and constants). Immutable, compared and hashed by its fields.

    A plain class rather than a dataclass: a disk-cache hit imports this module, and building a
    dataclass (its generated methods go through ``exec``) cost ~2 ms of the hit's ~10 (CPU host).
    """

    FIELDS = ("registers", "shared_bytes", "spill_stores", "spill_loads", "stack_frame",
              "barriers", "const_bytes")
    __slots__ = FIELDS

    def __init__(self, registers: int = 0, shared_bytes: int = 0, spill_stores: int = 0,
                 spill_loads: int = 0, stack_frame: int = 0, barriers: int = 0,
                 const_bytes: int = 0):
        for name, value in zip(self.FIELDS, (registers, shared_bytes, spill_stores, spill_loads,
                                             stack_frame, barriers, const_bytes)):
            object.__setattr__(self, name, value)

    def __setattr__(self, name, value):
        raise AttributeError(f"Resources is immutable; cannot assign {name!r}")

    def as_dict(self) -> dict:
        return {name: getattr(self, name) for name in self.FIELDS}

    def _values(self) -> tuple:
        return tuple(getattr(self, name) for name in self.FIELDS)

    def __eq__(self, other):
        return self._values() == other._values() if type(other) is Resources else NotImplemented

    def __hash__(self):
        return hash(self._values())

    def __reduce__(self):                   # pickle and copy through __init__ (immutable)
        return Resources, self._values()

    def __repr__(self) -> str:
        return "Resources(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in self.FIELDS) + ")"


class CubinResult:
    """A cubin and what ptxas said: ``resources`` per entry name, ``warnings`` (each a line:
    ptxas warnings and numbered diagnostics such as C7508, "setmaxnreg ignored"), the full
    ``log``, and the wall ``seconds`` taken. (A plain class for the reason ``Resources`` is.)"""

    __slots__ = ("cubin", "log", "resources", "warnings", "seconds")

    def __init__(self, cubin: bytes, log: str, resources: dict | None = None,
                 warnings: list | None = None, seconds: float = 0.0):
        self.cubin, self.log, self.seconds = cubin, log, seconds
        self.resources = {} if resources is None else resources
        self.warnings = [] if warnings is None else warnings

    def __repr__(self) -> str:
        return (f"CubinResult({len(self.cubin)}-byte cubin, resources={self.resources!r}, "
                f"warnings={self.warnings!r}, seconds={self.seconds!r})")


def _executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


@functools.lru_cache(maxsize=None)
def find_cuda_tool(name: str) -> Optional[str]:
    """The first executable ``name`` (ptxas, nvdisasm, cuobjdump) in the NVIDIA wheels
    (``nvidia/cu13/bin``, ``nvidia/cuda_nvcc/bin``), CUDA_HOME, CUDA_PATH, PATH order (cached per
    process), or None."""
    candidates = []
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):          # a broken or shadowing 'nvidia' module
        spec = None
    for root in (spec.submodule_search_locations or []) if spec else []:
        candidates += [os.path.join(root, "cu13", "bin", name),
                       os.path.join(root, "cuda_nvcc", "bin", name)]
    # The toolkit's own variables; reading them here (not in options.py) keeps the search in one
    # place, and they name an installation rather than configure warpstage.
    for var in ("CUDA_HOME", "CUDA_PATH"):
        home = os.environ.get(var)
        if home:
            candidates.append(os.path.join(home, "bin", name))
    for c in candidates:
        if _executable(c):
            return c
    return shutil.which(name)


def _search_ptxas() -> Optional[str]:
    return find_cuda_tool("ptxas")


def find_ptxas(options: CompileOptions) -> Optional[str]:
    """Path of the ptxas to use, or None if there is none.

    Raises CompilationError if ``options.ptxas`` is set but names no executable (a typo in
    WARPSTAGE_PTXAS should not silently fall back to another ptxas).
    """
    if options.ptxas:
        found = options.ptxas if _executable(options.ptxas) else shutil.which(options.ptxas)
        if found is None:
            raise CompilationError(
                f"ptxas not found at {options.ptxas!r} (CompileOptions.ptxas / WARPSTAGE_PTXAS); "
                "expected an executable ptxas. Fix the path, or unset it to search the "
                "nvidia-cuda-nvcc wheel, CUDA_HOME and PATH")
        return found
    return _search_ptxas()


@functools.lru_cache(maxsize=None)
def ptxas_version(path: str) -> str:
    """ptxas's version line, e.g. 'Cuda compilation tools, release 13.0, V13.0.88'."""
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        raise PtxasError(f"could not run {path} --version: {e}", str(e)) from e
    for line in out.stdout.splitlines():
        if "release" in line:
            return line.strip()
    return out.stdout.strip()
