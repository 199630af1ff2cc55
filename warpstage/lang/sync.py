"""Named-barrier arrival, register reallocation between warpgroups, and memory fences
(re-exported by ``ws.arch``).

PTX ISA sources: "Parallel Synchronization and Communication Instructions" (bar.arrive,
membar/fence), "Miscellaneous Instructions" (setmaxnreg, sm_90a).
"""
from __future__ import annotations

from ..core.trace import builder
from .operands import dynamic_i32, operand_error, static_int
from .scalars import Scalar

__all__ = ["barrier_arrive", "setmaxnreg_increase", "setmaxnreg_decrease",
           "setmaxregister_increase", "setmaxregister_decrease", "fence_proxy_async",
           "fence_acq_rel", "fence_sc", "fence_mbarrier_init"]

_SCOPES = ("cta", "cluster", "gpu", "sys")


def _barrier_id(barrier_id, what: str):
    """A static id (an int in [0, 16)), or the ir.Value of a dynamic integer id. A dynamic id
    must be warp-uniform on the GPU (PTX: the operand is a register holding the same value in
    every thread of the warp); the simulator checks it."""
    if isinstance(barrier_id, Scalar):
        return dynamic_i32(barrier_id, f"{what}'s barrier id")
    return static_int(barrier_id, f"{what}'s barrier id", range(16), "an int in [0, 16) or a "
                      "warp-uniform dynamic integer", "named barriers are numbered 0..15; 0 is "
                      "the one ws.arch.sync_threads() uses")


def _thread_count(n, what: str) -> int:
    n = static_int(n, f"{what}'s thread count", expected="a static positive multiple of 32",
                   fix="count threads, in whole warps: e.g. 256 for 8 warps")
    if n <= 0 or n % 32 or n > 1024:
        raise operand_error(f"{what}'s thread count", n,
                            "a static positive multiple of 32, at most 1024",
                            "count threads, in whole warps: e.g. 256 for 8 warps")
    return n


def barrier_arrive(barrier_id, num_threads: int) -> None:
    """Arrive at named barrier ``barrier_id`` (0..15: a static int, or a dynamic warp-uniform
    integer such as one computed from the warpgroup index) without waiting: PTX
    ``bar.arrive id, count``. The barrier's phase completes when ``num_threads`` threads (static,
    a multiple of 32; required) have arrived with ``barrier_arrive`` or ``barrier_sync``; threads
    in ``barrier_sync`` wait for that, arriving ones do not. The producer side of a
    producer/consumer hand-off: producers ``barrier_arrive(1, 256)``, consumers
    ``barrier_sync(1, 256)``. The whole warp must execute it (``.aligned``)."""
    what = "ws.arch.barrier_arrive()"
    bar_id = _barrier_id(barrier_id, what)
    count = _thread_count(num_threads, what)
    builder(what).barrier_arrive(bar_id, count)


def _regs(n, what: str) -> int:
    expected = "a static multiple of 8 in [24, 256]"
    fix = ("pass a register count rounded to a multiple of 8, e.g. 40 for producer warpgroups "
           "and 232 for consumer warpgroups")
    n = static_int(n, f"{what}'s register count", expected=expected, fix=fix)
    if not 24 <= n <= 256 or n % 8:
        near = sorted({min(256, max(24, n // 8 * 8)), min(256, max(24, -(-n // 8) * 8))})
        raise operand_error(f"{what}'s register count", n, expected,
                            f"use {' or '.join(map(str, near))}; " + fix[0].lower() + fix[1:])
    return n


def _setmaxnreg(action: str, n, what: str) -> None:
    count = _regs(n, what)
    # the kernel's .minnctapersm 1, which ptxas needs to honour it, is set by
    # passes/kernel_attrs.py
    builder(what).setmaxnreg(action, count)


def setmaxnreg_increase(n: int) -> None:
    """Raise this warpgroup's per-thread register budget to ``n`` (static, multiple of 8 in
    [24, 256]): PTX ``setmaxnreg.inc.sync.aligned.u32 n`` (sm_90a). Every warp of the warpgroup
    must execute the same call: branch on the warpgroup index, one role per branch. Marks the
    kernel ``.minnctapersm 1`` (needed, with ``.maxntid``, for ptxas to honour it).
    Raises BindingTimeError for a dynamic ``n``, OperandError for a bad value."""
    _setmaxnreg("inc", n, "ws.arch.setmaxnreg_increase()")


def setmaxnreg_decrease(n: int) -> None:
    """Lower this warpgroup's per-thread register budget to ``n``: PTX
    ``setmaxnreg.dec.sync.aligned.u32 n``; releases registers for other warpgroups (typically the
    producer: 24-40). Same rules as ``setmaxnreg_increase``."""
    _setmaxnreg("dec", n, "ws.arch.setmaxnreg_decrease()")


setmaxregister_increase = setmaxnreg_increase
setmaxregister_decrease = setmaxnreg_decrease


def _fence(kind: str, what: str) -> None:
    builder(what).fence(kind)


def fence_proxy_async(space: str = "shared::cta") -> None:
    """Order this thread's generic-proxy memory accesses (ordinary loads/stores) before later
    async-proxy ones (TMA, wgmma operand reads, bulk copies): PTX ``fence.proxy.async.<space>``.
    ``space``: 'shared::cta' (default), 'global', or None/'' for all state spaces (plain
    ``fence.proxy.async``). Write smem with st.shared, then fence, then a barrier, then TMA-store
    or wgmma it."""
    what = "ws.arch.fence_proxy_async()"
    if space not in ("shared::cta", "global", None, ""):
        raise operand_error(f"{what}'s space", space, "'shared::cta', 'global' or None",
                            "pass space='shared::cta' for shared memory read by wgmma/TMA")
    _fence("proxy.async" + (f".{space}" if space else ""), what)


def _scope(scope, what: str) -> str:
    if scope not in _SCOPES:
        raise operand_error(f"{what}'s scope", scope, f"one of {', '.join(map(repr, _SCOPES))}",
                            "pass scope='cta' for the block, 'gpu' for the device")
    return scope


def fence_acq_rel(scope: str = "gpu") -> None:
    """A release-acquire memory fence at ``scope`` ('cta', 'cluster', 'gpu', 'sys'): PTX
    ``fence.acq_rel.<scope>``: orders this thread's earlier memory accesses before its later
    ones as seen by threads in ``scope``."""
    what = "ws.arch.fence_acq_rel()"
    _fence(f"acq_rel.{_scope(scope, what)}", what)


def fence_sc(scope: str = "gpu") -> None:
    """A sequentially consistent fence at ``scope``: PTX ``fence.sc.<scope>`` (CUDA
    ``__threadfence()`` is ``fence.sc.gpu``)."""
    what = "ws.arch.fence_sc()"
    _fence(f"sc.{_scope(scope, what)}", what)


def fence_mbarrier_init() -> None:
    """Make this thread's prior ``mbarrier.init``s visible to other threads (and the async proxy)
    before they use the mbarriers: PTX ``fence.mbarrier_init.release.cluster``. Call it after
    initializing, then a CTA barrier (``ws.arch.sync_threads()``)."""
    _fence("mbarrier_init.release.cluster", "ws.arch.fence_mbarrier_init()")
