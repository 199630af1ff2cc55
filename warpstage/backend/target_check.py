"""Which ops the chosen target has: a table of op -> the first arch and PTX version that have it,
consulted before lowering, so a kernel that uses an op its ``arch`` lacks (``setmaxnreg`` or
``elect.sync`` with ``arch="sm_80"``) is a Python error naming the op, the user's line and the
arch — LLVM's NVPTX backend would hit a fatal error instead, which aborts the whole interpreter.

Sources: PTX ISA 8.x, each instruction's "Target ISA notes" / "PTX ISA notes". An op marked
``arch_specific`` needs an ``a`` target (``sm_90a``): those features are not forward-compatible.
This is one small table so it can move into the target description (DESIGN.md §3, ``core/``).
"""
from __future__ import annotations

import re
from typing import NamedTuple, Optional

from ..errors import UnsupportedError
from ..ir import core

__all__ = ["Requirement", "OP_REQUIREMENTS", "check_target", "parse_arch"]


class Requirement(NamedTuple):
    sm: int                 # the first SM version (90 = sm_90) with the instruction
    ptx: int                # the first PTX ISA version, times 10 (80 = PTX 8.0)
    arch_specific: bool     # needs the sm_XXa target
    instruction: str        # the PTX spelling, for the message


OP_REQUIREMENTS = {
    "nvvm.setmaxnreg": Requirement(90, 80, True, "setmaxnreg"),
    "nvvm.elect": Requirement(90, 80, False, "elect.sync"),
    "wgmma.fence": Requirement(90, 80, True, "wgmma.fence"),
    "wgmma.commit_group": Requirement(90, 80, True, "wgmma.commit_group"),
    "wgmma.wait_group": Requirement(90, 80, True, "wgmma.wait_group"),
    "wgmma.mma_async": Requirement(90, 80, True, "wgmma.mma_async"),
    "tma.load": Requirement(90, 80, False, "cp.async.bulk.tensor"),
    "tma.store": Requirement(90, 80, False, "cp.async.bulk.tensor"),
    "tma.bulk_copy": Requirement(90, 80, False, "cp.async.bulk"),
    "tma.commit_group": Requirement(90, 80, False, "cp.async.bulk.commit_group"),
    "tma.wait_group": Requirement(90, 80, False, "cp.async.bulk.wait_group"),
    "tma.prefetch_descriptor": Requirement(90, 80, False, "prefetch.tensormap"),
    "mbarrier.arrive_expect_tx": Requirement(90, 80, False, "mbarrier.arrive.expect_tx"),
    "mbarrier.expect_tx": Requirement(90, 80, False, "mbarrier.expect_tx"),
    "mbarrier.try_wait_parity": Requirement(90, 78, False, "mbarrier.try_wait.parity"),
    "mbarrier.wait_parity": Requirement(90, 78, False, "mbarrier.try_wait.parity"),
    "mbarrier.init": Requirement(80, 70, False, "mbarrier.init"),
    "mbarrier.arrive": Requirement(80, 70, False, "mbarrier.arrive"),
    "mbarrier.inval": Requirement(80, 70, False, "mbarrier.inval"),
    "cp_async.copy": Requirement(80, 70, False, "cp.async"),
    "cp_async.commit_group": Requirement(80, 70, False, "cp.async.commit_group"),
    "cp_async.wait_group": Requirement(80, 70, False, "cp.async.wait_group"),
    "cp_async.wait_all": Requirement(80, 70, False, "cp.async.wait_all"),
    "cp_async.mbarrier_arrive": Requirement(80, 70, False, "cp.async.mbarrier.arrive"),
    "mma.sync": Requirement(80, 70, False, "mma.sync (m16n8k16)"),
    "mma.ldmatrix": Requirement(75, 65, False, "ldmatrix"),
    "mma.stmatrix": Requirement(90, 78, False, "stmatrix"),
}
_FENCE_SM90 = ("proxy.async", "mbarrier_init")     # fence.proxy.async, fence.mbarrier_init
_ARCH = re.compile(r"^sm_(\d+)(a?)$")
_PTX = re.compile(r"^\+ptx(\d+)$")


def parse_arch(arch: str):
    """``"sm_90a"`` -> (90, True). Raises UnsupportedError for another spelling."""
    m = _ARCH.match(arch or "")
    if m is None:
        raise UnsupportedError(f"arch={arch!r} is not an NVIDIA target name.\nFix: pass e.g. "
                               "arch='sm_90a' (Hopper with its arch-specific features) or 'sm_80'.")
    return int(m.group(1)), bool(m.group(2))


def _requirement(op) -> Optional[Requirement]:
    req = OP_REQUIREMENTS.get(op.name)
    if req is None and op.name == "nvvm.fence" and str(op.attrs.get("kind", "")).startswith(
            _FENCE_SM90):
        req = Requirement(90, 80, False, f"fence.{op.attrs.get('kind')}")
    return req


def check_target(module: core.Module, arch: str, ptx_feature: str) -> None:
    """Raise UnsupportedError for the first op of ``module`` that ``arch`` / ``ptx_feature``
    (``"+ptx80"``) lacks, naming the op, the user's line and the targets that have it."""
    sm, specific = parse_arch(arch)
    m = _PTX.match(ptx_feature or "")
    ptx = int(m.group(1)) if m else None
    for fn in module.functions:
        for op in fn.walk():
            req = _requirement(op)
            if req is None:
                continue
            why = None
            if sm < req.sm:
                why = f"it needs sm_{req.sm}{'a' if req.arch_specific else ''} or newer"
            elif req.arch_specific and not (specific and sm == req.sm):
                why = (f"it is an arch-specific feature of sm_{req.sm}a (not forward-compatible: "
                       f"only the 'a' target has it)")
            elif ptx is not None and ptx < req.ptx:
                why = f"it needs PTX ISA {req.ptx // 10}.{req.ptx % 10} (ptx_version='+ptx{req.ptx}')"
            if why is not None:
                loc = getattr(op, "loc", None)
                where = f" (at {loc})" if loc is not None else ""
                raise UnsupportedError(
                    f"{op.name} ({req.instruction}) is not available on arch={arch!r}{where}: "
                    f"{why}.\nFix: compile for arch='sm_{req.sm}{'a' if req.arch_specific else ''}"
                    "' (ws.kernel(arch=...) / CompileOptions), or avoid this operation on "
                    "this target.")
