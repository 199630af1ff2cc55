"""The compile stages of one specialization as values: ``Traced`` -> ``Lowered`` -> ``Compiled``,
and the ``Executable`` loaded from the last (kept apart: an artifact can be stored, sent to
another process or written with ``ws.save``; an executable belongs to one CUDA context).

Each is a frozen dataclass that prints as its text (``str(traced)`` is the IR, ``str(lowered)``
the PTX, ``str(compiled)`` ptxas' report). ``jit/pipeline.py`` makes them, in the order its
``STAGES`` lists; ``CompiledKernel`` (``jit/compiled.py``) holds them and builds each on first
use. The models are JAX's ``jax.stages`` (Traced -> Lowered -> Compiled, each inspectable) and
Triton's ``add_stages`` (one ordered table of stage functions); the code is this project's own.
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Any, Optional

__all__ = ["Traced", "Lowered", "Compiled", "Executable"]


@dataclasses.dataclass(frozen=True)
class Traced:
    """The kernel's IR after the pass pipeline (``passes/pipeline.py``). ``module``: the
    ``ir.Module`` (None for a specialization read from the disk cache or ``ws.load``, whose IR is
    ``stored_text``: the text, or a function that returns it, called on first use: a disk hit
    reads it from the entry only then); ``abi``: ((slot name, ir type), ...) of the entry's
    parameters; ``block``: threads per CTA (x, y, z); ``dynamic_smem``: bytes of dynamic shared
    memory that the kernel's ``ws.smem.allocate`` calls need."""

    name: str
    module: Any
    abi: tuple
    block: tuple
    dynamic_smem: int = 0
    stored_text: Any = None

    @functools.cached_property
    def text(self) -> str:
        """The IR as text (``ir.print_module``, printed once: the module does not change after
        the passes; the stored text when there is no module). A cold compile that will be
        stored prints it in a thread while LLVM runs (``jit/pipeline.py`` ``beside``)."""
        if self.module is None:
            stored = self.stored_text
            return stored() if callable(stored) else stored
        from .. import ir
        return ir.print_module(self.module)

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"<Traced {self.name} block={self.block} slots={len(self.abi)}>"


@dataclasses.dataclass(frozen=True)
class Lowered:
    """The backend's output for one ``Traced``: ``llvm_ir`` (LLVM IR text for
    nvptx64-nvidia-cuda, llvmlite) and ``ptx`` (PTX assembly from LLVM's NVPTX backend for the
    options' arch)."""

    name: str
    llvm_ir: str
    ptx: str

    def __str__(self) -> str:
        return self.ptx

    def __repr__(self) -> str:
        return f"<Lowered {self.name} ptx={len(self.ptx)} chars>"


@dataclasses.dataclass(frozen=True)
class Compiled:
    """ptxas' output for one ``Lowered`` (whole program, ``-arch`` of the options): ``result``
    is a ``backend.ptxas.CubinResult`` (cubin bytes, log, per-entry resources, warnings,
    seconds), or None when no ptxas is installed (the driver then compiles ``ptx`` at load)."""

    name: str
    ptx: str
    result: Any = None

    @property
    def cubin(self) -> Optional[bytes]:
        return self.result.cubin if self.result else None

    def __str__(self) -> str:
        if not self.result:
            return f"{self.name}: no ptxas; the driver compiles the PTX when it is loaded"
        res = self.result.resources.get(self.name)
        return f"{self.name}: {res}" if res else self.result.log

    def __repr__(self) -> str:
        what = f"cubin={len(self.result.cubin)} bytes" if self.result else "PTX only"
        return f"<Compiled {self.name} {what}>"


class Executable(tuple):
    """A ``Compiled`` loaded into the current CUDA context: (module handle, function handle,
    ``runtime.launcher.Launcher``). Not an artifact: it is never stored, and it is valid in the
    context that loaded it only."""

    __slots__ = ()

    def __new__(cls, module, function, launcher):
        return super().__new__(cls, (module, function, launcher))

    module = property(lambda self: self[0])
    function = property(lambda self: self[1])
    launcher = property(lambda self: self[2])

    def __repr__(self) -> str:
        return f"<Executable function={self[1]!r}>"
