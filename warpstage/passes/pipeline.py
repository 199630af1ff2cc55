"""The pass pipeline: its order lives here and nowhere else.

``run_passes`` verifies the traced module once, runs each pass of ``PIPELINE`` in order, and
verifies the result once (each pass promises valid IR in, valid IR out; ``verify_each=True``
checks that promise after every pass, for debugging a pass). The backend and the simulator
consume what comes out.
"""
from __future__ import annotations

from ..ir import Module, verify
from .addresses import split_address_constants
from .cse import common_subexpressions
from .dce import dead_code_elimination
from .kernel_attrs import kernel_attributes
from .legalize import legalize
from .licm import loop_invariant_code_motion

__all__ = ["run_passes", "PIPELINE", "LIGHT_PIPELINE", "pipeline_for"]

PIPELINE = (kernel_attributes, legalize, common_subexpressions, split_address_constants,
            dead_code_elimination)
"""The passes, in order: the kernel attributes the traced ops imply (the shared-memory total
reads ``smem.alloc``, which legalization removes), legalization of the non-primitive ops into
primitives, CSE of the pure ops that repeat (unrolled address arithmetic and constants, and
what legalization expanded), the split of unrolled addresses into shared bases plus constants
(after CSE, so equal index terms are one value), then DCE by traits (which also drops what
legalization and the address split left unused)."""

LIGHT_PIPELINE = PIPELINE[:-1] + (loop_invariant_code_motion, PIPELINE[-1])
"""The passes for ``CompileOptions.llvm_pipeline == 'light'``: PIPELINE plus loop-invariant code
motion (after the address split, which builds each shared base right before its first use,
inside the loop where that use is; before DCE). LLVM's O3 hoists loop invariants itself; the
light LLVM pipeline has no LICM, so the default pipeline's IR (and PTX) stays as it was."""


def pipeline_for(llvm_pipeline: str = "default") -> tuple:
    """The passes, in order, for the LLVM pipeline ``llvm_pipeline`` ('default' or 'light')."""
    return LIGHT_PIPELINE if llvm_pipeline == "light" else PIPELINE


def run_passes(module: Module, verify_each: bool = False,
               llvm_pipeline: str = "default") -> Module:
    """Verify, run each pass of ``pipeline_for(llvm_pipeline)`` in order, verify again; returns
    ``module`` (changed in place). Raises VerificationError naming the pass whose output broke
    an invariant."""
    verify(module)
    for p in pipeline_for(llvm_pipeline):
        p(module)
        if verify_each:
            _verify_after(module, p)
    if not verify_each:
        _verify_after(module, None)
    return module


def _verify_after(module: Module, p) -> None:
    from ..ir import VerificationError
    try:
        verify(module)
    except VerificationError as e:
        where = f"after pass {p.__name__}" if p is not None else "after the passes"
        raise VerificationError(f"{where}: {e}") from None
