"""What a candidate's kernels need, from the compiler's own report, and the launch-limit checks
the autotuner applies before launching anything.

A candidate is one configuration; running it launches one or more kernels (a split-K GEMM
launches two). Each launch is recorded (warpstage/tune/capture.py) as a ``KernelResources``:
ptxas' report (registers per thread, static shared memory, spills), the dynamic shared memory
the launch passes, the block and grid, and the ``setmaxnreg`` counts in the PTX. A
``Resources`` holds the launches of one candidate and is what ``prune(config, resources)``
receives.

``launch_problems`` returns the reasons a launch cannot run on the target, the checks the
driver would make at ``cuLaunchKernel`` (CUDA C++ Programming Guide, "Technical Specifications
per Compute Capability": 1024 threads per CTA, 64 K 32-bit registers per SM, 227 KiB of shared
memory per CTA on sm_90 after the opt-in), so a candidate that would fail to launch is dropped
without launching.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import List, Optional, Tuple

__all__ = ["KernelResources", "Resources", "launch_problems", "of_launch", "SM_REGISTERS"]

SM_REGISTERS = 65536
"""32-bit registers per SM (and so at most per CTA) on sm_80 and sm_90."""

_SETMAXNREG = re.compile(r"setmaxnreg\.(inc|dec)\.sync\.aligned\.u32\s+(\d+)")


@dataclass(frozen=True)
class KernelResources:
    """One recorded launch. ``kernel``: the PTX entry; ``threads``: per CTA; ``grid``: CTAs
    (x, y, z); ``registers``: per thread at entry (ptxas; None without ptxas); ``static_smem``
    and ``dynamic_smem``: bytes per CTA (ptxas' ``.shared`` and what the launch passes);
    ``spill_stores`` / ``spill_loads``: bytes per thread; ``setmaxnreg``: the (action, count)
    pairs in the PTX, action 'inc' or 'dec'."""

    kernel: str
    threads: int
    grid: Tuple[int, int, int]
    registers: Optional[int]
    static_smem: int
    dynamic_smem: int
    spill_stores: int
    spill_loads: int
    setmaxnreg: Tuple[Tuple[str, int], ...] = ()

    @property
    def smem_bytes(self) -> int:
        """Shared memory per CTA in bytes (static + dynamic)."""
        return self.static_smem + self.dynamic_smem


@dataclass(frozen=True)
class Resources:
    """The launches of one candidate (in launch order) and their worst case: ``smem_bytes`` and
    ``registers`` the largest of any launch, ``spills`` the bytes of spill stores and loads
    summed over them."""

    launches: Tuple[KernelResources, ...]

    @property
    def smem_bytes(self) -> int:
        return max((k.smem_bytes for k in self.launches), default=0)

    @property
    def registers(self) -> Optional[int]:
        regs = [k.registers for k in self.launches if k.registers is not None]
        return max(regs) if regs else None

    @property
    def spills(self) -> int:
        return sum(k.spill_stores + k.spill_loads for k in self.launches)

    def __str__(self) -> str:
        return "; ".join(f"{k.kernel}: {k.threads} threads, {k.registers} regs, "
                         f"{k.smem_bytes} B smem, {k.spill_stores + k.spill_loads} B spills"
                         for k in self.launches) or "no launches"


def of_launch(ck, grid, block, smem: int) -> KernelResources:
    """The KernelResources of launching the CompiledKernel ``ck`` with ``grid`` x ``block`` and
    ``smem`` bytes of dynamic shared memory (runs LLVM and ptxas if they have not run)."""
    res = ck.resources
    threads = block[0] * block[1] * block[2]
    counts = tuple((a, int(n)) for a, n in _SETMAXNREG.findall(ck.ptx))
    return KernelResources(ck.name, threads, tuple(grid), res.registers if res else None,
                           res.shared_bytes if res else 0, smem,
                           res.spill_stores if res else 0, res.spill_loads if res else 0,
                           counts)


def launch_problems(resources: Resources, arch: str = "sm_90a",
                    max_smem: Optional[int] = None) -> List[str]:
    """Why the candidate's launches cannot run on ``arch`` (empty when they can). ``max_smem``:
    the device's shared memory per CTA in bytes (default: the target's)."""
    from ..core.target import target_for
    t = target_for(arch)
    limit = t.max_dynamic_smem if max_smem is None else max_smem
    out = []
    for k in resources.launches:
        if k.threads > t.max_threads_per_cta:
            out.append(f"{k.kernel}: {k.threads} threads per CTA, more than {arch}'s "
                       f"{t.max_threads_per_cta}")
        if k.smem_bytes > limit:
            out.append(f"{k.kernel}: {k.smem_bytes} bytes of shared memory per CTA "
                       f"({k.static_smem} static + {k.dynamic_smem} dynamic), more than the "
                       f"{limit} a CTA may use")
        if k.registers is not None and k.registers * k.threads > SM_REGISTERS:
            out.append(f"{k.kernel}: {k.registers} registers x {k.threads} threads = "
                       f"{k.registers * k.threads}, more than an SM's {SM_REGISTERS}")
    return out
