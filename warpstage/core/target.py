"""The target description: what one GPU architecture offers, written once.

``target_for(arch)`` gives the frozen ``Target`` of a ptxas architecture name (``"sm_90a"``, the
default). The frontend's checks (``ws.smem.allocate``'s shared-memory limit), the simulator (warp
size, threads per CTA) and the backend (which ops the arch has, checked before LLVM sees the IR)
read it instead of writing the numbers themselves.

Sources: CUDA C++ Programming Guide, "Compute Capabilities" (Table "Technical Specifications per
Compute Capability": threads per block 1024, block dimensions 1024 x 1024 x 64, grid 2^31 - 1 x
65535 x 65535, warp size 32, shared memory per block 163 KiB on 8.0, 99 KiB on 8.6/8.9, 227 KiB
on 9.0; thread block clusters of at most 8 CTAs portably on 9.0); PTX ISA 8.x, the "Target ISA
notes" of each instruction (``sm_90a`` for wgmma and setmaxnreg; sm_90 for elect.sync, TMA
(cp.async.bulk), stmatrix, mbarrier try_wait and expect_tx; sm_80 for mma.sync, ldmatrix, cp.async).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

__all__ = ["Target", "TARGETS", "target_for", "check_arch", "closest_arch"]


@dataclass(frozen=True)
class Target:
    """One architecture. ``sm``: the compute capability x 10 (90); ``arch_specific``: the ``a``
    variant (sm_90a: the features that only this architecture has); ``ptx_isa``: the PTX ISA
    version its features need (LLVM's ``+ptxNN`` feature); limits in threads, CTAs and bytes."""

    arch: str
    sm: int
    arch_specific: bool
    ptx_isa: str
    warp_size: int = 32
    max_threads_per_cta: int = 1024
    max_block: tuple = (1024, 1024, 64)
    max_grid: tuple = (2 ** 31 - 1, 65535, 65535)
    max_dynamic_smem: int = 48 * 1024
    """Dynamic shared memory per CTA in bytes, after the opt-in (cuFuncSetAttribute)."""
    max_cluster_ctas: int = 0
    """CTAs per thread block cluster (portable limit); 0: no clusters."""

    def has(self, requirement: str) -> bool:
        """Whether this target meets ``requirement``: '' (every target), 'sm_NN' (compute
        capability NN or newer) or 'sm_NNa' (exactly the arch-specific NN)."""
        if not requirement:
            return True
        need = int(requirement[3:].rstrip("a"))
        if requirement.endswith("a"):
            return self.arch_specific and self.sm == need
        return self.sm >= need

    def __str__(self) -> str:
        return self.arch


TARGETS = {t.arch: t for t in (
    Target("sm_80", 80, False, "+ptx70", max_dynamic_smem=163 * 1024),
    Target("sm_86", 86, False, "+ptx71", max_dynamic_smem=99 * 1024),
    Target("sm_89", 89, False, "+ptx78", max_dynamic_smem=99 * 1024),
    Target("sm_90", 90, False, "+ptx78", max_dynamic_smem=227 * 1024, max_cluster_ctas=8),
    Target("sm_90a", 90, True, "+ptx80", max_dynamic_smem=227 * 1024, max_cluster_ctas=8),
)}
"""The architectures the backend can target, by ptxas name."""


def target_for(arch: str) -> Target:
    """The Target of ``arch``; ValueError naming the known architectures otherwise."""
    t = TARGETS.get(arch)
    if t is None:
        raise ValueError(f"unknown GPU architecture {arch!r}: the backend targets "
                         f"{', '.join(TARGETS)}. Fix: pass CompileOptions(arch=...) with one of "
                         "those (sm_90a for Hopper's wgmma and setmaxnreg)")
    return t


_NAMES = {"ampere": "sm_80", "a100": "sm_80", "ada": "sm_89", "lovelace": "sm_89",
          "hopper": "sm_90a", "h100": "sm_90a", "h200": "sm_90a", "h800": "sm_90a"}
"""Names a user may try for an architecture (its marketing or GPU name) -> the ptxas name."""


def closest_arch(value) -> Optional[str]:
    """The ptxas name a user probably meant by ``value`` (``"sm90"``, ``90``, ``"compute_90a"``,
    ``"hopper"``, ``"SM_90A"``), or None: compute capability digits with an optional ``a``
    (sm_90 with its ``a`` when the default, sm_90a, is that architecture), or a GPU's name."""
    if isinstance(value, bool):
        return None
    text = str(value).strip().lower().replace("-", "_")
    if text in _NAMES:
        return _NAMES[text]
    for prefix in ("compute_", "sm_", "sm", "compute"):
        if text.startswith(prefix):
            text = text[len(prefix):]
            break
    text = text.replace(".", "").replace("_", "")
    if text in ("9", "90"):
        return "sm_90a"          # Hopper: the default, with wgmma and setmaxnreg
    name = f"sm_{text}"
    return name if name in TARGETS else None


def check_arch(value, what: str = "arch") -> str:
    """``value`` if it is a ptxas architecture name the backend targets, else an OperandError
    (a ValueError) saying what ``what`` (the option, as the user sets it) accepts, what it got
    and the closest name."""
    if isinstance(value, str) and value in TARGETS:
        return value
    from ..errors import OperandError
    near = closest_arch(value)
    hint = f" (did you mean {near!r}?)" if near else ""
    raise OperandError(
        f"{what}: expected a ptxas architecture name, one of {', '.join(map(repr, TARGETS))}; "
        f"got {type(value).__name__} {value!r}{hint}.\n"
        f"Fix: arch={near or 'sm_90a'!r}" + ("" if near else " (Hopper, with wgmma and "
                                               "setmaxnreg; 'sm_80' for Ampere)") + ".")
