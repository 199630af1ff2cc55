"""nvvm.barrier: bar.sync as a real CTA barrier (PTX ISA 9.7.13.1 bar/barrier).

The arriving warp yields a ``BarrierWait``; the scheduler releases the waiting warps once
``count / 32`` warps (default: all warps of the CTA) have arrived at that barrier id. bar.sync
is ``.aligned``: every thread of the warp must execute it, so arriving with some lanes masked off
by divergent control flow is an error here (undefined behaviour on the GPU).
"""
from __future__ import annotations

from ..errors import BarrierError
from ..ir.core import Operation
from .compiler import where
from .registry import handler
from .scheduler import BarrierWait


@handler("nvvm.barrier", blocking=True)
def _barrier(op: Operation, cx):
    static_id = op.attrs.get("id", 0)
    id_slot = cx.slot(op.operands[0]) if op.operands else None
    threads = op.attrs.get("count")

    def barrier(s, w):
        if w.nactive != w.nlanes:
            raise BarrierError(
                f"bar.sync in divergent code at {where(op)}: {w.nactive} of {w.nlanes} lanes "
                f"active (warp {w.index} of block {w.cta.ctaid}); bar.sync needs the whole warp. "
                "Move the barrier out of the thread-dependent branch or loop.", where=where(op))
        bar_id = static_id if id_slot is None else dynamic_barrier_id(op, s[id_slot], w)
        yield BarrierWait(op, bar_id, threads)
    return barrier


def dynamic_barrier_id(op: Operation, ids, w) -> int:
    """The barrier id of a bar.sync / bar.arrive whose id is a register: the same value in every
    lane of the warp (PTX: the operand must be warp-uniform) and in [0, 16)."""
    ids = ids[:w.nlanes]
    bar_id = int(ids[0])
    if (ids != bar_id).any():
        raise BarrierError(
            f"{op.name} at {where(op)}: the barrier id differs between the lanes of warp "
            f"{w.index} ({sorted(set(int(i) for i in ids))}); it must be warp-uniform. Fix: "
            "compute it from ws.arch.make_warp_uniform(...) (the warp or warpgroup index)",
            where=where(op))
    if not 0 <= bar_id < 16:
        raise BarrierError(
            f"{op.name} at {where(op)}: barrier id {bar_id} in warp {w.index}; named barriers "
            "are numbered 0..15", where=where(op))
    return bar_id
