"""Warp collectives, bar.arrive, setmaxnreg, fences, the shared memory base and pointer casts.

Warp-synchronous instructions (shfl.sync, vote.sync, elect.sync) take a static membermask.
The simulator checks the rule PTX states for them: every executing lane must be in the mask, and
every existing lane the mask names must be executing the instruction (on the GPU a named lane
that is not executing makes the instruction wait for it or gives undefined results; the
simulator raises ``BarrierError`` naming the lanes). Lanes past the end of a partial last warp
do not exist and are ignored in the mask.

- nvvm.shfl: PTX's source-lane rule exactly (``shfl.sync``: ``c = ((32 - width) << 8) |
  clamp``; a source lane outside the clamp keeps the lane's own value). A source lane that exists
  in the register vector but does not execute (outside the mask, or past a partial warp) gives
  an undefined value on the GPU; the simulator returns that lane's register.
- nvvm.vote: all / any / uni over the executing lanes' predicates; ballot: bit i set iff lane i
  executes and its predicate is true. The result is the same in every lane.
- nvvm.elect: true in the lowest executing lane (PTX leaves the choice of the leader to the
  hardware; code must not depend on which lane it is).
- nvvm.warp_sync: the membermask check; otherwise a no-op (memory is sequentially consistent and
  a warp's lanes run in lockstep).
- nvvm.barrier_arrive: counts the warp's arrival at the named barrier (as bar.sync does) and
  continues without waiting. bar.arrive is ``.aligned``: the whole warp must execute it.
- nvvm.setmaxnreg: checks that the whole warp executes it and that every warp of a warpgroup
  executes the same sequence of setmaxnreg (action, count) — at the CTA's end, also that no warp
  of the warpgroup skipped one — and that the counts the warpgroups have set add up to at most
  the SM's register file (128 threads x count, summed over warpgroups, <= ``SM_REGISTERS``):
  on the GPU a setmaxnreg.inc past that waits for registers that never come (PTX ISA,
  setmaxnreg: the request blocks until enough registers are available), so the simulator
  raises ``DeadlockError``; otherwise a no-op (the simulator has no register file). A
  warpgroup that has not executed setmaxnreg yet is not counted (its count at launch is
  ptxas' choice), so the check never refuses a split the GPU could run.
- nvvm.fence: a no-op (the simulator's memory is sequentially consistent), except that
  fence.proxy.async tells the race detector (when on) that the warp's generic writes are fenced.
- nvvm.smem_base: address 0 of the CTA's shared memory (shared pointers are byte offsets).
- ptr.cast: the same address.
"""
from __future__ import annotations

import numpy as np

from ..errors import BarrierError, DeadlockError
from ..ir.core import Operation
from ..ir.ops_sync import FULL_MASK
from .compiler import where
from .dtypes import LANES, register_dtype
from .registry import handler

SM_REGISTERS = 65536
"""32-bit registers per SM on sm_80 / sm_90 (CUDA C++ Programming Guide, "Technical
Specifications per Compute Capability"): the most all warpgroups of a CTA can hold together."""
from .ops_sync import dynamic_barrier_id
from .scheduler import barrier_arrive
from .warp import LANE_IDS

__all__ = ["check_members"]

_BITS = (np.uint64(1) << LANE_IDS.astype(np.uint64))


def _member_lanes(mask: int) -> np.ndarray:
    return ((mask >> LANE_IDS.astype(np.int64)) & 1).astype(bool)


def _lane_list(lanes) -> str:
    lanes = np.flatnonzero(lanes).tolist()
    return ", ".join(map(str, lanes[:8])) + (", ..." if len(lanes) > 8 else "")


def check_members(op: Operation, w, members: np.ndarray, what: str) -> None:
    """Raise BarrierError unless the executing lanes of ``w`` are exactly the existing lanes of
    ``members`` (the static membermask as a bool vector)."""
    active = w.mask
    outside = active & ~members
    if np.count_nonzero(outside):
        raise BarrierError(
            f"{what} at {where(op)}: lanes {_lane_list(outside)} of warp {w.index} execute it but "
            f"are not in its membermask {op.attrs.get('mask', FULL_MASK):#010x}; every executing "
            "lane must be in the mask. Fix: add them to the mask, or call it outside the branch "
            "that excludes them.", where=where(op))
    missing = members & ~active & (LANE_IDS < w.nlanes)
    if np.count_nonzero(missing):
        raise BarrierError(
            f"{what} at {where(op)} in divergent code: its membermask "
            f"{op.attrs.get('mask', FULL_MASK):#010x} names lanes {_lane_list(missing)} of warp "
            f"{w.index}, which are not executing it (only lanes {_lane_list(active)} are). On the "
            "GPU it would wait for them or give undefined results. Fix: call it where the whole "
            "warp is converged (outside the thread-dependent branch or loop), or pass the mask "
            "of the lanes that execute it.", where=where(op))


def _require_full_warp(op: Operation, w, what: str) -> None:
    if w.nactive != w.nlanes:
        raise BarrierError(
            f"{what} in divergent code at {where(op)}: {w.nactive} of {w.nlanes} lanes active "
            f"(warp {w.index} of block {w.cta.ctaid}); {what} is .aligned and needs the whole "
            "warp. Move it out of the thread-dependent branch or loop.", where=where(op))


@handler("nvvm.shfl")
def _shfl(op: Operation, cx):
    x, b = cx.slots(op.operands)
    r = cx.slot(op.result)
    mode = op.attrs["mode"]
    width = op.attrs.get("width", 32)
    members = _member_lanes(op.attrs.get("mask", FULL_MASK))
    every_lane = bool(members.all())
    c = ((32 - width) << 8) | (0 if mode == "up" else 0x1F)
    segmask, cval = (c >> 8) & 0x1F, c & 0x1F
    lane = LANE_IDS.astype(np.int64)
    max_lane = (lane & segmask) | (cval & ~segmask)
    min_lane = lane & segmask

    def sources(offset):
        """The lane each lane reads for the offset / lane register ``offset``."""
        bval = offset.astype(np.int64) & 0x1F
        if mode == "up":
            j = lane - bval
            ok = j >= max_lane
        elif mode == "down":
            j = lane + bval
            ok = j <= max_lane
        elif mode == "bfly":
            j = lane ^ bval
            ok = j <= max_lane
        else:
            j = min_lane | (bval & ~segmask)
            ok = j <= max_lane
        return np.where(ok, j, lane)

    # the offset is nearly always a constant, i.e. the same (immutable) register array on every
    # execution: its source lanes are kept with it, compared by identity (the reference held
    # here keeps the array alive, so an equal id is the same array)
    last = [None, None]

    def shfl(s, w):
        if not (every_lane and w.nactive == LANES):   # a full warp under a full mask passes
            check_members(op, w, members, f"shfl.sync.{mode}")
        offset = s[b]
        if offset is not last[0]:
            last[0], last[1] = offset, sources(offset)
        s[r] = s[x][last[1]]
    return shfl


@handler("nvvm.vote")
def _vote(op: Operation, cx):
    p = cx.slot(op.operands[0])
    r = cx.slot(op.result)
    mode = op.attrs["mode"]
    members = _member_lanes(op.attrs.get("mask", FULL_MASK))
    dtype = register_dtype(op.result.type)

    def vote(s, w):
        check_members(op, w, members, f"vote.sync.{mode}")
        active = w.mask
        pred = s[p][active]
        if mode == "all":
            v = bool(pred.all())
        elif mode == "any":
            v = bool(pred.any())
        elif mode == "uni":
            v = bool(pred.all() or not pred.any())
        else:
            v = int(_BITS[active & s[p]].sum())
        s[r] = np.full(LANES, v, dtype)
    return vote


@handler("nvvm.elect")
def _elect(op: Operation, cx):
    r = cx.slot(op.result)
    members = _member_lanes(op.attrs.get("mask", FULL_MASK))

    def elect(s, w):
        check_members(op, w, members, "elect.sync")
        s[r] = LANE_IDS == w.first_active_lane()
    return elect


@handler("nvvm.warp_sync")
def _warp_sync(op: Operation, cx):
    members = _member_lanes(op.attrs.get("mask", FULL_MASK))

    def warp_sync(s, w):
        check_members(op, w, members, "bar.warp.sync")
    return warp_sync


@handler("nvvm.barrier_arrive")
def _barrier_arrive(op: Operation, cx):
    static_id, threads = op.attrs.get("id"), op.attrs["count"]
    id_slot = cx.slot(op.operands[0]) if op.operands else None

    def arrive(s, w):
        _require_full_warp(op, w, "bar.arrive")
        bar_id = static_id if id_slot is None else dynamic_barrier_id(op, s[id_slot], w)
        barrier_arrive(w, op, bar_id, threads)
    return arrive


@handler("nvvm.setmaxnreg")
def _setmaxnreg(op: Operation, cx):
    action, count = op.attrs["action"], op.attrs["count"]

    def setmaxnreg(s, w):
        _require_full_warp(op, w, "setmaxnreg")
        calls = w.cta.ext.get("setmaxnreg")
        if calls is None:
            calls = w.cta.ext["setmaxnreg"] = {}
            w.cta.ext.setdefault("at_exit", []).append(lambda: _whole_warpgroups(w.cta, calls))
        mine = calls.setdefault(w.index, [])
        mine.append((action, count, op))
        k = len(mine) - 1
        group = w.index // 4
        for other in range(group * 4, group * 4 + 4):
            theirs = calls.get(other, [])
            if other != w.index and len(theirs) > k and theirs[k][:2] != (action, count):
                a, n, other_op = theirs[k]
                raise BarrierError(
                    f"setmaxnreg at {where(op)}: warp {w.index} executes setmaxnreg.{action} "
                    f"{count} but warp {other} of the same warpgroup {group} executed "
                    f"setmaxnreg.{a} {n} at {where(other_op)}; every warp of a warpgroup must "
                    "execute the same setmaxnreg. Fix: branch on the warpgroup index "
                    "(ws.arch.warpgroup_idx()), not on the warp index.", where=where(op))
        _check_register_pool(w.cta, calls, op, action, count)
    return setmaxnreg


def _check_register_pool(cta, calls, op, action, count) -> None:
    """DeadlockError when the warpgroups' latest setmaxnreg counts need more registers than an
    SM has (128 threads per warpgroup)."""
    latest = {}
    for warp, seq in calls.items():
        latest[warp // 4] = seq[-1][1]
    need = 128 * sum(latest.values())
    if need > SM_REGISTERS:
        split = " + ".join(f"{n} (warpgroup {g})" for g, n in sorted(latest.items()))
        raise DeadlockError(
            f"setmaxnreg.{action} {count} at {where(op)}: the warpgroups' register counts add "
            f"up to 128 x ({split}) = {need} registers, more than an SM's {SM_REGISTERS}; on the "
            "GPU a setmaxnreg.inc of this CTA waits for them forever. Fix: lower the counts so that 128 "
            f"x their sum is at most {SM_REGISTERS} (e.g. producer 40, two consumers 232).",
            where=where(op))


def _whole_warpgroups(cta, calls) -> None:
    """At the CTA's end: every warp of a warpgroup that executed setmaxnreg executed it as many
    times (a warp that skipped it leaves the warpgroup's register budget undefined on the GPU:
    PTX ISA, setmaxnreg: "must be executed by all warps in a warpgroup")."""
    for group in sorted({i // 4 for i in calls}):
        members = [i for i in range(group * 4, group * 4 + 4) if i < cta.nwarps]
        counts = {i: len(calls.get(i, ())) for i in members}
        if len(set(counts.values())) > 1:
            most = max(counts, key=counts.get)
            action, count, op = calls[most][len(calls.get(min(counts, key=counts.get), ()))]
            missing = [i for i in members if counts[i] < counts[most]]
            raise BarrierError(
                f"setmaxnreg at {where(op)}: warp(s) {missing} of warpgroup {group} never "
                f"executed this setmaxnreg.{action} {count}, which warp {most} executed; every "
                "warp of a warpgroup must execute the same setmaxnreg. Fix: branch on the "
                "warpgroup index (ws.arch.warpgroup_idx()), not on the warp index.",
                where=where(op))


@handler("nvvm.fence")
def _fence(op: Operation, cx):
    if op.attrs.get("kind") not in ("proxy.async", "proxy.async.shared::cta"):
        return None   # compiles to nothing

    def fence_proxy_async(s, w):       # the race detector tracks generic writes not yet fenced
        if w.cta.races is not None:
            w.cta.races.proxy_fence(w.index)
    return fence_proxy_async


@handler("nvvm.smem_base")
def _smem_base(op: Operation, cx):
    r = cx.slot(op.result)
    zero = np.zeros(LANES, np.int64)
    zero.flags.writeable = False

    def smem_base(s, w):
        s[r] = zero
    return smem_base


@handler("ptr.cast")
def _ptr_cast(op: Operation, cx):
    p = cx.slot(op.operands[0])
    r = cx.slot(op.result)

    def ptr_cast(s, w):
        s[r] = s[p]
    return ptr_cast
