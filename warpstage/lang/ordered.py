"""Turn-taking between groups of warps with named barriers (``ws.pipeline.OrderedBarrier``).

Warp-specialized kernels with several consumer warpgroups get more out of the tensor cores when
the warpgroups take turns issuing their GEMMs: while warpgroup 0's wgmmas run, warpgroup 1 does
its softmax or epilogue on the CUDA cores, then they swap ("ping-pong"). FlashAttention-3 does
this with one named barrier per warpgroup (its "warp scheduler barrier", Shah et al. 2024, §3.1);
CUTLASS's ping-pong GEMM does it with an ``OrderedSequenceBarrier`` of mbarriers. This one uses
named barriers, which cost no shared memory and complete in the barrier unit::

    turn = ws.pipeline.OrderedBarrier.create(member=wg, members=2, base_id=1)
    for tile in range(n):
        turn.wait()              # my turn: the previous member has issued its GEMMs
        ...                      # issue this member's wgmmas
        turn.arrive()            # the next member's turn
        ...                      # work that overlaps the others' GEMMs (softmax, epilogue)
    turn.finish()                # once, after the last turn (balances the barriers)

Member ``i`` owns named barrier ``base_id + i``; ``wait`` is ``bar.sync base_id + i, 2 T`` and
``arrive`` is ``bar.arrive base_id + (i + 1) % members, 2 T`` (T = ``threads`` per member): each
phase of a member's barrier completes with its own T threads waiting and the previous member's T
threads arriving. ``create`` lets member 0 go first (the last member arrives at barrier
``base_id`` once), so every member must take the same number of turns; ``finish`` makes member 0
wait for the last member's final arrival, so no barrier is left with a phase half arrived when
the CTA exits. PTX ISA 9.7.13.1 (bar.sync / bar.arrive with a register barrier id, which must be
warp-uniform); the ids ``base_id .. base_id + members - 1`` must not be used for anything else.
"""
from __future__ import annotations

from ..core.static import Static
from .operands import operand_error, static_int
from .scalars import Int32, Scalar
from .struct import struct
from .arch import barrier_sync
from .pipeline import _if_then
from .sync import barrier_arrive

__all__ = ["OrderedBarrier"]


@struct
class OrderedBarrier:
    """Turn-taking among ``members`` groups of ``threads`` threads (static), in member order
    0, 1, ..., members - 1, 0, ...; ``member`` is this thread's group, a dynamic warp-uniform
    ``ws.Int32`` (e.g. the consumer warpgroup index). Named barriers ``base_id`` (static, >= 1:
    0 is ``ws.arch.sync_threads``'s) to ``base_id + members - 1``. Build it with ``create``."""

    members: Static[int]
    threads: Static[int]
    base_id: Static[int]
    member: Int32

    @classmethod
    def create(cls, member, members: int, threads: int = 128, base_id: int = 1):
        """The barrier for this thread's ``member`` (dynamic, warp-uniform, in [0, members)),
        with member 0 first: the last member arrives once at member 0's barrier. Call it from
        every thread of every member, before the first ``wait``. OperandError for ``members``
        outside [2, 15], ``threads`` not a multiple of 32 (at most 512), or barrier ids past 15;
        BindingTimeError for a dynamic static argument."""
        what = "ws.pipeline.OrderedBarrier.create()"
        members = static_int(members, f"{what}'s members", range(2, 16), "a static int in [2, 15]",
                             "pass the number of groups taking turns, e.g. 2 consumer warpgroups")
        threads = static_int(threads, f"{what}'s threads", range(32, 513, 32),
                             "a static multiple of 32 in [32, 512]",
                             "pass the threads of one member, e.g. 128 for a warpgroup")
        base_id = static_int(base_id, f"{what}'s base_id", range(1, 17 - members),
                             f"a static int in [1, {16 - members}] (ids base_id .. base_id + "
                             f"{members - 1} must be named barriers 1..15)",
                             "pick ids the kernel uses for nothing else; 0 is sync_threads'")
        if not isinstance(member, (Scalar, int)) or isinstance(member, bool):
            raise operand_error(f"{what}'s member", type(member).__name__,
                                "this thread's group index (a dynamic Int32, warp-uniform)",
                                "pass e.g. ws.arch.make_warp_uniform(tid // 128)")
        turn = cls(members, threads, base_id, member)
        _if_then(turn.member == members - 1, lambda: barrier_arrive(base_id, 2 * threads))
        return turn

    def _next_id(self):
        nxt = self.member + 1
        wrap = Int32(nxt == self.members)
        return self.base_id + nxt - wrap * self.members

    def wait(self) -> None:
        """Wait for this member's turn (``bar.sync base_id + member, 2 threads``): the previous
        member has called ``arrive``."""
        barrier_sync(self.base_id + self.member, 2 * self.threads)

    def arrive(self) -> None:
        """End this member's turn (``bar.arrive``, no waiting): the next member's ``wait``
        passes."""
        barrier_arrive(self._next_id(), 2 * self.threads)

    def finish(self) -> None:
        """After the last turn: member 0 waits for the last member's final ``arrive`` (the
        barriers end with no half-arrived phase); the other members do nothing."""
        _if_then(self.member == 0, lambda: barrier_sync(self.base_id, 2 * self.threads))
