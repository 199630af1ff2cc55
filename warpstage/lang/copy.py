"""Asynchronous global -> shared copies: cp.async (``ws.copy``; PTX ISA "Data Movement and
Conversion Instructions": cp.async, cp.async.commit_group, cp.async.wait_group,
cp.async.mbarrier.arrive; sm_80+).

Each thread issues its own copies of 4, 8 or 16 bytes; they complete asynchronously. A thread
learns they have landed either through groups (``commit_group`` closes the copies issued so far
into a group; ``wait_group(n)`` waits until at most the n most recent groups are pending) or
through an mbarrier (``cp_async_mbarrier_arrive(bar)``: the mbarrier receives one arrival from
this thread once all its earlier copies have landed). Other threads then need a barrier (a CTA
barrier after ``wait_group``, or waiting on the mbarrier) before reading the data.

Simulator: the source is read at issue and the destination written at the wait or mbarrier
arrival that makes it visible (the latest moment PTX allows), so a missing wait shows up as stale
shared memory; see ``sim/ops_async.py``.
"""
from __future__ import annotations

from ..core.trace import builder
from .mbarrier import Mbarrier
from .operands import operand_error, pointer_operand, static_int

__all__ = ["cp_async", "commit_group", "wait_group", "wait_all", "cp_async_mbarrier_arrive"]


def cp_async(dst, src, nbytes: int = 16, cache: str = None) -> None:
    """Copy ``nbytes`` (static 4, 8 or 16) from global ``src`` to shared ``dst``, asynchronously:
    PTX ``cp.async.cg.shared.global [dst], [src], 16`` (``cache='cg'``: L2 only, 16 bytes; the
    default for 16) or ``cp.async.ca.shared.global [dst], [src], n`` (``cache='ca'``: L1 and L2;
    the default for 4 and 8). ``dst``: a shared ``ws.Pointer`` or an ``SmemArray`` (its first
    element); ``src``: a global ``ws.Pointer`` (e.g. ``tensor.ptr + offset``). Both addresses
    must be ``nbytes``-aligned. Raises OperandError for a bad size, cache or pointer."""
    what = "ws.copy.cp_async()"
    nbytes = static_int(nbytes, f"{what}'s nbytes", (4, 8, 16), "4, 8 or 16 (bytes)",
                        "copy 16 bytes per thread for bandwidth (e.g. 4 f32 or 8 bf16)")
    if cache is None:
        cache = "cg" if nbytes == 16 else "ca"
    if cache not in ("ca", "cg") or (cache == "cg" and nbytes != 16):
        raise operand_error(f"{what}'s cache", cache, "'ca' (4, 8, 16 bytes) or 'cg' (16 bytes)",
                            "use cache='ca' for copies smaller than 16 bytes")
    d = pointer_operand(dst, f"{what}'s destination", "shared")
    s = pointer_operand(src, f"{what}'s source", "global")
    builder(what).cp_async_copy(d.value, s.value, cache, nbytes)


def commit_group() -> None:
    """Close this thread's uncommitted cp.async copies into a group: PTX
    ``cp.async.commit_group`` (an empty group if there are none)."""
    builder("ws.copy.commit_group()").cp_async_commit_group()


def wait_group(n: int = 0) -> None:
    """Wait until at most the ``n`` (static) most recent groups of this thread are pending; all
    older ones have landed: PTX ``cp.async.wait_group n``. ``wait_group(0)`` waits for every
    committed group."""
    what = "ws.copy.wait_group()"
    n = static_int(n, f"{what}'s group count", range(64), "a static int in [0, 64)",
                   "pass the number of groups allowed to stay in flight, e.g. stages - 1")
    builder(what).cp_async_wait_group(n)


def wait_all() -> None:
    """Wait for every cp.async of this thread, committed or not: PTX ``cp.async.wait_all``."""
    builder("ws.copy.wait_all()").cp_async_wait_all()


def cp_async_mbarrier_arrive(bar: Mbarrier, noinc: bool = True) -> None:
    """Make ``bar`` receive an arrival from this thread once all its earlier cp.async copies have
    landed: PTX ``cp.async.mbarrier.arrive.noinc.shared.b64 [bar]``. With ``noinc=True``
    (default) that arrival counts against ``bar.init``'s count (init with the number of
    copying threads); with ``noinc=False`` the pending count is raised first, so the arrival
    only delays the phase until the copies land."""
    what = "ws.copy.cp_async_mbarrier_arrive()"
    if not isinstance(bar, Mbarrier):
        raise operand_error(what, type(bar).__name__, "an Mbarrier (an element of a "
                            "ws.smem.MbarrierArray)", "pass storage.bars[i]")
    if not isinstance(noinc, bool):
        raise operand_error(f"{what}'s noinc", noinc, "a static bool", "pass True or False")
    builder(what).cp_async_mbarrier_arrive(bar.ptr.value, noinc)
