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
    bar_id = op.attrs.get("id", 0)
    threads = op.attrs.get("count")

    def barrier(s, w):
        if w.nactive != w.nlanes:
            raise BarrierError(
                f"bar.sync in divergent code at {where(op)}: {w.nactive} of {w.nlanes} lanes "
                f"active (warp {w.index} of block {w.cta.ctaid}); bar.sync needs the whole warp. "
                "Move the barrier out of the thread-dependent branch or loop.", where=where(op))
        yield BarrierWait(op, bar_id, threads)
    return barrier
